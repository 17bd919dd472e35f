package ir_test

import (
	"math/bits"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/ir"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/sat"
)

// TestSuperpositionIsExactlyOne: for every size (past the pairwise
// encoding too) and every kind of Unless, the lowered clauses admit an
// assignment of the options exactly when one holds (none when Unless is
// true).
func TestSuperpositionIsExactlyOne(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, unless := range []string{"never", "var", "always"} {
			g := ir.New(1)
			opts := make([]sat.Lit, n)
			for i := range opts {
				opts[i] = sat.Pos(g.NewVar())
			}
			u := ir.False
			var uLit sat.Lit
			switch unless {
			case "var":
				uLit = sat.Pos(g.NewVar())
				u = ir.When(uLit)
			case "always":
				u = ir.True
			}
			g.Superpose(opts, u)
			low := g.Lower(ir.Options{})
			for mask := range 1 << n {
				for _, uOn := range []bool{false, true} {
					if unless != "var" && uOn {
						continue
					}
					var as []sat.Lit
					for i, o := range opts {
						if mask>>i&1 == 1 {
							as = append(as, o)
						} else {
							as = append(as, o.Not())
						}
					}
					none := unless == "always" || uOn
					if unless == "var" {
						if uOn {
							as = append(as, uLit)
						} else {
							as = append(as, uLit.Not())
						}
					}
					want := bits.OnesCount(uint(mask)) == 1 && !none || mask == 0 && none
					if got := low.S.SolveAssuming(as...) == sat.Sat; got != want {
						t.Fatalf("n=%d unless=%s(%v) mask=%b: satisfiable=%v, want %v", n, unless, uOn, mask, got, want)
					}
				}
			}
		}
	}
}

// TestAndIsConjunction: And's variable is true exactly when both are, and
// it is defined once per pair.
func TestAndIsConjunction(t *testing.T) {
	g := ir.New(1)
	x, y := sat.Pos(g.NewVar()), sat.Pos(g.NewVar())
	z := g.And(ir.When(x), ir.When(y.Not()))
	if again := g.And(ir.When(y.Not()), ir.When(x)); again != z {
		t.Fatalf("And defined twice: %v and %v", z, again)
	}
	if g.And(ir.True, ir.When(x)) != ir.When(x) || g.And(ir.False, ir.When(x)) != ir.False {
		t.Fatal("constants not folded")
	}
	low := g.Lower(ir.Options{})
	for _, xv := range []bool{false, true} {
		for _, yv := range []bool{false, true} {
			for _, zv := range []bool{false, true} {
				as := []sat.Lit{lit(x, xv), lit(y, yv), lit(z.Lit, zv)}
				want := zv == (xv && !yv)
				if got := low.S.SolveAssuming(as...) == sat.Sat; got != want {
					t.Fatalf("x=%v y=%v z=%v: satisfiable=%v", xv, yv, zv, got)
				}
			}
		}
	}
}

func lit(l sat.Lit, v bool) sat.Lit {
	if v {
		return l
	}
	return l.Not()
}

// TestCycleThroughConditions: conditioned edges that close a cycle make the
// lowered problem unsatisfiable once their conditions are forced, and
// Present returns the cycle's edges from the conflict.
func TestCycleThroughConditions(t *testing.T) {
	g := ir.New(3)
	a, b := sat.Pos(g.NewVar()), sat.Pos(g.NewVar())
	g.Edge(0, 1, anomaly.WW, history.NoKey, ir.True)
	g.Edge(1, 2, anomaly.WR, 0, ir.When(a))
	g.Edge(2, 0, anomaly.RW, 0, g.And(ir.When(a), ir.When(b)))
	g.Edge(2, 1, anomaly.RW, 0, ir.False) // never holds: dropped
	if g.NumEdges() != 3 {
		t.Fatalf("%d edges, want 3", g.NumEdges())
	}
	g.Clause(a)
	g.Clause(b)
	low := g.Lower(ir.Options{})
	if low.S.Solve() != sat.Unsat {
		t.Fatal("a forced cycle is satisfiable")
	}
	present := g.Present(low.S.LastConflict)
	if len(present) != 3 {
		t.Fatalf("conflict %v gives edges %v, want the 3 of the cycle", low.S.LastConflict, present)
	}
}
