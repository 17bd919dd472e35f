package history

import (
	"runtime"
	"sync"
)

// OpRef names one operation: a transaction and the operation's position.
type OpRef struct {
	Txn TxnID
	Op  int32
}

// writeKey is a (key, value) pair of a write whose value is not an
// integer; intKey the common case, hashed without strings.
type writeKey struct {
	k KeyID
	v Value
}

type intKey struct {
	k KeyID
	n int64
}

// What ReadFrom answers besides a write id.
const (
	// NotExternal: the operation is not a plain read, or it follows the
	// transaction's own write of the key.
	NotExternal int32 = -1
	// FromNothing: no transaction wrote the value read (it may still be
	// the initial value; see WrittenInitially).
	FromNothing int32 = -2
)

// Index answers the questions every checker asks of a history: which write
// each read observed, which writes are final in their transaction, which
// transactions took effect. It resolves every read once, with one hash
// lookup. It indexes writes and deletes (a delete installs NullValue, or
// Tombstone with tombstone deletes) and resolves plain reads; Observations
// and Sources give every key that reads, scans and iterators observed with
// its candidate writes. Appends and list reads are left to the checkers that
// handle them.
type Index struct {
	h *History
	// ints and others map (key, value) to the first write in refs; next
	// chains further writes of the same pair.
	packed *packedTable // integer values that pack with their key
	ints   map[intKey]int32
	others map[writeKey]int32
	refs   []OpRef
	next   []int32
	// final marks writes that are the last write of their key in their
	// transaction, by write id.
	final []bool
	// opStart[t] is where transaction t's operations start in readFrom.
	opStart []int32
	// readFrom holds, per operation, the first write of the value an
	// external read returned, FromNothing or NotExternal.
	readFrom []int32
	// effective[t] says transaction t took effect: committed, or unknown
	// and observed by an effective reader.
	effective []bool
	unique    bool
	dup       writeKey
	dupRefs   [2]OpRef
	// own is the read-your-own-writes policy of Observations.
	own OwnReads
	// rangeKeys are, in key order, the keys a scan or iterator may find
	// present (written, deleted or initially present); nil when the
	// history has no range operation.
	rangeKeys []KeyID
}

// NewIndex indexes h's writes, resolves every read, and decides which
// unknown transactions took effect (an unknown transaction took effect
// exactly when a transaction that took effect read one of its writes,
// unambiguously).
func NewIndex(h *History) *Index { return NewIndexWith(h, MustReadOwn) }

// NewIndexWith is NewIndex under a read-your-own-writes policy.
func NewIndexWith(h *History, own OwnReads) *Index {
	nw, nops := 0, 0
	for i := range h.Txns {
		nops += len(h.Txns[i].Ops)
		for _, op := range h.Txns[i].Ops {
			if op.Kind == Write || op.Kind == Delete {
				nw++
			}
		}
	}
	ix := &Index{
		h:         h,
		packed:    newPackedTable(nw),
		refs:      make([]OpRef, 0, nw),
		next:      make([]int32, 0, nw),
		final:     make([]bool, 0, nw),
		opStart:   make([]int32, len(h.Txns)+1),
		readFrom:  make([]int32, nops),
		effective: make([]bool, len(h.Txns)),
		unique:    true,
		own:       own,
	}
	ix.indexWrites()
	ix.resolveReads()
	ix.indexRangeKeys()
	ix.resolveEffective()
	return ix
}

// pack packs key k and integer n into one word when k < 2^24 - 1 and
// 0 <= n < 2^40, the common case, so that the table hashes one word (never
// all ones: packedTable stores words plus one).
func pack(k KeyID, n int64) (uint64, bool) {
	if k < 0 || k >= 1<<24-1 || n < 0 || n >= 1<<40 {
		return 0, false
	}
	return uint64(k)<<40 | uint64(n), true
}

func (ix *Index) lookup(k KeyID, v Value) (int32, bool) {
	if v.Kind == Int {
		if w, ok := pack(k, v.N); ok {
			return ix.packed.get(w)
		}
		p, ok := ix.ints[intKey{k, v.N}]
		return p, ok
	}
	p, ok := ix.others[writeKey{k, v}]
	return p, ok
}

// lookupOrInsert returns the id stored for (k, v), or stores id and
// reports false.
func (ix *Index) lookupOrInsert(k KeyID, v Value, id int32) (int32, bool) {
	if v.Kind == Int {
		if w, ok := pack(k, v.N); ok {
			return ix.packed.putIfAbsent(w, id)
		}
	}
	if f, ok := ix.lookup(k, v); ok {
		return f, true
	}
	ix.insert(k, v, id)
	return 0, false
}

func (ix *Index) insert(k KeyID, v Value, id int32) {
	if v.Kind == Int {
		if w, ok := pack(k, v.N); ok {
			ix.packed.put(w, id)
			return
		}
		if ix.ints == nil {
			ix.ints = make(map[intKey]int32)
		}
		ix.ints[intKey{k, v.N}] = id
		return
	}
	if ix.others == nil {
		ix.others = make(map[writeKey]int32)
	}
	ix.others[writeKey{k, v}] = id
}

func (ix *Index) indexWrites() {
	h := ix.h
	var last []KeyID // keys written so far in the transaction, by write
	var lastID []int32
	pos := int32(0)
	for i := range h.Txns {
		t := &h.Txns[i]
		ix.opStart[i] = pos
		pos += int32(len(t.Ops))
		last, lastID = last[:0], lastID[:0]
		for j, op := range t.Ops {
			if op.Kind != Write && op.Kind != Delete {
				continue
			}
			v := h.Installed(op)
			id := int32(len(ix.refs))
			ref := OpRef{Txn: TxnID(i), Op: int32(j)}
			ix.refs = append(ix.refs, ref)
			ix.next = append(ix.next, -1)
			ix.final = append(ix.final, true)
			for n, k := range last {
				if k == op.Key && ix.final[lastID[n]] {
					ix.final[lastID[n]] = false
				}
			}
			last, lastID = append(last, op.Key), append(lastID, id)
			f, seen := ix.lookupOrInsert(op.Key, v, id)
			if !seen {
				if ix.unique && !v.IsNull() && ix.WrittenInitially(op.Key, v) {
					ix.unique, ix.dup, ix.dupRefs = false, writeKey{op.Key, v}, [2]OpRef{{Txn: Init, Op: -1}, ref}
				}
				continue
			}
			// Deletes and writes of null repeat absence, not a value.
			if ix.unique && !v.IsNull() {
				ix.unique, ix.dup, ix.dupRefs = false, writeKey{op.Key, v}, [2]OpRef{ix.refs[f], ref}
			}
			for ix.next[f] >= 0 {
				f = ix.next[f]
			}
			ix.next[f] = id
		}
	}
	ix.opStart[len(h.Txns)] = pos
}

// parallelReads is how many transactions make resolveReads split its work
// across the processors: each part only looks the writes up and fills its
// own transactions' entries.
const parallelReads = 1 << 16

// resolveReads finds, for every read not preceded by its transaction's own
// write of the key, the first write of the value it returned.
func (ix *Index) resolveReads() {
	n := len(ix.h.Txns)
	parts := min(runtime.GOMAXPROCS(0), 8)
	if n < parallelReads || parts < 2 {
		ix.resolveReadsOf(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { ix.resolveReadsOf(n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
}

// resolveReadsOf is resolveReads for transactions lo to hi.
func (ix *Index) resolveReadsOf(lo, hi int) {
	h := ix.h
	var written map[KeyID]bool
	for i := lo; i < hi; i++ {
		ops := h.Txns[i].Ops
		base := ix.opStart[i]
		big := len(ops) > 16
		if big {
			if written == nil {
				written = make(map[KeyID]bool)
			}
			clear(written)
		}
		for j, op := range ops {
			ix.readFrom[base+int32(j)] = NotExternal
			if op.Kind.IsWrite() {
				if big {
					written[op.Key] = true
				}
				continue
			}
			if op.Kind != Read {
				continue
			}
			if big && written[op.Key] || !big && ownWriteBefore(ops[:j], op.Key) {
				continue
			}
			if p, ok := ix.lookup(op.Key, op.Value); ok {
				ix.readFrom[base+int32(j)] = p
			} else {
				ix.readFrom[base+int32(j)] = FromNothing
			}
		}
	}
}

func ownWriteBefore(ops []Op, k KeyID) bool {
	for _, p := range ops {
		if p.Kind.IsWrite() && p.Key == k {
			return true
		}
	}
	return false
}

// resolveEffective marks committed transactions, then unknown ones that an
// effective transaction observed, to a fixpoint.
func (ix *Index) resolveEffective() {
	h := ix.h
	var work []TxnID
	for i := range h.Txns {
		if h.Txns[i].Status == Committed {
			ix.effective[i] = true
			work = append(work, TxnID(i))
		}
	}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		ix.Observations(t, func(o Observation) {
			w, ok := ix.soleSource(t, o)
			if !ok || w.Txn == t || ix.effective[w.Txn] || h.Txns[w.Txn].Status != Unknown {
				return
			}
			ix.effective[w.Txn] = true
			work = append(work, w.Txn)
		})
	}
}

// soleSource returns the write that external observation o of t saw when
// exactly one write (and not the initial state) can have served it.
func (ix *Index) soleSource(t TxnID, o Observation) (OpRef, bool) {
	if o.Own >= 0 || ix.InitiallySeen(o) {
		return OpRef{}, false
	}
	var sole OpRef
	n := 0
	ix.Sources(o, func(id int32) bool {
		n++
		sole = ix.refs[id]
		return n < 2
	})
	return sole, n == 1
}

// ReadFrom returns, for operation j of transaction t, the first write of the
// value it read (a write id), FromNothing when no transaction wrote it, or
// NotExternal when it is not a read that observes other transactions.
// Further writes of the same value follow through NextWrite.
func (ix *Index) ReadFrom(t TxnID, j int) int32 {
	return ix.readFrom[ix.opStart[t]+int32(j)]
}

// NextWrite returns the next write of the same value to the same key as
// write id, or -1.
func (ix *Index) NextWrite(id int32) int32 { return ix.next[id] }

// ExternalReads calls f for each plain read of t that is not preceded in t
// by t's own write of the key: the reads that observe another transaction.
func (ix *Index) ExternalReads(t TxnID, f func(op int, o Op)) {
	ops := ix.h.Txns[t].Ops
	base := ix.opStart[t]
	for j, op := range ops {
		if ix.readFrom[base+int32(j)] != NotExternal {
			f(j, op)
		}
	}
}

// Writers calls f for every write of v to k, in file order (the initial
// transaction is not included; see WrittenInitially).
func (ix *Index) Writers(k KeyID, v Value, f func(w OpRef, final bool)) {
	p, ok := ix.lookup(k, v)
	if !ok {
		return
	}
	for ; p >= 0; p = ix.next[p] {
		f(ix.refs[p], ix.final[p])
	}
}

// SoleWriter returns the one write of v to k when there is exactly one and
// the initial state does not hold v at k.
func (ix *Index) SoleWriter(k KeyID, v Value) (OpRef, bool) {
	p, ok := ix.lookup(k, v)
	if !ok || ix.next[p] >= 0 || ix.WrittenInitially(k, v) {
		return OpRef{}, false
	}
	return ix.refs[p], true
}

// WrittenInitially reports whether the initial state holds v at k (null for
// keys the initial state does not name).
func (ix *Index) WrittenInitially(k KeyID, v Value) bool {
	if len(ix.h.Header.Initial.Values) == 0 {
		return v.Kind == Null
	}
	return ix.h.InitialValue(k) == v
}

// Effective reports whether t took effect: committed, or unknown and
// observed.
func (ix *Index) Effective(t TxnID) bool {
	return t == Init || ix.effective[t]
}

// Unique reports whether no two writes (counting the initial state's named
// values) put the same value at the same key.
func (ix *Index) Unique() bool { return ix.unique }

// Duplicate returns the first duplicate write found when Unique is false:
// the key, the value and two writes of it (the first may be Init).
func (ix *Index) Duplicate() (KeyID, Value, [2]OpRef) { return ix.dup.k, ix.dup.v, ix.dupRefs }

// NumWrites returns how many writes and deletes the history has; write ids
// run from 0 to NumWrites()-1 in file order.
func (ix *Index) NumWrites() int { return len(ix.refs) }

// FirstWrite returns the id of the first write of v to k (in a history
// with unique values, the only one).
func (ix *Index) FirstWrite(k KeyID, v Value) (int32, bool) { return ix.lookup(k, v) }

// WriteRef returns the operation of write id.
func (ix *Index) WriteRef(id int32) OpRef { return ix.refs[id] }

// WriteIsFinal reports whether write id is the last write or delete of its
// key in its transaction.
func (ix *Index) WriteIsFinal(id int32) bool { return ix.final[id] }

// History returns the indexed history.
func (ix *Index) History() *History { return ix.h }
