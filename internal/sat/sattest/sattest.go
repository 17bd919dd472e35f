// Package sattest holds what the solver's tests and its theories' tests
// share: random formulas and a brute-force decision procedure.
package sattest

import (
	"math/rand/v2"

	"github.com/isoscope/isoscope/internal/sat"
)

// Brute decides the clauses over nvars variables by enumerating every
// assignment; extra, when not nil, must also accept the assignment (a
// theory's condition). It suits nvars up to about 20.
func Brute(nvars int, clauses [][]sat.Lit, extra func(val func(sat.Lit) bool) bool) bool {
	for m := 0; m < 1<<nvars; m++ {
		val := func(l sat.Lit) bool { return (m>>l.Var()&1 == 1) == l.IsPos() }
		if Satisfies(clauses, val) && (extra == nil || extra(val)) {
			return true
		}
	}
	return false
}

// Satisfies reports whether val makes every clause true.
func Satisfies(clauses [][]sat.Lit, val func(sat.Lit) bool) bool {
	for _, c := range clauses {
		ok := false
		for _, l := range c {
			if val(l) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// RandomClauses returns n clauses of 1..width random literals over nvars
// variables.
func RandomClauses(r *rand.Rand, nvars, n, width int) [][]sat.Lit {
	out := make([][]sat.Lit, 0, n)
	for range n {
		c := make([]sat.Lit, 1+r.IntN(width))
		for i := range c {
			c[i] = sat.Pos(sat.Var(r.IntN(nvars)))
			if r.IntN(2) == 0 {
				c[i] = c[i].Not()
			}
		}
		out = append(out, c)
	}
	return out
}

// Solver returns a solver over nvars variables holding the clauses.
func Solver(nvars int, clauses [][]sat.Lit) *sat.Solver {
	s := sat.New()
	for range nvars {
		s.NewVar()
	}
	for _, c := range clauses {
		s.AddClause(c...)
	}
	return s
}

// Model returns the solver's model as a literal valuation.
func Model(s *sat.Solver) func(sat.Lit) bool {
	return func(l sat.Lit) bool { return s.Value(l.Var()) == l.IsPos() }
}
