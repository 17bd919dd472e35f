package acyclic_test

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/sat"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
	"github.com/isoscope/isoscope/internal/sat/sattest"
)

// edge is from, to and literal (-1 for a fixed edge).
type edge [3]int32

// acyclicUnder reports whether the edges present under val form no cycle
// (Kahn's algorithm).
func acyclicUnder(nodes int, edges []edge, val func(sat.Lit) bool) bool {
	indeg := make([]int, nodes)
	adj := make([][]int32, nodes)
	for _, e := range edges {
		if e[2] < 0 || val(sat.Lit(e[2])) {
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

// TestRandomAgainstBruteForce: random clauses with random edge literals
// (and fixed edges), decided by the solver with the theory and by brute
// force; a model's graph must be acyclic.
func TestRandomAgainstBruteForce(t *testing.T) {
	for _, cfg := range []struct{ noPhase, ranked bool }{{false, false}, {true, false}, {false, true}} {
		noPhase := cfg.noPhase
		sats, unsats := 0, 0
		for seed := range uint64(3000) {
			r := rand.New(rand.NewPCG(seed, 2))
			nvars, nodes := 2+r.IntN(7), 2+r.IntN(5)
			cls := sattest.RandomClauses(r, nvars, r.IntN(nvars*2), 3)
			var edges []edge
			for range r.IntN(12) {
				lit := int32(-1)
				if r.IntN(5) > 0 {
					lit = int32(r.IntN(2 * nvars))
				}
				edges = append(edges, edge{int32(r.IntN(nodes)), int32(r.IntN(nodes)), lit})
			}
			th := acyclic.New(nodes)
			th.NoPhase = noPhase
			if cfg.ranked {
				rank := make([]int32, nodes)
				for i := range rank {
					rank[i] = int32(r.IntN(3))
				}
				th.SetRank(rank)
			}
			for _, e := range edges {
				if e[2] < 0 {
					th.AddFixedEdge(e[0], e[1])
				} else {
					th.AddEdge(e[0], e[1], sat.Lit(e[2]))
				}
			}
			s := sat.New()
			s.ChronoAfter = [3]int{1, 0, -1}[seed%3] // forced, default, off
			for range nvars {
				s.NewVar()
			}
			s.SetTheory(th)
			for _, c := range cls {
				s.AddClause(c...)
			}
			got := s.Solve()
			want := sattest.Brute(nvars, cls, func(val func(sat.Lit) bool) bool { return acyclicUnder(nodes, edges, val) })
			if (got == sat.Sat) != want {
				t.Fatalf("seed %d: solver %s, brute force %v; clauses %v edges %v", seed, got, want, cls, edges)
			}
			if got == sat.Sat {
				sats++
				if !acyclicUnder(nodes, edges, sattest.Model(s)) {
					t.Fatalf("seed %d: the model's graph is cyclic", seed)
				}
			} else {
				unsats++
			}
		}
		if sats < 300 || unsats < 300 {
			t.Errorf("unbalanced: %d sat, %d unsat", sats, unsats)
		}
	}
}

// TestRankOrdersTheStart: the initial order places the nodes the fixed
// edges leave free by rank, and the fixed edges still go forward; Phase
// follows that order.
func TestRankOrdersTheStart(t *testing.T) {
	th := acyclic.New(4)
	th.SetRank([]int32{3, 2, 1, 0})
	th.AddFixedEdge(0, 2)
	s := sat.New()
	a, b := s.NewVar(), s.NewVar()
	th.AddEdge(0, 1, sat.Pos(a)) // against the rank: 1 comes before 0
	th.AddEdge(1, 0, sat.Neg(a))
	th.AddEdge(0, 2, sat.Neg(b)) // with the fixed edge
	th.AddEdge(2, 0, sat.Pos(b))
	if th.Contradicted() {
		t.Fatal("no cycle among the fixed edges")
	}
	if pos, ok := th.Phase(a); !ok || pos {
		t.Errorf("Phase(a) = %v, %v; want false (1 before 0 by rank)", pos, ok)
	}
	if pos, ok := th.Phase(b); !ok || pos {
		t.Errorf("Phase(b) = %v, %v; want false (0 before 2 by the fixed edge)", pos, ok)
	}
	unranked := acyclic.New(4)
	unranked.AddEdge(0, 1, sat.Pos(a))
	unranked.AddEdge(1, 0, sat.Neg(a))
	unranked.Contradicted()
	if pos, ok := unranked.Phase(a); !ok || !pos {
		t.Errorf("unranked Phase(a) = %v, %v; want true (breadth first: 0 before 1)", pos, ok)
	}
}

// TestConflictIsCycle: with three edges forming a cycle forced true, the
// solver answers unsat and the theory's last conflict names the cycle's
// three literals.
func TestConflictIsCycle(t *testing.T) {
	s := sat.New()
	a, b, c := s.NewVar(), s.NewVar(), s.NewVar()
	th := acyclic.New(3)
	th.AddEdge(0, 1, sat.Pos(a))
	th.AddEdge(1, 2, sat.Pos(b))
	th.AddEdge(2, 0, sat.Pos(c))
	s.SetTheory(th)
	if got := s.SolveAssuming(sat.Pos(a), sat.Pos(b), sat.Pos(c)); got != sat.Unsat {
		t.Fatalf("%s, want unsat", got)
	}
	if len(s.LastConflict) != 3 {
		t.Fatalf("conflict %v, want the three edge literals", s.LastConflict)
	}
	if len(s.Failed()) != 3 {
		t.Errorf("failed assumptions %v, want all three", s.Failed())
	}
	if got := s.Solve(); got != sat.Sat {
		t.Errorf("without the assumptions: %s, want sat", got)
	}
}

// TestChronologicalAgrees: on instances too large for brute force, the
// solver backtracking chronologically at every chance agrees with the one
// that never does, and its models' graphs are acyclic.
func TestChronologicalAgrees(t *testing.T) {
	var chrono int64
	sats := 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 6))
		nvars, nodes := 40+r.IntN(20), 20+r.IntN(20)
		var cls [][]sat.Lit
		for range 3 * nvars {
			var c []sat.Lit
			for len(c) < 3 {
				c = append(c, sattest.RandomClauses(r, nvars, 1, 1)[0]...)
			}
			cls = append(cls, c)
		}
		var edges []edge
		for range 3 * nvars {
			u, v := int32(r.IntN(nodes)), int32(r.IntN(nodes))
			if u > v && r.IntN(6) > 0 {
				u, v = v, u // mostly forward: cycles need the rarer back edges
			}
			edges = append(edges, edge{u, v, int32(r.IntN(2 * nvars))})
		}
		solve := func(after int) *sat.Solver {
			th := acyclic.New(nodes)
			for _, e := range edges {
				th.AddEdge(e[0], e[1], sat.Lit(e[2]))
			}
			s := sattest.Solver(nvars, cls)
			s.ChronoAfter = after
			s.SetTheory(th)
			return s
		}
		forced, classic := solve(1), solve(-1)
		got, want := forced.Solve(), classic.Solve()
		if got != want {
			t.Fatalf("seed %d: chronological %s, classic %s", seed, got, want)
		}
		if got == sat.Sat {
			sats++
			if !acyclicUnder(nodes, edges, sattest.Model(forced)) || !sattest.Satisfies(cls, sattest.Model(forced)) {
				t.Fatalf("seed %d: a bad model", seed)
			}
		}
		chrono += forced.Stats().Chrono
	}
	t.Logf("%d of 300 satisfiable, %d chronological backtracks", sats, chrono)
	if chrono == 0 || sats == 0 || sats == 300 {
		t.Fatalf("not exercised: %d satisfiable, %d chronological backtracks", sats, chrono)
	}
}
