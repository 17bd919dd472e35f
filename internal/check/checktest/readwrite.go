package checktest

import (
	"math/rand/v2"

	"github.com/isoscope/isoscope/internal/history"
)

// Histories of reads and writes without timestamps: read-modify-write
// transactions, values from a tiny domain, unique values, range scans.

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
