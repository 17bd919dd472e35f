package check_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// levelFor is the strongest level at which a planted kind must be found:
// real time needs strict serializability; the rest show at serializability.
func levelFor(k anomaly.Kind) level.ID {
	if k == anomaly.RealTimeViolation {
		return level.StrictSerializable
	}
	return level.Serializable
}

// TestPlantedAreFound: in generated histories of both simulated databases,
// every plantable kind is found, by its name, on the planted transactions,
// and nothing else is reported for the serial database.
func TestPlantedAreFound(t *testing.T) {
	for _, mode := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
		for _, k := range gen.PlantableKinds() {
			h, planted, err := gen.Generate(gen.Config{
				Txns: 3000, Sessions: 8, Keys: 200, Dist: workload.Zipfian, Mode: mode, Seed: uint64(k) + 1,
				Plant: []anomaly.Kind{k}, ReadOnlyRatio: 0.2,
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := check.Run(context.Background(), h, level.Get(levelFor(k)), check.Options{})
			if err != nil {
				t.Fatalf("%s %s: %v", mode, k, err)
			}
			found := false
			for _, a := range res.Anomalies {
				involved := slices.ContainsFunc(a.Txns, func(x history.TxnID) bool { return slices.Contains(planted[0].Txns, x) })
				if a.Kind == k && involved {
					found = true
				}
				if mode == gen.Serial && !involved {
					t.Errorf("serial %s: unplanted anomaly %s on %v", k, a.Kind, a.Txns)
				}
			}
			if !found {
				t.Errorf("%s: planted %s on %v not found; got %s", mode, k, planted[0].Txns, kinds(res))
			}
		}
	}
}

// TestDifferentialPlanted: tiny generated histories with one planted
// anomaly agree with the oracle at every level.
func TestDifferentialPlanted(t *testing.T) {
	kinds := gen.PlantableKinds()
	for seed := range uint64(differentialRuns / 4) {
		r := rand.New(rand.NewPCG(seed, 5))
		k := kinds[r.IntN(len(kinds))]
		mode := gen.Mode(r.IntN(2))
		h, _, err := gen.Generate(gen.Config{
			Txns: 1 + r.IntN(4), Sessions: 2, Keys: 2, Dist: workload.Uniform, Mode: mode, Seed: seed,
			Plant: []anomaly.Kind{k},
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(h.Txns); n > reference.MaxTxns {
			continue
		}
		agree(t, h, seed, "auto")
	}
}

// TestDifferentialSATOnLargeMT: on generated mini-transaction histories of
// 1,000 to 20,000 transactions, from both simulated databases and with
// anomalies planted, the solver (forced with --checker sat) and the
// linear-time mini-transaction checker reach the same verdict at SER, SI
// and SSER.
func TestDifferentialSATOnLargeMT(t *testing.T) {
	if testing.Short() {
		t.Skip("24 histories of up to 20,000 transactions, each checked twice at three levels: not in short mode")
	}
	plantable := gen.PlantableKinds()
	violations, counts := 0, map[string]int{}
	for seed := range uint64(24) {
		r := rand.New(rand.NewPCG(seed, 9))
		var plant []anomaly.Kind
		if seed%3 != 0 {
			plant = []anomaly.Kind{plantable[r.IntN(len(plantable))]}
		}
		h, _, err := gen.Generate(gen.Config{Txns: 1000 + r.IntN(19000), Sessions: 4 + r.IntN(20), Keys: 50 + r.IntN(500),
			Dist: workload.Zipfian, Mode: gen.Mode(r.IntN(2)), Seed: seed, Plant: plant})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation, level.StrictSerializable} {
			mt, err1 := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "mt"})
			sat, err2 := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "sat"})
			if err1 != nil || err2 != nil {
				t.Fatalf("seed %d %s: %v / %v", seed, id, err1, err2)
			}
			if mt.Outcome != sat.Outcome {
				t.Fatalf("seed %d %s (%d transactions, planted %v): mt says %s (%s), sat says %s (%s)",
					seed, id, len(h.Txns), plant, mt.Outcome, kinds(mt), sat.Outcome, kinds(sat))
			}
			if mt.Outcome == check.Violated {
				violations++
			}
			if sat.Checker != "sat" && sat.Checker != "precheck" {
				t.Fatalf("seed %d %s: forced sat, ran %q", seed, id, sat.Checker)
			}
			counts[sat.Checker]++
		}
	}
	t.Logf("%d verdicts were violations; decided by %v", violations, counts)
	if violations < 20 || counts["sat"] < 40 {
		t.Errorf("only %d violations, %d verdicts by the solver: the test does not exercise them", violations, counts["sat"])
	}
}
