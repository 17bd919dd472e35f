// Package checktest holds the random histories the checkers' differential
// tests share, each shaped to provoke one kind of checker, and the naive
// timestamp oracle the timestamp checkers' tests are held to.
package checktest

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
)

// skeleton returns an empty history with sessions 0..sessions-1 and keys
// 0..keys-1, and the keys' ids.
func skeleton(sessions, keys int) (*history.History, []history.KeyID) {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.IntValue(int64(k)))
	}
	return h, key
}

// MT builds a small random read-modify-write history with unique
// values: each transaction touches one or two keys, reads each (from the
// initial state or any write of the key, occasionally from nowhere) and
// may overwrite it; some transactions abort or end unknown; instants are
// random and may overlap.
func MT(r *rand.Rand, txns, keys, sessions int) *history.History {
	h, key := skeleton(sessions, keys)
	h.Header.UniqueValues = true
	type plan struct {
		keys  []int
		write []bool
		twice bool
	}
	plans := make([]plan, txns)
	written := make([][]int64, keys) // values written per key
	next := int64(1)
	for i := range plans {
		p := &plans[i]
		p.keys = []int{r.IntN(keys)}
		if r.IntN(2) == 0 && keys > 1 {
			if k := r.IntN(keys); k != p.keys[0] {
				p.keys = append(p.keys, k)
			}
		}
		for _, k := range p.keys {
			w := r.IntN(3) > 0
			p.write = append(p.write, w)
			if w {
				written[k] = append(written[k], next)
				next++
			}
		}
		p.twice = len(p.keys) == 1 && !p.write[0] && r.IntN(6) == 0
	}
	pick := func(k int) history.Value {
		n := len(written[k])
		switch x := r.IntN(n + 8); {
		case x == 0:
			return history.IntValue(999) // thin air, rarely
		case x <= 3 || n == 0:
			return history.NullValue
		default:
			return history.IntValue(written[k][r.IntN(n)])
		}
	}
	cursor := make([]int, keys)
	for i, p := range plans {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasTime: true}
		t.Begin = int64(r.IntN(20))
		t.End = t.Begin + int64(r.IntN(10))
		switch r.IntN(12) {
		case 0:
			t.Status = history.Aborted
		case 1:
			t.Status = history.Unknown
		}
		for j, k := range p.keys {
			t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k], Value: pick(k)})
			if p.twice {
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k], Value: pick(k)})
			}
			if p.write[j] {
				v := written[k][cursor[k]]
				cursor[k]++
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: history.IntValue(v)})
			}
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// LWT builds single-key compare-and-set histories: links that read a
// value and write a fresh one, and reads alone.
func LWT(r *rand.Rand, txns int) *history.History {
	h := history.New()
	h.Sessions = []history.Value{history.IntValue(0)}
	x := h.Key(history.StringValue("x"))
	var values []int64
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(len(h.Sessions)), HasTime: true}
		h.Sessions = append(h.Sessions, history.IntValue(int64(i+1)))
		t.Begin = int64(r.IntN(30))
		t.End = t.Begin + int64(r.IntN(8))
		read := history.NullValue
		if len(values) > 0 && r.IntN(4) > 0 {
			read = history.IntValue(values[r.IntN(len(values))])
		}
		t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: x, Value: read})
		if r.IntN(3) > 0 {
			values = append(values, next)
			t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: x, Value: history.IntValue(next)})
			next++
		}
		if r.IntN(15) == 0 {
			t.Status = history.Unknown
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// RepeatedRW builds small read/write histories with blind writes and values
// drawn from a tiny domain, so that values repeat.
func RepeatedRW(r *rand.Rand, txns, keys int) *history.History {
	h := history.New()
	for s := range 3 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(3))}
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(3) {
			k := h.Key(history.IntValue(int64(r.IntN(keys))))
			v := history.IntValue(int64(r.IntN(3)))
			if r.IntN(4) == 0 {
				v = history.NullValue
			}
			kind := history.Read
			if r.IntN(2) == 0 && !v.IsNull() {
				kind = history.Write
			}
			t.Ops = append(t.Ops, history.Op{Kind: kind, Key: k, Value: v})
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// UniqueRW builds a small history of reads and blind writes with
// unique values over a few keys and sessions: each read returns the
// initial state or the value of some write of its key (any, earlier or
// later in the file), so that the axiomatic levels are violated in many
// ways; some transactions abort or end unknown.
func UniqueRW(r *rand.Rand, txns, keys, sessions int) *history.History {
	h, key := skeleton(sessions, keys)
	h.Header.UniqueValues = true
	type op struct {
		write bool
		k     int
	}
	plans := make([][]op, txns)
	written := make([][]int64, keys)
	next := int64(1)
	for i := range plans {
		for range 1 + r.IntN(4) {
			o := op{write: r.IntN(5) < 2, k: r.IntN(keys)}
			if o.write {
				written[o.k] = append(written[o.k], next)
				next++
			}
			plans[i] = append(plans[i], o)
		}
	}
	cursor := make([]int, keys)
	for i, p := range plans {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions))}
		switch r.IntN(14) {
		case 0:
			t.Status = history.Aborted
		case 1:
			t.Status = history.Unknown
		}
		for _, o := range p {
			if o.write {
				v := written[o.k][cursor[o.k]]
				cursor[o.k]++
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[o.k], Value: history.IntValue(v)})
				continue
			}
			v := history.NullValue
			if n := len(written[o.k]); n > 0 && r.IntN(4) > 0 {
				v = history.IntValue(written[o.k][r.IntN(n)])
			}
			t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[o.k], Value: v})
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// Range builds a small history of reads, writes, deletes, scans and
// iterators over integer keys, with values from a tiny domain. Each
// transaction runs on a snapshot of a recent committed state (so some
// histories hold at SI or SER and some do not) with its own writes
// visible to its later operations; now and then one observation comes from
// another version of the key instead, or returns any value of the domain
// (perhaps one written later), or a scan drops a key, so that
// plenty of histories violate every level. Some transactions abort or end
// unknown; instants overlap at random.
func Range(r *rand.Rand, txns, keys int, tombstones bool) *history.History {
	h := history.New()
	if tombstones {
		h.Header.Deletes = history.TombstoneDeletes
	}
	for s := range 3 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	ids := make([]history.KeyID, keys)
	for k := range ids {
		ids[k] = h.Key(history.IntValue(int64(k)))
	}
	deleted := history.NullValue
	if tombstones {
		deleted = history.Tombstone
	}
	// states[i] is the state after i commits; versions[k] every state key k
	// has held.
	states := [][]history.Value{make([]history.Value, keys)}
	versions := make([][]history.Value, keys)
	for k := range versions {
		versions[k] = []history.Value{history.NullValue}
	}
	present := func(v history.Value) bool { return !v.IsNull() || v == history.Tombstone }
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(3)), HasTime: true}
		t.Begin = int64(r.IntN(20))
		t.End = t.Begin + int64(r.IntN(10))
		snap := states[max(0, len(states)-1-r.IntN(3))]
		view := append([]history.Value(nil), snap...)
		see := func(k int) history.Value {
			switch r.IntN(20) {
			case 0:
				vs := versions[k]
				return vs[r.IntN(len(vs))]
			case 1:
				// Any value of the domain: perhaps one a later
				// transaction writes (circular information flow).
				return history.IntValue(int64(1 + r.IntN(3)))
			}
			return view[k]
		}
		for range 1 + r.IntN(3) {
			k := r.IntN(keys)
			switch x := r.IntN(10); {
			case x < 3:
				v := see(k)
				if v == history.Tombstone {
					v = history.NullValue
				}
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: ids[k], Value: v})
			case x < 6:
				v := history.IntValue(int64(1 + r.IntN(3)))
				view[k] = v
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: ids[k], Value: v})
			case x < 7:
				view[k] = deleted
				t.Ops = append(t.Ops, history.Op{Kind: history.Delete, Key: ids[k]})
			default:
				lo := r.IntN(keys)
				hi := lo + 1 + r.IntN(keys-lo)
				rg := &history.Range{Lo: history.IntValue(int64(lo)), Hi: history.IntValue(int64(hi))}
				if r.IntN(4) == 0 {
					rg.HiOpen, rg.Hi, hi = true, history.NullValue, keys
				}
				kind, limit := history.Scan, keys
				if x == 9 {
					kind, limit = history.Iter, 1+r.IntN(2)
				}
				for q := lo; q < hi && len(rg.Pairs) < limit; q++ {
					v := see(q)
					if !present(v) || r.IntN(20) == 0 {
						continue
					}
					if v == history.Tombstone {
						v = history.NullValue
					}
					rg.Pairs = append(rg.Pairs, history.KV{Key: ids[q], Value: v})
				}
				t.Ops = append(t.Ops, history.Op{Kind: kind, Key: history.NoKey, Range: rg})
			}
		}
		switch r.IntN(10) {
		case 0:
			t.Status = history.Aborted
		case 1:
			t.Status = history.Unknown
		}
		if t.Status != history.Aborted && (t.Status == history.Committed || r.IntN(2) == 0) {
			next := append([]history.Value(nil), states[len(states)-1]...)
			for _, op := range t.Ops {
				if op.Kind == history.Write || op.Kind == history.Delete {
					v := h.Installed(op)
					next[op.Key] = v
					versions[op.Key] = append(versions[op.Key], v)
				}
			}
			states = append(states, next)
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// Register builds a small register history as Jepsen's register
// tests make them: sessions (processes) that each run operations one after
// another — reads, blind writes and compare-and-sets ([r k a, w k b]) —
// with overlapping and touching intervals across sessions and values from
// a tiny domain, so that they repeat. A simulated register runs them at a
// random instant within each interval: reads return what it holds, a
// compare-and-set whose expected value it does not hold failed (aborted,
// as the knossos reader records a failed one), and a write or
// compare-and-set of unknown outcome (last in its session, as a Jepsen
// process that got :info is retired) takes effect or not. Then, half the
// time, a committed read's value is changed: many such histories are
// violations, and the others are not. With keys > 1 the operations spread over that many
// registers.
func Register(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	ks := make([]history.KeyID, keys)
	for i := range ks {
		ks[i] = h.Key(history.StringValue(string(rune('x' + i))))
	}
	clock := make([]int64, sessions)
	done := make([]bool, sessions)
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
		clock[s] = int64(r.IntN(6))
	}
	value := func() history.Value { return history.IntValue(int64(r.IntN(3))) }
	type step struct {
		t  int
		at int64
	}
	var steps []step
	for i := 0; i < txns; i++ {
		s := r.IntN(sessions)
		if done[s] {
			continue
		}
		t := history.Txn{ID: history.IntValue(int64(len(h.Txns) + 1)), Session: int32(s), HasTime: true}
		t.Begin = clock[s] + int64(r.IntN(3))
		t.End = t.Begin + int64(r.IntN(6))
		clock[s] = t.End + 1
		k := ks[r.IntN(keys)]
		switch r.IntN(3) {
		case 0:
			t.Ops = []history.Op{{Kind: history.Read, Key: k}}
		case 1:
			t.Ops = []history.Op{{Kind: history.Write, Key: k, Value: value()}}
		default:
			t.Ops = []history.Op{{Kind: history.Read, Key: k}, {Kind: history.Write, Key: k, Value: value()}}
		}
		if len(t.Ops) == 2 || t.Ops[0].Kind == history.Write {
			if r.IntN(6) == 0 {
				t.Status, done[s] = history.Unknown, true
			}
		}
		// Its instant in the simulation: an unknown one may take effect
		// long after it began.
		at := t.Begin + r.Int64N(t.End-t.Begin+1)
		if t.Status == history.Unknown {
			at = t.Begin + r.Int64N(20)
		}
		steps = append(steps, step{len(h.Txns), at})
		h.Txns = append(h.Txns, t)
	}
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	state := map[history.KeyID]history.Value{}
	for _, st := range steps {
		t := &h.Txns[st.t]
		k := t.Ops[0].Key
		switch {
		case t.Status == history.Unknown && r.IntN(2) == 0:
			// It did not take effect: a compare-and-set expected
			// anything.
			if t.Ops[0].Kind == history.Read {
				t.Ops[0].Value = value()
			}
			continue
		case t.Ops[0].Kind == history.Write:
		case len(t.Ops) == 1:
			t.Ops[0].Value = state[k]
			continue
		case r.IntN(3) == 0:
			// A compare-and-set that failed: it expected another value.
			t.Ops[0].Value = value()
			if t.Ops[0].Value != state[k] {
				t.Status = history.Aborted
				continue
			}
		default:
			t.Ops[0].Value = state[k]
		}
		state[k] = t.Ops[len(t.Ops)-1].Value
	}
	if r.IntN(2) == 0 {
		for range 4 { // a committed read, changed to another value
			t := &h.Txns[r.IntN(len(h.Txns))]
			if t.Status != history.Committed || t.Ops[0].Kind != history.Read {
				continue
			}
			v := history.NullValue
			if r.IntN(4) > 0 {
				v = value()
			}
			if v != t.Ops[0].Value {
				t.Ops[0].Value = v
				break
			}
		}
	}
	return h
}

// Timestamped builds a small random key-value history with random timestamps
// (small, so that ties occur): reads, writes of fresh values and deletes
// over a few keys, some transactions aborted, some with commit_ts below
// start_ts. Each read returns, with probability honest, what the
// timestamps say it must (NaiveSnapshot under ser or SI), and otherwise the
// initial value or any written one.
func Timestamped(r *rand.Rand, txns, keys, sessions int, honest float64, ser bool) *history.History {
	h, key := skeleton(sessions, keys)
	h.Header.Initial.Values = map[history.KeyID]history.Value{}
	for _, k := range key {
		h.Header.Initial.Values[k] = history.IntValue(0)
	}
	next := int64(1)
	var written [][]history.Value = make([][]history.Value, keys)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		t.StartTS = uint64(r.IntN(3 * txns))
		t.CommitTS = t.StartTS + uint64(r.IntN(6))
		if r.IntN(12) == 0 {
			t.CommitTS = uint64(r.IntN(int(t.StartTS) + 1)) // maybe below the start
		}
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			switch x := r.IntN(10); {
			case x < 5:
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k]})
			case x < 9:
				v := history.IntValue(next)
				next++
				written[k] = append(written[k], v)
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: v})
			default:
				t.Ops = append(t.Ops, history.Op{Kind: history.Delete, Key: key[k]})
			}
		}
		h.Txns = append(h.Txns, t)
	}
	// Fill in the reads, transaction by transaction in file order: a
	// read's honest value depends only on writes, which are fixed.
	for i := range h.Txns {
		own := map[history.KeyID]history.Value{}
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			switch op.Kind {
			case history.Write:
				own[op.Key] = op.Value
			case history.Delete:
				own[op.Key] = history.NullValue
			case history.Read:
				v, mine := own[op.Key]
				if !mine {
					v = NaiveSnapshot(h, history.TxnID(i), op.Key, ser)
				}
				if r.Float64() >= honest {
					k := int(op.Key)
					if n := len(written[k]); n > 0 && r.IntN(4) > 0 {
						v = written[k][r.IntN(n)]
					} else {
						v = history.IntValue(0)
					}
				}
				op.Value = v
				own[op.Key] = v
			}
		}
	}
	return h
}

// TimestampedLists builds a small random list-append history with random
// timestamps: appends of fresh elements and list reads over a few keys.
// Each list read returns, with probability honest, what the timestamps say
// (NaiveList), and otherwise that list with its last element dropped or
// another key's appended element added.
func TimestampedLists(r *rand.Rand, txns, keys, sessions int, honest float64, ser bool) *history.History {
	h, key := skeleton(sessions, keys)
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		t.StartTS = uint64(r.IntN(3 * txns))
		t.CommitTS = t.StartTS + uint64(r.IntN(6))
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(4) {
			k := key[r.IntN(keys)]
			if r.IntN(2) == 0 {
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: k})
				continue
			}
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: k, Value: history.IntValue(next)})
			next++
		}
		h.Txns = append(h.Txns, t)
	}
	for i := range h.Txns {
		views := map[history.KeyID][]history.Value{}
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			v, touched := views[op.Key]
			if !touched {
				v = NaiveList(h, i, op.Key, ser)
			}
			if op.Kind == history.Append {
				views[op.Key] = append(slices.Clip(v), op.Value)
				continue
			}
			if r.Float64() >= honest {
				if len(v) > 0 && r.IntN(2) == 0 {
					v = v[:len(v)-1]
				} else {
					v = append(slices.Clip(v), history.IntValue(1+r.Int64N(next)))
				}
			}
			op.List = slices.Clone(v)
			views[op.Key] = op.List
		}
	}
	return h
}

// CommittedTimestamped builds a small committed history with random timestamps
// (small, so that ties occur, and some commit_ts below start_ts), reads
// returning the initial value or some transaction's final write, each
// transaction writing a key at most once and reading a key before any
// write of it, so that only the timestamp axioms are at stake.
func CommittedTimestamped(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	h.Header.Initial.Values = map[history.KeyID]history.Value{}
	for k := range keys {
		h.Header.Initial.Values[h.Key(history.IntValue(int64(k)))] = history.IntValue(0)
	}
	var written [][]history.Value = make([][]history.Value, keys)
	next := int64(1)
	for i := range txns {
		tx := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		tx.StartTS = uint64(r.IntN(3 * txns))
		tx.CommitTS = tx.StartTS + uint64(r.IntN(6))
		if r.IntN(15) == 0 {
			tx.CommitTS = uint64(r.IntN(int(tx.StartTS) + 1))
		}
		used := map[int]bool{}
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			if used[k] {
				continue
			}
			used[k] = true
			switch x := r.IntN(12); {
			case x >= 10:
				// Two writes of the key: the first is intermediate.
				for range 2 {
					v := history.IntValue(next)
					next++
					tx.Ops = append(tx.Ops, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: v})
					written[k] = append(written[k], v)
				}
			case x < 5:
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Read, Key: history.KeyID(k)})
			case x < 7:
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Read, Key: history.KeyID(k)})
				v := history.IntValue(next)
				next++
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: v})
				written[k] = append(written[k], v)
			default:
				v := history.IntValue(next)
				next++
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: v})
				written[k] = append(written[k], v)
			}
		}
		if r.IntN(12) == 0 {
			tx.Status = history.Aborted
		}
		h.Txns = append(h.Txns, tx)
	}
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			o := &h.Txns[i].Ops[j]
			if o.Kind != history.Read {
				continue
			}
			own := false
			if j+1 < len(h.Txns[i].Ops) {
				own = h.Txns[i].Ops[j+1].Key == o.Key
			}
			ws := written[o.Key]
			o.Value = history.IntValue(0)
			if n := r.IntN(len(ws) + 1); n < len(ws) && !(own && h.Txns[i].Ops[j+1].Value == ws[n] && r.IntN(8) != 0) {
				o.Value = ws[n]
			}
		}
	}
	h.Header.UniqueValues = true
	return h
}

// TimestampedListsAborts builds a small random list-append history with random
// timestamps (ties included) and some aborted transactions: appends of
// fresh elements and list reads over a few keys. A read returns, mostly,
// the appends of the committed transactions that committed before its
// snapshot in commit order followed by its own since; otherwise that list
// with its last element dropped, or with an element of any transaction
// added (an aborted one's, a later one's, its own later one's).
func TimestampedListsAborts(r *rand.Rand, txns, keys, sessions int, ser bool) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	for k := range keys {
		h.Key(history.IntValue(int64(k)))
	}
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		t.StartTS = uint64(r.IntN(3 * txns))
		t.CommitTS = t.StartTS + uint64(r.IntN(6))
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(4) {
			k := history.KeyID(r.IntN(keys))
			switch r.IntN(5) {
			case 0, 1:
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: k})
			case 2:
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: k}) // a read of an absent list
			default:
				t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: k, Value: history.IntValue(next)})
				next++
			}
		}
		h.Txns = append(h.Txns, t)
	}
	snapOf := func(t *history.Txn) uint64 {
		if ser {
			return t.CommitTS
		}
		return t.StartTS
	}
	for i := range h.Txns {
		t := &h.Txns[i]
		views := map[history.KeyID][]history.Value{}
		for j := range t.Ops {
			op := &t.Ops[j]
			v, touched := views[op.Key]
			if !touched {
				var ws []*history.Txn
				for w := range h.Txns {
					if u := &h.Txns[w]; w != i && u.Status == history.Committed && u.CommitTS < snapOf(t) {
						ws = append(ws, u)
					}
				}
				slices.SortStableFunc(ws, func(a, b *history.Txn) int { return cmp.Compare(a.CommitTS, b.CommitTS) })
				for _, u := range ws {
					for _, o := range u.Ops {
						if o.Kind == history.Append && o.Key == op.Key {
							v = append(v, o.Value)
						}
					}
				}
			}
			switch op.Kind {
			case history.Append:
				views[op.Key] = append(slices.Clip(v), op.Value)
				continue
			case history.Read:
				continue
			}
			if r.IntN(4) == 0 {
				if len(v) > 0 && r.IntN(2) == 0 {
					v = v[:len(v)-1]
				} else {
					v = append(slices.Clip(v), history.IntValue(1+r.Int64N(next)))
				}
			}
			op.List = slices.Clone(v)
			if op.List == nil {
				op.List = []history.Value{}
			}
			views[op.Key] = op.List
		}
	}
	return h
}

// EveryShape makes transactions of every shape a piece carries: integer
// and string ids, keys and values, nulls, deletes, appends, list reads,
// locking reads, aborted and unknown ones without timestamps.
func EveryShape(r *rand.Rand, n int, stringKeys bool) *history.History {
	h := history.New()
	value := func() history.Value {
		switch r.IntN(4) {
		case 0:
			return history.NullValue
		case 1:
			return history.StringValue(strings.Repeat("v\"é", r.IntN(3)))
		}
		return history.IntValue(r.Int64N(1<<40) - 1<<39)
	}
	for i := range 3 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(i)))
	}
	h.Sessions = append(h.Sessions, history.StringValue("s x"))
	for i := range n {
		t := history.Txn{ID: history.IntValue(int64(i)), Session: int32(r.IntN(len(h.Sessions))), StartTS: r.Uint64N(1 << 50), HasStartTS: true, HasCommitTS: true}
		if r.IntN(5) == 0 {
			t.ID = history.StringValue("t \"" + strconv.Itoa(i))
		}
		t.CommitTS = t.StartTS + r.Uint64N(100)
		switch r.IntN(8) {
		case 0:
			t.Status, t.HasStartTS, t.HasCommitTS = history.Aborted, r.IntN(2) == 0, false
		case 1:
			t.Status, t.HasCommitTS = history.Unknown, false
		}
		for range 1 + r.IntN(8) {
			// Keys below 25 hold values, the others lists (a reader of
			// JSON tells a read of a list by the key's other operations).
			k := r.IntN(50)
			key := history.IntValue(int64(k))
			if stringKeys {
				key = history.StringValue("k" + strconv.Itoa(k))
			}
			kinds := []history.OpKind{history.Read, history.Write, history.Delete}
			if k >= 25 {
				kinds = []history.OpKind{history.Append, history.ReadList}
			}
			o := history.Op{Key: h.Key(key), Kind: kinds[r.IntN(len(kinds))]}
			switch o.Kind {
			case history.Delete:
			case history.ReadList:
				for range r.IntN(3) {
					o.List = append(o.List, value())
				}
			default:
				o.Value = value()
			}
			o.Lock = o.Kind == history.Read && r.IntN(4) == 0
			t.Ops = append(t.Ops, o)
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// NaiveSnapshot returns k's value that transaction t must read first: the
// final write of the latest committed writer visible to it, or the
// initial value.
func NaiveSnapshot(h *history.History, t history.TxnID, k history.KeyID, ser bool) history.Value {
	best, v := -1, h.InitialValue(k)
	for w := range h.Txns {
		if h.Txns[w].Status != history.Committed || !Visible(h, w, int(t), ser) {
			continue
		}
		fv, ok := FinalWrite(&h.Txns[w], k)
		if ok && (best < 0 || less(commitOf(h, best, ser), commitOf(h, w, ser))) {
			best, v = w, fv
		}
	}
	return v
}

// NaiveList is the list at k in transaction i's snapshot: the appends of
// the committed transactions visible to it, in replay order of their
// commits.
func NaiveList(h *history.History, i int, k history.KeyID, ser bool) []history.Value {
	var ws []int
	for w := range h.Txns {
		if h.Txns[w].Status == history.Committed && Visible(h, w, i, ser) {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b int) int {
		if less(commitOf(h, a, ser), commitOf(h, b, ser)) {
			return -1
		}
		return 1
	})
	var out []history.Value
	for _, w := range ws {
		for _, op := range h.Txns[w].Ops {
			if op.Kind == history.Append && op.Key == k {
				out = append(out, op.Value)
			}
		}
	}
	return out
}

// Replay positions: a transaction's start and commit as comparable keys
// (timestamp, class, file position), the rule of the package doc: at one
// timestamp commits of transactions that started earlier, then
// transactions that start and commit there, then starts.
type pos struct {
	ts    uint64
	class int
	idx   int
	sub   int
}

func less(a, b pos) bool {
	return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.class, b.class), cmp.Compare(a.idx, b.idx), cmp.Compare(a.sub, b.sub)) < 0
}

// startOf and commitOf place transaction i under SI (a commit below the
// start counts as the start).
func startOf(h *history.History, i int) pos {
	t := &h.Txns[i]
	s := min(t.StartTS, t.CommitTS)
	if s == t.CommitTS {
		return pos{s, 1, i, 0}
	}
	return pos{s, 2, i, 0}
}

func commitOf(h *history.History, i int, ser bool) pos {
	t := &h.Txns[i]
	if ser {
		return pos{t.CommitTS, 0, i, 0}
	}
	if min(t.StartTS, t.CommitTS) == t.CommitTS {
		return pos{t.CommitTS, 1, i, 1}
	}
	return pos{t.CommitTS, 0, i, 0}
}

// Visible says whether w's writes are in t's snapshot (SI) or before t in
// commit order (SER).
func Visible(h *history.History, w, t int, ser bool) bool {
	if w == t {
		return false
	}
	if ser {
		return less(commitOf(h, w, true), commitOf(h, t, true))
	}
	return less(commitOf(h, w, false), startOf(h, t))
}

// FinalWrite returns t's last write of k (a delete writes null), if any.
func FinalWrite(t *history.Txn, k history.KeyID) (history.Value, bool) {
	for j := len(t.Ops) - 1; j >= 0; j-- {
		if op := t.Ops[j]; op.Key == k && (op.Kind == history.Write || op.Kind == history.Delete) {
			return op.Value, true // a delete's Value is null
		}
	}
	return history.Value{}, false
}
