package check_test

import (
	"context"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/level"
)

// TestMeterShowsTheSolver: a check that reaches the solver shows its
// searches on the meter its context carries, and the meter does not
// change the verdict.
func TestMeterShowsTheSolver(t *testing.T) {
	h := readBlindW600(t)
	l := level.Get(level.Serializable)
	plain, err := check.Run(context.Background(), h, l, check.Options{Checker: "sat"})
	if err != nil {
		t.Fatal(err)
	}
	m := &checker.Meter{}
	metered, err := check.Run(checker.WithMeter(context.Background(), m), h, l, check.Options{Checker: "sat"})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Outcome != metered.Outcome || len(plain.Anomalies) != len(metered.Anomalies) {
		t.Errorf("metered: %v with %d anomalies; without: %v with %d", metered.Outcome, len(metered.Anomalies), plain.Outcome, len(plain.Anomalies))
	}
	if m.Solves.Load() == 0 || m.Vars.Load() == 0 || m.Clauses.Load() == 0 || m.Phase() == "" {
		t.Errorf("the meter saw no search: %d searches, %d variables, %d clauses, phase %q", m.Solves.Load(), m.Vars.Load(), m.Clauses.Load(), m.Phase())
	}
	var none *checker.Meter // a nil meter takes every update
	none.SetPhase("x")
	none.Solving(1, 1)
	if none.Phase() != "" {
		t.Error("a nil meter has a phase")
	}
}
