package check_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestDifferentialStrongerFirst: cursor stability, PL-2+, PL-FCV and
// repeatable read are first checked at a stronger level (snapshot
// isolation; serializability for repeatable read), which decides them
// when it holds. On stale-snapshot register histories — many satisfy the
// stronger level, many violate it and still satisfy the weak one, many
// violate both — the automatic check agrees with the oracle, a verdict
// reached through the stronger level is one the oracle gives that level
// too, and both ways of deciding are taken often.
func TestDifferentialStrongerFirst(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 300
	}
	weak := []level.ID{level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead}
	viaStronger, weakOnly, violations := 0, 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 67))
		h := staleRegisters(r, 2+r.IntN(5), 1+r.IntN(3), 1+r.IntN(3), int(seed%3))
		for _, id := range weak {
			want, err := reference.Check(h, id)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{})
			if err != nil {
				t.Fatalf("seed %d %s: %v\n%s", seed, id, err, history.Notation(h))
			}
			if got := res.Outcome == check.Satisfied; got != want {
				t.Fatalf("seed %d %s (%s): satisfied=%v, oracle %v; %s\n%s", seed, id, res.Checker, got, want, kinds(res), history.Notation(h))
			}
			if !want {
				violations++
				continue
			}
			if res.CheckedAt == nil {
				weakOnly++
				continue
			}
			viaStronger++
			if !res.CheckedAt.Implies(id) {
				t.Fatalf("seed %d %s: decided at %s, which does not imply it", seed, id, res.CheckedAt.Name)
			}
			strong, err := reference.Check(h, res.CheckedAt.ID)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			if !strong {
				t.Fatalf("seed %d %s: decided through %s, which the oracle refutes\n%s", seed, id, res.CheckedAt.Name, history.Notation(h))
			}
		}
	}
	total := n * len(weak)
	if viaStronger < total/10 || weakOnly < total/20 || violations < total/10 {
		t.Errorf("unbalanced generator: of %d verdicts %d decided at the stronger level, %d holding only at their own, %d violations", total, viaStronger, weakOnly, violations)
	}
	t.Logf("%d verdicts: %d decided at the stronger level, %d holding only at their own, %d violations", total, viaStronger, weakOnly, violations)
}
