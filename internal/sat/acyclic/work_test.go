package acyclic_test

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/sat"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
)

// workInstance builds a solver over a random instance of the Classed
// theory: edges of every class on conditioned literals, with clauses that
// make each variable's choice matter.
func workInstance(seed uint64, limit int64) *sat.Solver {
	r := rand.New(rand.NewPCG(seed, 7))
	const nodes, nvars = 60, 120
	s := sat.New()
	for range nvars {
		s.NewVar()
	}
	th := acyclic.NewClassed(nodes, acyclic.NoSingleAnti)
	for range 400 {
		from, to := int32(r.IntN(nodes)), int32(r.IntN(nodes))
		lit := sat.Pos(sat.Var(r.IntN(nvars)))
		if r.IntN(2) == 0 {
			lit = lit.Not()
		}
		th.AddEdge(from, to, lit, acyclic.Class(r.IntN(3)))
	}
	s.SetTheory(th)
	for range 200 {
		a, b := sat.Pos(sat.Var(r.IntN(nvars))), sat.Pos(sat.Var(r.IntN(nvars)))
		if r.IntN(2) == 0 {
			b = b.Not()
		}
		s.AddClause(a, b)
	}
	s.WorkLimit = limit
	return s
}

// TestWorkLimit: a search bounded by WorkLimit stops undecided once the
// work — propagations plus the theory's scanned edges — reaches it (it is
// looked at between decisions and after conflicts, so a verdict met in
// between still stands), and at the same point every time; without the
// bound it decides.
func TestWorkLimit(t *testing.T) {
	stopped := 0
	for seed := range uint64(60) {
		free := workInstance(seed, 0)
		want := free.Solve()
		if want == sat.Unknown || free.LimitReached() {
			t.Fatalf("seed %d: unbounded search undecided", seed)
		}
		w := free.Stats().Work
		if w < 10 {
			continue
		}
		var first sat.Stats
		for run := range 2 {
			s := workInstance(seed, w/2)
			switch got := s.Solve(); {
			case got == sat.Unknown:
				if !s.LimitReached() || s.Stats().Work < w/2 {
					t.Fatalf("seed %d: undecided at work %d, under the limit %d", seed, s.Stats().Work, w/2)
				}
				if run == 0 {
					stopped++
				}
			case got != want:
				t.Fatalf("seed %d: %v with a work limit, %v without", seed, got, want)
			}
			if run == 0 {
				first = s.Stats()
			} else if s.Stats() != first {
				t.Fatalf("seed %d: two bounded runs differ: %+v and %+v", seed, first, s.Stats())
			}
		}
	}
	if stopped < 10 {
		t.Fatalf("only %d instances were stopped by half their work", stopped)
	}
}
