package saturate_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/saturate"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestDecides: the checker takes rc-session, read atomic and causal on
// reads and writes with unique values, and declines the rest, saying why.
func TestDecides(t *testing.T) {
	for _, c := range []struct {
		h, why string
		id     level.ID
	}{
		{`s1: w x 1 | s2: r x 1`, "", level.RCSession},
		{`s1: w x 1 | s2: r x 1`, "", level.ReadAtomic},
		{`s1: w x 1 | s2: r x 1`, "", level.Causal},
		{`s1: w x 1 | s2: r x 1`, "not prefix", level.Prefix},
		{`s1: w x 1 | s2: r x 1`, "not read-committed", level.ReadCommitted},
		{`s1: w x 1 | s2: w x 1 | s3: r x 1`, "unique values", level.Causal},
		{`s1: w x 1 d x | s2: r x _`, "a delete operation", level.Causal},
		{`s1: w 1 1 | s2: scan 0 5 [1=1]`, "scan operation", level.ReadAtomic},
		// An aborted transaction's delete does not matter.
		{`s1: aborted: d x | s2: w x 1 | s3: r x 1`, "", level.RCSession},
	} {
		ix := history.NewIndex(history.MustParse(c.h))
		err := saturate.Decides(ix, level.Get(c.id))
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s at %s: %v", c.h, c.id, err)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s at %s: %v, want an error saying %q", c.h, c.id, err, c.why)
		}
	}
}

// TestAgainstSolverOnCausalStores: on histories of a simulated causally
// consistent store (a few hundred transactions over a few keys and
// sessions, some with stale reads planted), the saturation checker and
// the solver checker agree at rc-session, read atomic and causal, the
// clean histories hold everywhere, and every cycle connects.
func TestAgainstSolverOnCausalStores(t *testing.T) {
	violated := map[level.ID]int{}
	for seed := range uint64(24) {
		stale := 0.0
		if seed%2 == 1 {
			stale = 0.02
		}
		h, err := gen.GenerateCausal(gen.CausalConfig{Txns: 150, Sessions: 2 + int(seed%5), Keys: 6 + int(seed%7),
			Dist: workload.Uniform, Ops: 1 + int(seed%6), ReadRatio: 0.6, Sync: 0.3, Stale: stale, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []level.ID{level.RCSession, level.ReadAtomic, level.Causal} {
			var got [2]check.Result
			for i, name := range []string{"saturate", "sat"} {
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
				if err != nil {
					t.Fatalf("seed %d %s %s: %v", seed, id, name, err)
				}
				for _, a := range res.Anomalies {
					for j, st := range a.Cycle {
						if st.From == st.To || st.To != a.Cycle[(j+1)%len(a.Cycle)].From {
							t.Fatalf("seed %d %s %s: a broken cycle %v", seed, id, name, a.Cycle)
						}
					}
				}
				got[i] = res
			}
			if got[0].Outcome != got[1].Outcome {
				t.Fatalf("seed %d %s: saturate %s, sat %s\n%v\n%v", seed, id, got[0].Outcome, got[1].Outcome, got[0].Anomalies, got[1].Anomalies)
			}
			if stale == 0 && got[0].Outcome != check.Satisfied {
				t.Fatalf("seed %d %s: a clean causal store's history: %s %v", seed, id, got[0].Outcome, got[0].Anomalies)
			}
			if got[0].Outcome == check.Violated {
				violated[id]++
			}
		}
	}
	t.Logf("violations among the stale histories: %v", violated)
	if violated[level.Causal] == 0 {
		t.Error("no planted stale read violated causal consistency")
	}
}

// TestAgainstSolverOnAWDITShapes: on histories of the shape of AWDIT's
// generator (gen --workload awdit: geometric transaction sizes, Pareto
// keys, √events sessions, four reads in five), some with stale reads
// planted, the saturation checker and the solver checker agree at
// rc-session, read atomic and causal, and the clean histories hold.
func TestAgainstSolverOnAWDITShapes(t *testing.T) {
	violated := map[level.ID]int{}
	for seed := range uint64(40) {
		stale := 0.0
		if seed%2 == 1 {
			stale = 0.03
		}
		events := 200 + int(seed%5)*100
		h, err := gen.GenerateCausal(gen.CausalConfig{Events: events, Sessions: int(math.Ceil(math.Sqrt(float64(events)))),
			Keys: 4 + int(seed%9), Ops: 2 + int(seed%5), ReadRatio: 0.8, Sync: 0.3, Stale: stale, Seed: seed,
			Geometric: true, Pareto: workload.AWDITAlpha})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for ti, tx := range h.Txns {
			n += len(tx.Ops)
			seen := map[history.KeyID]bool{}
			for _, op := range tx.Ops {
				if seen[op.Key] {
					t.Fatalf("seed %d: transaction %s touches a key it wrote", seed, h.TxnName(history.TxnID(ti)))
				}
				if op.Kind == history.Write {
					seen[op.Key] = true
				}
			}
		}
		if n != events {
			t.Fatalf("seed %d: %d operations, want %d", seed, n, events)
		}
		for _, id := range []level.ID{level.RCSession, level.ReadAtomic, level.Causal} {
			var got [2]check.Result
			for i, name := range []string{"saturate", "sat"} {
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
				if err != nil {
					t.Fatalf("seed %d %s %s: %v", seed, id, name, err)
				}
				got[i] = res
			}
			if got[0].Outcome != got[1].Outcome {
				t.Fatalf("seed %d %s: saturate %s, sat %s\n%v\n%v", seed, id, got[0].Outcome, got[1].Outcome, got[0].Anomalies, got[1].Anomalies)
			}
			if stale == 0 && got[0].Outcome != check.Satisfied {
				t.Fatalf("seed %d %s: a clean causal store's history: %s %v", seed, id, got[0].Outcome, got[0].Anomalies)
			}
			if got[0].Outcome == check.Violated {
				violated[id]++
			}
		}
	}
	t.Logf("violations among the stale histories: %v", violated)
	if violated[level.Causal] == 0 {
		t.Error("no planted stale read violated causal consistency")
	}
}
