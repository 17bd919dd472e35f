package checktest

import (
	"math/rand/v2"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// Register histories: single-key compare-and-set links, and reads, writes
// and compare-and-sets of registers as Jepsen and knossos record them.

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
