package cdcl

import (
	"math/rand/v2"
	"testing"
)

// bruteSat decides clauses (plus, when edges are given, acyclicity of the
// edges whose literal is true) by enumerating assignments.
func bruteSat(nvars int, clauses [][]Lit, nodes int, edges [][3]int32) bool {
	for m := 0; m < 1<<nvars; m++ {
		val := func(l Lit) bool { return (m>>l.Var()&1 == 1) == l.IsPos() }
		ok := true
		for _, c := range clauses {
			sat := false
			for _, l := range c {
				sat = sat || val(l)
			}
			if !sat {
				ok = false
				break
			}
		}
		if ok && edges != nil {
			ok = acyclicUnder(nodes, edges, val)
		}
		if ok {
			return true
		}
	}
	return false
}

func acyclicUnder(nodes int, edges [][3]int32, val func(Lit) bool) bool {
	indeg := make([]int, nodes)
	adj := make([][]int32, nodes)
	for _, e := range edges {
		if e[2] < 0 || val(Lit(e[2])) {
			adj[e[0]] = append(adj[e[0]], e[1])
			indeg[e[1]]++
		}
	}
	var q []int32
	for v := range nodes {
		if indeg[v] == 0 {
			q = append(q, int32(v))
		}
	}
	seen := 0
	for len(q) > 0 {
		v := q[0]
		q = q[1:]
		seen++
		for _, w := range adj[v] {
			if indeg[w]--; indeg[w] == 0 {
				q = append(q, w)
			}
		}
	}
	return seen == nodes
}

func randomClauses(r *rand.Rand, nvars, n, width int) [][]Lit {
	var out [][]Lit
	for range n {
		var c []Lit
		for range 1 + r.IntN(width) {
			l := Pos(Var(r.IntN(nvars)))
			if r.IntN(2) == 0 {
				l = l.Not()
			}
			c = append(c, l)
		}
		out = append(out, c)
	}
	return out
}

func TestRandomCNF(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 1))
		nvars := 3 + r.IntN(10)
		cls := randomClauses(r, nvars, nvars*4+r.IntN(8), 3)
		s := New()
		for range nvars {
			s.NewVar()
		}
		for _, c := range cls {
			s.AddClause(c...)
		}
		got := s.Solve()
		want := bruteSat(nvars, cls, 0, nil)
		if (got == Sat) != want {
			t.Fatalf("seed %d: solver %s, brute force %v", seed, got, want)
		}
		if got == Sat {
			for _, c := range cls {
				ok := false
				for _, l := range c {
					ok = ok || s.Value(l.Var()) == l.IsPos()
				}
				if !ok {
					t.Fatalf("seed %d: model violates %v", seed, c)
				}
			}
		}
	}
}

func TestRandomAcyclic(t *testing.T) {
	sat, unsat := 0, 0
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 2))
		nvars, nodes := 2+r.IntN(7), 2+r.IntN(5)
		cls := randomClauses(r, nvars, r.IntN(nvars*2), 3)
		var edges [][3]int32
		for range r.IntN(12) {
			lit := int32(-1)
			if r.IntN(5) > 0 {
				lit = int32(r.IntN(2 * nvars))
			}
			edges = append(edges, [3]int32{int32(r.IntN(nodes)), int32(r.IntN(nodes)), lit})
		}
		s := New()
		for range nvars {
			s.NewVar()
		}
		th := NewAcyclic(nodes)
		for _, e := range edges {
			if e[2] < 0 {
				th.AddFixedEdge(e[0], e[1])
			} else {
				th.AddEdge(e[0], e[1], Lit(e[2]))
			}
		}
		s.SetTheory(th)
		for _, c := range cls {
			s.AddClause(c...)
		}
		got := s.Solve()
		want := bruteSat(nvars, cls, nodes, edges)
		if (got == Sat) != want {
			t.Fatalf("seed %d: solver %s, brute force %v; clauses %v edges %v", seed, got, want, cls, edges)
		}
		if got == Sat {
			sat++
			if !acyclicUnder(nodes, edges, func(l Lit) bool { return s.Value(l.Var()) == l.IsPos() }) {
				t.Fatalf("seed %d: model's graph is cyclic", seed)
			}
		} else {
			unsat++
		}
	}
	if sat < 300 || unsat < 300 {
		t.Errorf("unbalanced: %d sat, %d unsat", sat, unsat)
	}
}

// TestPigeonhole: n+1 pigeons do not fit n holes.
func TestPigeonhole(t *testing.T) {
	for n := 3; n <= 6; n++ {
		s := New()
		v := func(p, h int) Var { return Var(p*n + h) }
		for range (n + 1) * n {
			s.NewVar()
		}
		for p := range n + 1 {
			var c []Lit
			for h := range n {
				c = append(c, Pos(v(p, h)))
			}
			s.AddClause(c...)
		}
		for h := range n {
			for p := range n + 1 {
				for q := p + 1; q <= n; q++ {
					s.AddClause(Neg(v(p, h)), Neg(v(q, h)))
				}
			}
		}
		if got := s.Solve(); got != Unsat {
			t.Errorf("PHP(%d,%d): %s", n+1, n, got)
		}
	}
}
