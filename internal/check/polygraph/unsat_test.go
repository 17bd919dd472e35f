package polygraph

import (
	"context"
	"testing"

	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestUnsatSearch: windows of a history checked on their own find the
// violations of faulty histories (a window's violation is the whole
// history's: never one the full check does not confirm), and when the
// whole encoding is over the bound a history that holds is undecided,
// never violated.
func TestUnsatSearch(t *testing.T) {
	ser := level.Get(level.Serializable)
	found, violating := 0, 0
	for seed := range uint64(12) {
		for _, fault := range []float64{0, 0.02} {
			h, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.RandomBench, Mode: gen.Serial, Txns: 400, Sessions: 6, Keys: 60, Values: gen.UniqueValues, Fault: fault, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			ix := history.NewIndex(h)
			full, _, err := Checker{NoShrink: true, Limits: checker.Limits{MaxDerived: 1 << 30}}.Run(context.Background(), ix, ser)
			if err != nil {
				t.Fatal(err)
			}
			a, ok := Checker{Limits: checker.Limits{MaxDerived: 1 << 30}}.unsatSearch(context.Background(), ix, ser)
			if ok && len(full) == 0 {
				t.Fatalf("seed %d fault %g: a window violates, the whole history holds: %v", seed, fault, a)
			}
			if len(full) > 0 {
				violating++
				if ok {
					found++
				}
				continue
			}
			if got, _, err := (Checker{Limits: checker.Limits{MaxDerived: -1}}).Run(context.Background(), ix, ser); len(got) > 0 || err == nil {
				t.Fatalf("seed %d: over the bound, a history that holds gave %v, %v", seed, got, err)
			}
		}
	}
	t.Logf("windows found %d of %d violations", found, violating)
	if found == 0 {
		t.Fatal("the unsat search found no violation")
	}
}
