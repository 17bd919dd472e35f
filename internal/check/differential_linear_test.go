package check_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

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
		h := checktest.Register(r, 3+r.IntN(7), keys, 1+r.IntN(4))
		for _, id := range []level.ID{level.StrictSerializable, level.Serializable} {
			lv := level.Get(id)
			res, err := check.Run(context.Background(), h, lv, check.Options{Checker: "linear"})
			if err != nil {
				continue // declined (at serializability, a session on two keys)
			}
			decided++
			total++
			got := res.Outcome == check.Satisfied
			if res.Outcome == check.Undecided {
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
		h := checktest.Register(r, 15+r.IntN(26), 1+int(seed%2), 3+r.IntN(6))
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
			if res.Outcome == check.Violated {
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
