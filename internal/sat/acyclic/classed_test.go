package acyclic_test

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/sat"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
	"github.com/isoscope/isoscope/internal/sat/sattest"
)

// classedEdge is from, to, literal (-1 fixed) and class.
type classedEdge [4]int32

// allowedUnder reports, by enumerating every simple cycle of the edges
// present under val, whether rule forbids none of them.
func allowedUnder(nodes int, edges []classedEdge, val func(sat.Lit) bool, rule acyclic.Rule) bool {
	var present []classedEdge
	for _, e := range edges {
		if e[2] < 0 || val(sat.Lit(e[2])) {
			present = append(present, e)
		}
	}
	// Simple cycles through their smallest node s: paths from s over
	// nodes > s back to s.
	var onPath [8]bool
	var dfs func(s, v int32, items, preds, orders int) bool
	dfs = func(s, v int32, items, preds, orders int) bool {
		for _, e := range present {
			if e[0] != v {
				continue
			}
			i, p, o := items, preds, orders
			switch acyclic.Class(e[3]) {
			case acyclic.ItemAnti:
				i++
			case acyclic.PredAnti:
				p++
			case acyclic.Order:
				o++
			}
			w := e[1]
			if w == s {
				if rule.Forbids(i, p, o) {
					return true
				}
				continue
			}
			if w < s || onPath[w] {
				continue
			}
			onPath[w] = true
			bad := dfs(s, w, i, p, o)
			onPath[w] = false
			if bad {
				return true
			}
		}
		return false
	}
	for s := range int32(nodes) {
		if dfs(s, s, 0, 0, 0) {
			return false
		}
	}
	return true
}

// TestClassedAgainstBruteForce: random clauses and classed edges, decided
// by the solver with the Classed theory and by enumerating every
// assignment and every simple cycle; a model's graph must hold no
// forbidden cycle, and a conflict's walk must simplify to a forbidden
// simple cycle.
func TestClassedAgainstBruteForce(t *testing.T) {
	for _, rule := range []acyclic.Rule{acyclic.NoSingleAnti, acyclic.NoItemAnti, acyclic.NoCausalAnti} {
		sats, unsats := 0, 0
		for seed := range uint64(3000) {
			r := rand.New(rand.NewPCG(seed, uint64(rule)))
			nvars, nodes := 2+r.IntN(7), 2+r.IntN(5)
			cls := sattest.RandomClauses(r, nvars, r.IntN(nvars*2), 3)
			var edges []classedEdge
			for range r.IntN(14) {
				lit := int32(-1)
				if r.IntN(4) > 0 {
					lit = int32(r.IntN(2 * nvars))
				}
				edges = append(edges, classedEdge{int32(r.IntN(nodes)), int32(r.IntN(nodes)), lit, int32(r.IntN(4))})
			}
			th := acyclic.NewClassed(nodes, rule)
			for _, e := range edges {
				if e[2] < 0 {
					th.AddFixedEdge(e[0], e[1], acyclic.Class(e[3]))
				} else {
					th.AddEdge(e[0], e[1], sat.Lit(e[2]), acyclic.Class(e[3]))
				}
			}
			s := sattest.Solver(nvars, cls)
			s.ChronoAfter = [3]int{1, 0, -1}[seed%3]
			s.SetTheory(th)
			got := s.Solve()
			want := sattest.Brute(nvars, cls, func(val func(sat.Lit) bool) bool { return allowedUnder(nodes, edges, val, rule) })
			if (got == sat.Sat) != want {
				t.Fatalf("rule %d seed %d: solver %s, brute force %v; clauses %v edges %v", rule, seed, got, want, cls, edges)
			}
			if got == sat.Sat {
				sats++
				if !allowedUnder(nodes, edges, sattest.Model(s), rule) {
					t.Fatalf("rule %d seed %d: the model's graph holds a forbidden cycle", rule, seed)
				}
				continue
			}
			unsats++
			if w := th.Violation(); w != nil {
				checkForbiddenCycle(t, th, th.Simple(w), rule, seed)
			}
		}
		if sats < 300 || unsats < 300 {
			t.Errorf("rule %d unbalanced: %d sat, %d unsat", rule, sats, unsats)
		}
	}
}

// checkForbiddenCycle fails unless cyc is a simple cycle the rule forbids.
func checkForbiddenCycle(t *testing.T, th *acyclic.Classed, cyc []int32, rule acyclic.Rule, seed uint64) {
	t.Helper()
	items, preds, orders := 0, 0, 0
	seen := map[int32]bool{}
	for i, g := range cyc {
		from, to, _, cl := th.Edge(g)
		nf, _, _, _ := th.Edge(cyc[(i+1)%len(cyc)])
		if to != nf || seen[from] {
			t.Fatalf("rule %d seed %d: %v is not a simple cycle", rule, seed, cyc)
		}
		seen[from] = true
		switch cl {
		case acyclic.ItemAnti:
			items++
		case acyclic.PredAnti:
			preds++
		case acyclic.Order:
			orders++
		}
	}
	if !rule.Forbids(items, preds, orders) {
		t.Fatalf("rule %d seed %d: cycle %v is allowed", rule, seed, cyc)
	}
}

// TestClassedRules: the cycles each rule allows and forbids, edge by edge.
func TestClassedRules(t *testing.T) {
	d, i, p, o := acyclic.Dep, acyclic.ItemAnti, acyclic.PredAnti, acyclic.Order
	cases := []struct {
		name    string
		rule    acyclic.Rule
		classes []acyclic.Class // a cycle 0 → 1 → … → 0
		bad     bool
	}{
		{"dependency cycle at PL-2+", acyclic.NoSingleAnti, []acyclic.Class{d, d, d}, true},
		{"G-single", acyclic.NoSingleAnti, []acyclic.Class{d, i, d}, true},
		{"G-single through a predicate", acyclic.NoSingleAnti, []acyclic.Class{p, d}, true},
		{"two anti-dependencies at PL-2+", acyclic.NoSingleAnti, []acyclic.Class{i, d, i}, false},
		{"dependency cycle at PL-2.99", acyclic.NoItemAnti, []acyclic.Class{d, d}, true},
		{"G2-item", acyclic.NoItemAnti, []acyclic.Class{i, i}, true},
		{"G2-item with a predicate", acyclic.NoItemAnti, []acyclic.Class{p, d, i}, true},
		{"predicate anti-dependencies only", acyclic.NoItemAnti, []acyclic.Class{p, d, p}, false},
		{"an order edge is a dependency at PL-2+", acyclic.NoSingleAnti, []acyclic.Class{o, i, d}, true},
		{"dependency and order cycle at causal", acyclic.NoCausalAnti, []acyclic.Class{d, o, d}, true},
		{"a read that missed a causal predecessor", acyclic.NoCausalAnti, []acyclic.Class{d, d, i}, true},
		{"through a predicate", acyclic.NoCausalAnti, []acyclic.Class{p, d}, true},
		{"a missed version ordered only by ww (allowed)", acyclic.NoCausalAnti, []acyclic.Class{o, d, i}, false},
		{"long fork: two anti-dependencies (allowed)", acyclic.NoCausalAnti, []acyclic.Class{d, i, d, i}, false},
	}
	for _, tc := range cases {
		for rot := range tc.classes {
			// The last edge assigned closes the cycle; rotate which it is.
			n := len(tc.classes)
			th := acyclic.NewClassed(n, tc.rule)
			s := sat.New()
			var lits []sat.Lit
			for k := range n {
				j := (k + rot) % n
				v := s.NewVar()
				th.AddEdge(int32(j), int32((j+1)%n), sat.Pos(v), tc.classes[j])
				lits = append(lits, sat.Pos(v))
			}
			s.SetTheory(th)
			got := s.SolveAssuming(lits...)
			if (got == sat.Unsat) != tc.bad {
				t.Errorf("%s (rotation %d): %s", tc.name, rot, got)
			}
			if tc.bad && len(s.LastConflict) != n {
				t.Errorf("%s (rotation %d): conflict %v, want the %d edge literals", tc.name, rot, s.LastConflict, n)
			}
		}
	}
}
