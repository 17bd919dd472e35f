package check_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// randomRegister builds a small register history as Jepsen's register
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
func randomRegister(r *rand.Rand, txns, keys, sessions int) *history.History {
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

// linearizable decides, by enumerating orders, whether h is strictly
// serializable (realTime) or serializable: some choice of which unknown
// transactions took effect has an order of the committed and chosen ones,
// respecting session order and (realTime) real time — T1 before T2 when
// T1 committed and ended before T2 began — in which every read returns
// the value of the register then (its transaction's own last write, after
// one).
func linearizable(h *history.History, realTime bool) bool {
	var committed, unknown []int
	for i := range h.Txns {
		switch h.Txns[i].Status {
		case history.Committed:
			committed = append(committed, i)
		case history.Unknown:
			unknown = append(unknown, i)
		}
	}
	before := func(a, b int) bool { // a must precede b
		ta, tb := &h.Txns[a], &h.Txns[b]
		if ta.Session == tb.Session && a < b {
			return true
		}
		return realTime && ta.Status == history.Committed && ta.End < tb.Begin
	}
	for choice := 0; choice < 1<<len(unknown); choice++ {
		in := append([]int(nil), committed...)
		for b, i := range unknown {
			if choice&(1<<b) != 0 {
				in = append(in, i)
			}
		}
		placed := make([]bool, len(h.Txns))
		state := map[history.KeyID]history.Value{}
		var place func(n int) bool
		place = func(n int) bool {
			if n == len(in) {
				return true
			}
		next:
			for _, t := range in {
				if placed[t] {
					continue
				}
				for _, u := range in {
					if !placed[u] && u != t && before(u, t) {
						continue next
					}
				}
				saved := map[history.KeyID]history.Value{}
				own := map[history.KeyID]history.Value{}
				ok := true
				for _, op := range h.Txns[t].Ops {
					if op.Kind == history.Write {
						own[op.Key] = op.Value
						continue
					}
					want, mine := own[op.Key]
					if !mine {
						want = state[op.Key]
					}
					if op.Value != want {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
				for k, v := range own {
					saved[k] = state[k]
					state[k] = v
				}
				placed[t] = true
				if place(n + 1) {
					return true
				}
				placed[t] = false
				for k, v := range saved {
					state[k] = v
				}
			}
			return false
		}
		if place(0) {
			return true
		}
	}
	return false
}

// TestDifferentialLinear: on thousands of small random register histories
// — repeated values, compare-and-sets that succeed or fail, unknown
// outcomes, overlapping and touching intervals — the register checker
// (linear) agrees with the solver (sat), with an enumeration of
// linearizations and with the reference oracle, at strict serializability
// and at serializability; and auto picks it.
func TestDifferentialLinear(t *testing.T) {
	n := differentialRuns
	if testing.Short() {
		n = 500
	}
	decided, violations, total := 0, 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 47))
		keys := 1
		if seed%5 == 0 {
			keys = 2
		}
		h := randomRegister(r, 3+r.IntN(7), keys, 1+r.IntN(4))
		for _, id := range []level.ID{level.StrictSerializable, level.Serializable} {
			lv := level.Get(id)
			res, err := check.Run(context.Background(), h, lv, check.Options{Checker: "linear"})
			if err != nil {
				continue // declined (at serializability, a session on two keys)
			}
			decided++
			total++
			got := res.Outcome == check.Satisfied
			if res.Outcome == check.Unknown {
				t.Fatalf("seed %d %s: undecided: %s\n%s", seed, lv.Name, res.Reason, history.Notation(h))
			}
			if !got {
				violations++
			}
			cyclesConnect(t, res)
			prefixesHold(t, h, res)
			if want := linearizable(h, id == level.StrictSerializable); got != want {
				t.Fatalf("seed %d %s: linear says satisfied=%v, the enumeration %v; %s\n%s", seed, lv.Name, got, want, kinds(res), history.Notation(h))
			}
			if want, err := reference.Check(h, id); err == nil && got != want {
				t.Fatalf("seed %d %s: linear says satisfied=%v, the oracle %v; %s\n%s", seed, lv.Name, got, want, kinds(res), history.Notation(h))
			}
			sat, err := check.Run(context.Background(), h, lv, check.Options{Checker: "sat"})
			if err != nil {
				t.Fatalf("seed %d %s: sat: %v", seed, lv.Name, err)
			}
			if want := sat.Outcome == check.Satisfied; got != want {
				t.Fatalf("seed %d %s: linear says satisfied=%v, sat %v; %s / %s\n%s", seed, lv.Name, got, want, kinds(res), kinds(sat), history.Notation(h))
			}
			if auto, err := check.Run(context.Background(), h, lv, check.Options{}); err != nil || auto.Outcome != res.Outcome {
				t.Fatalf("seed %d %s: auto (%s) disagrees: %v %v", seed, lv.Name, auto.Checker, auto.Outcome, err)
			}
		}
	}
	t.Logf("%d verdicts, %d violations", total, violations)
	if decided < n {
		t.Errorf("linear decided only %d verdicts of %d histories", decided, n)
	}
	if violations < total/10 || violations > total*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violations, total)
	}
}

// TestDifferentialLinearLarger: on larger register histories (up to 40
// operations on one or two registers, many concurrent sessions), where
// the search goes deep and its memo, forced reads and normal form for
// unknown operations all come into play, linear agrees with the solver.
func TestDifferentialLinearLarger(t *testing.T) {
	n := differentialRuns / 10
	if testing.Short() {
		n = 50
	}
	violations := 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 53))
		h := randomRegister(r, 15+r.IntN(26), 1+int(seed%2), 3+r.IntN(6))
		for _, id := range []level.ID{level.StrictSerializable, level.Serializable} {
			lv := level.Get(id)
			res, err := check.Run(context.Background(), h, lv, check.Options{Checker: "linear"})
			if err != nil {
				continue
			}
			sat, err := check.Run(context.Background(), h, lv, check.Options{Checker: "sat"})
			if err != nil {
				t.Fatalf("seed %d %s: sat: %v", seed, lv.Name, err)
			}
			if res.Outcome != sat.Outcome {
				t.Fatalf("seed %d %s: linear %v, sat %v; %s / %s\n%s", seed, lv.Name, res.Outcome, sat.Outcome, kinds(res), kinds(sat), history.Notation(h))
			}
			if res.Outcome == check.Violation {
				violations++
			}
		}
	}
	t.Logf("%d violations", violations)
}

// prefixesHold checks the counterexamples of linear's search that are not
// cycles: the prefix (Txns[1:]) runs on the register in its order, each
// read seeing what the register holds, and leaves the anomaly's Value.
func prefixesHold(t *testing.T, h *history.History, res check.Result) {
	t.Helper()
	for _, a := range res.Anomalies {
		if a.IsCycle() || a.Kind != anomaly.RealTimeViolation && a.Kind != anomaly.Cycle {
			continue
		}
		state := h.InitialValue(a.Key)
		for _, id := range a.Txns[1:] {
			for _, op := range h.Txns[id].Ops {
				switch {
				case op.Key != a.Key:
					t.Fatalf("the prefix steps off register %s: %s", h.KeyName(a.Key), history.Notation(h))
				case op.Kind == history.Write:
					state = op.Value
				case op.Value != state:
					t.Fatalf("the prefix is not linearizable at %s (reads %s, holds %s)\n%s", h.TxnName(id), op.Value, state, history.Notation(h))
				}
			}
		}
		if state != a.Value {
			t.Fatalf("the prefix leaves %s, the anomaly says %s\n%s", state, a.Value, history.Notation(h))
		}
	}
}
