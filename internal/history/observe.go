package history

import "slices"

// Tombstone is the state a delete leaves with tombstone deletes: null to
// reads, but present, as [k, null], to scans and iterators. It is a null
// Value with N set, so it differs from NullValue (absence) under ==.
var Tombstone = Value{Kind: Null, N: 1}

// Installed returns the state write or delete op leaves at its key: the
// value written (NullValue for a write of null: the key is absent), or,
// for a delete, NullValue with physical deletes and Tombstone with
// tombstone deletes.
func (h *History) Installed(op Op) Value {
	if op.Kind == Delete {
		if h.Header.Deletes == TombstoneDeletes {
			return Tombstone
		}
		return NullValue
	}
	return op.Value
}

// Seen is what an observation found at its key.
type Seen uint8

// The observations a read, scan or iterator makes of a key.
const (
	// SawValue: the value in Observation.Value.
	SawValue Seen = iota
	// SawAbsent: the key was absent — a scan or iterator did not return a
	// key of its range that it claims, or (physical deletes) a read
	// returned null.
	SawAbsent
	// SawTombstone: a scan or iterator returned [k, null] (a tombstone).
	SawTombstone
	// SawNull: a read returned null with tombstone deletes: the key was
	// absent or held a tombstone.
	SawNull
)

// OwnReads is a read-your-own-writes policy: what a read of a key its
// transaction wrote before may return (Boomslang's Case 5).
type OwnReads uint8

// The policies.
const (
	// MustReadOwn: the transaction's own last write (most databases).
	MustReadOwn OwnReads = iota
	// ReadsExternal: reads never see the transaction's own writes, only
	// other transactions' (stores that buffer writes until commit).
	ReadsExternal
	// ReadsEither: the own last write, or else what another transaction
	// wrote.
	ReadsEither
)

// String is the policy's name on the command line.
func (o OwnReads) String() string {
	switch o {
	case ReadsExternal:
		return "external"
	case ReadsEither:
		return "either"
	}
	return "own"
}

// ParseOwnReads parses a policy name: own, external or either.
func ParseOwnReads(s string) (OwnReads, bool) {
	for _, o := range []OwnReads{MustReadOwn, ReadsExternal, ReadsEither} {
		if o.String() == s {
			return o, true
		}
	}
	return MustReadOwn, false
}

// OwnReads returns the index's read-your-own-writes policy.
func (ix *Index) OwnReads() OwnReads { return ix.own }

// Observation is one key a read, scan or iterator observed.
type Observation struct {
	// Op is the operation's index in its transaction.
	Op  int32
	Key KeyID
	// Seen and Value say what was observed.
	Seen  Seen
	Value Value
	// Pred says the observation comes from a scan or iterator (a predicate
	// read: its dependencies are pwr and prw).
	Pred bool
	// Own is the index of the transaction's last write or delete of the key
	// before the operation, or -1 when the observation is external: it
	// observes other transactions or the initial state.
	Own int32
	// txn is the observing transaction (for the index's precomputed
	// resolution of plain reads).
	txn TxnID
}

// Agrees reports whether state v (a value, NullValue for absence, or
// Tombstone) is what o observed.
func (o Observation) Agrees(v Value) bool {
	switch o.Seen {
	case SawAbsent:
		return v == NullValue
	case SawTombstone:
		return v == Tombstone
	case SawNull:
		return v.IsNull()
	}
	return v == o.Value
}

// indexRangeKeys lists, in key order, the keys that are written, deleted or
// initially present; NewIndex calls it when the history has a scan or
// iterator.
func (ix *Index) indexRangeKeys() {
	h := ix.h
	has := make([]bool, len(h.Keys))
	for _, r := range ix.refs {
		has[h.Txns[r.Txn].Ops[r.Op].Key] = true
	}
	for k := range h.Header.Initial.Values {
		if k >= 0 && int(k) < len(has) {
			has[k] = true
		}
	}
	ix.rangeKeys = make([]KeyID, 0, len(h.Keys))
	for k, ok := range has {
		if ok {
			ix.rangeKeys = append(ix.rangeKeys, KeyID(k))
		}
	}
	slices.SortFunc(ix.rangeKeys, func(a, b KeyID) int { return Compare(h.Keys[a], h.Keys[b]) })
}

// Observations calls f, in program order, for every key t's reads, scans and
// iterators observed. A read observes its key. A scan observes every key of
// its range that some transaction writes or deletes or the initial state
// holds: the returned ones with their values (SawTombstone for [k, null]),
// the others as absent. An iterator observes the same up to its last
// returned key; nothing after it is claimed. An observation that follows
// t's own write or delete of the key is internal (Own ≥ 0).
func (ix *Index) Observations(t TxnID, f func(o Observation)) { ix.observe(t, ix.own, f) }

// observe is Observations under read-your-own-writes policy policy.
func (ix *Index) observe(t TxnID, policy OwnReads, f func(o Observation)) {
	h := ix.h
	ops := h.Txns[t].Ops
	var small [8]struct {
		k  KeyID
		at int32
	}
	own := small[:0]
	ownOf := func(k KeyID) int32 {
		for i := len(own) - 1; i >= 0; i-- {
			if own[i].k == k {
				return own[i].at
			}
		}
		return -1
	}
	tomb := h.Header.Deletes == TombstoneDeletes
	// apply applies the read-your-own-writes policy: an observation after
	// an own write is internal under MustReadOwn, external under
	// ReadsExternal, and under ReadsEither internal when it agrees with
	// the own write.
	apply := func(o Observation) Observation {
		switch {
		case o.Own < 0 || policy == MustReadOwn:
		case policy == ReadsExternal:
			o.Own = -1
		case !o.Agrees(h.Installed(ops[o.Own])):
			o.Own = -1
		}
		return o
	}
	for j, op := range ops {
		switch op.Kind {
		case Write, Delete, Append:
			own = append(own, struct {
				k  KeyID
				at int32
			}{op.Key, int32(j)})
		case Read:
			o := Observation{Op: int32(j), Key: op.Key, Seen: SawValue, Value: op.Value, Own: ownOf(op.Key), txn: t}
			if op.Value.IsNull() {
				o.Seen, o.Value = SawAbsent, NullValue
				if tomb {
					o.Seen = SawNull
				}
			}
			f(apply(o))
		case Scan, Iter:
			r := op.Range
			if r == nil {
				continue
			}
			pairs := r.Pairs
			if op.Kind == Iter && len(pairs) == 0 {
				continue // an iterator never advanced claims nothing
			}
			emit := func(k KeyID) {
				o := Observation{Op: int32(j), Key: k, Seen: SawAbsent, Pred: true, Own: ownOf(k), txn: t}
				if len(pairs) > 0 && pairs[0].Key == k {
					o.Seen, o.Value = SawValue, pairs[0].Value
					if o.Value.IsNull() {
						o.Seen, o.Value = SawTombstone, NullValue
					}
					pairs = pairs[1:]
				}
				f(apply(o))
			}
			keys := ix.rangeKeys
			lo, _ := slices.BinarySearchFunc(keys, r.Lo, func(k KeyID, v Value) int { return Compare(h.Keys[k], v) })
			var last Value
			if op.Kind == Iter {
				last = h.Keys[r.Pairs[len(r.Pairs)-1].Key]
			}
			for _, k := range keys[lo:] {
				key := h.Keys[k]
				if !r.HiOpen && Compare(key, r.Hi) >= 0 || op.Kind == Iter && Compare(key, last) > 0 {
					break
				}
				// Returned keys nobody writes come before this one.
				for len(pairs) > 0 && Compare(h.Keys[pairs[0].Key], key) < 0 {
					emit(pairs[0].Key)
				}
				emit(k)
			}
			for len(pairs) > 0 {
				emit(pairs[0].Key)
			}
		}
	}
}

// InitiallySeen reports whether the initial state agrees with external
// observation o.
func (ix *Index) InitiallySeen(o Observation) bool {
	if o.Seen == SawValue {
		return ix.WrittenInitially(o.Key, o.Value)
	}
	return o.Seen != SawTombstone && ix.h.InitialValue(o.Key).IsNull()
}

// Sources calls f with the id of every write or delete whose state agrees
// with observation o, in file order within each state, until f returns
// false. The initial state is not included (see InitiallySeen); writes that
// are not final in their transaction and the observer's own writes are,
// for the caller to judge.
func (ix *Index) Sources(o Observation, f func(id int32) bool) {
	first := func(v Value) (int32, bool) {
		if !o.Pred && o.Seen != SawNull && o.txn >= 0 && int(o.txn) < len(ix.h.Txns) {
			// A plain read: resolved once already, in resolveReads.
			if p := ix.readFrom[ix.opStart[o.txn]+o.Op]; p != NotExternal {
				return p, p >= 0
			}
		}
		return ix.lookup(o.Key, v)
	}
	chain := func(v Value) bool {
		p, ok := first(v)
		for ; ok && p >= 0; p = ix.next[p] {
			if !f(p) {
				return false
			}
		}
		return true
	}
	switch o.Seen {
	case SawValue:
		chain(o.Value)
	case SawAbsent:
		chain(NullValue)
	case SawTombstone:
		chain(Tombstone)
	case SawNull:
		if chain(NullValue) {
			chain(Tombstone)
		}
	}
}
