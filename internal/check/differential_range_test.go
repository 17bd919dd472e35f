package check_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// satAgrees fails t unless the solver checker's verdict on h at level id is
// the oracle's, every cycle it reports connects, and at snapshot isolation
// (with session order or without) and prefix consistency the BC-graph
// encoding agrees too. It returns whether h satisfies id.
func satAgrees(t *testing.T, h *history.History, seed uint64, id level.ID) bool {
	t.Helper()
	want, err := reference.Check(h, id)
	if err != nil {
		t.Fatalf("seed %d: oracle: %v", seed, err)
	}
	names := []string{"sat"}
	if id == level.SnapshotIsolation || id == level.GSI || id == level.Prefix {
		names = append(names, "sat-bc") // the split graphs' other encoding
	}
	for _, name := range names {
		res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
		if err != nil {
			t.Fatalf("seed %d %s (%s): %v\n%s", seed, id, name, err, history.Notation(h))
		}
		if got := res.Outcome == check.Satisfied; got != want {
			t.Fatalf("seed %d %s: %s says satisfied=%v, oracle %v; %s\n%s", seed, id, name, got, want, kinds(res), history.Notation(h))
		}
		cyclesConnect(t, res)
	}
	return want
}

// cyclesConnect fails t when a reported cycle has a gap or a step from a
// transaction to itself.
func cyclesConnect(t *testing.T, res check.Result) {
	t.Helper()
	for _, a := range res.Anomalies {
		for i, s := range a.Cycle {
			if s.From == s.To || s.To != a.Cycle[(i+1)%len(a.Cycle)].From {
				t.Fatalf("a broken cycle: %v", a.Cycle)
			}
		}
	}
}

// TestDifferentialRangeSAT: on thousands of small histories with deletes
// (physical and tombstones), scans and iterators, the solver checker
// agrees with the brute-force oracle at every level it decides (RU, RC,
// SI, SER, SSER), and so does the
// BC-graph encoding of snapshot isolation.
func TestDifferentialRangeSAT(t *testing.T) {
	levels := []level.ID{level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation, level.Serializable, level.StrictSerializable}
	held, total := 0, 0
	violated := map[string]int{}
	for seed := range uint64(differentialRuns) {
		r := rand.New(rand.NewPCG(seed, 47))
		h := checktest.Range(r, 2+r.IntN(6), 2+r.IntN(4), seed%3 == 0)
		for _, id := range levels {
			got := satAgrees(t, h, seed, id)
			total++
			if got {
				held++
			} else {
				violated[level.Get(id).Short]++
			}
		}
	}
	t.Logf("%d of %d verdicts hold; violations per level: %v", held, total, violated)
	if held < total/10 || held > total*9/10 {
		t.Fatalf("the generator is lopsided: %d of %d verdicts hold", held, total)
	}
}

// TestDifferentialSIEncodings: on generated histories of Boomslang's
// workloads, 1,500 transactions each, with and without injected faults,
// the split-graph and BC-graph encodings of snapshot isolation give the
// same verdicts.
func TestDifferentialSIEncodings(t *testing.T) {
	verdicts := map[check.Outcome]int{}
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		for _, w := range []gen.RangeWorkload{gen.RandomBench, gen.RandomRange, gen.BlindW} {
			for _, fault := range []float64{0, 0.01} {
				h, err := gen.GenerateRange(gen.RangeConfig{Workload: w, Mode: gen.SnapshotIsolation, Txns: 1500, Sessions: 12, Keys: 300, Fault: fault, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				var got [2]check.Outcome
				for i, name := range []string{"sat", "sat-bc"} {
					res, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{Checker: name})
					if err != nil {
						t.Fatal(err)
					}
					got[i] = res.Outcome
					cyclesConnect(t, res)
				}
				if got[0] != got[1] {
					t.Fatalf("%v seed %d fault %g: split graph %v, BC graph %v", w, seed, fault, got[0], got[1])
				}
				verdicts[got[0]]++
			}
		}
	}
	t.Logf("verdicts: %v", verdicts)
	if verdicts[check.Satisfied] == 0 || verdicts[check.Violated] == 0 {
		t.Fatalf("one-sided: %v", verdicts)
	}
}
