package cdcl

import (
	"math/rand/v2"
	"testing"
)

// TestLargerRandom3SAT exercises learning, restarts and clause deletion on
// instances near the satisfiability threshold, against brute force.
func TestLargerRandom3SAT(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 3))
		nvars := 12 + r.IntN(5)
		var cls [][]Lit
		for range int(4.26 * float64(nvars)) {
			c := make([]Lit, 3)
			for i := range c {
				c[i] = Pos(Var(r.IntN(nvars)))
				if r.IntN(2) == 0 {
					c[i] = c[i].Not()
				}
			}
			cls = append(cls, c)
		}
		s := New()
		for range nvars {
			s.NewVar()
		}
		for _, c := range cls {
			s.AddClause(c...)
		}
		if got, want := s.Solve(), bruteSat(nvars, cls, 0, nil); (got == Sat) != want {
			t.Fatalf("seed %d: %s, brute force %v", seed, got, want)
		}
	}
}
