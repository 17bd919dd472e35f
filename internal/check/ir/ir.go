// Package ir is the low-level intermediate representation between a
// history's abstract semantic graph and the solver (Boomslang §5 and
// Appendix A): a graph whose edges are known or hold under a condition,
// logic over boolean variables (clauses and conjunctions), and
// superpositions — sets of options of which exactly one holds (a read's
// candidate writers, an order between two writers). A front-end builds one
// Graph; Lower turns it into clauses for the CDCL(T) solver and edges for
// its acyclicity theory: every isolation level the solver decides goes
// through this one lowering, and a level is only a choice of which edges
// enter the graph.
//
// Variables and literals are the solver's (sat.Var, sat.Lit), numbered the
// same, so that a solver's conflict maps back to the IR's edges without a
// table.
package ir

import (
	"iter"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/sat"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
)

// Cond is when an edge or option holds: always, never, or when a literal
// is true.
type Cond struct {
	// Lit is the literal, when Const is 0.
	Lit sat.Lit
	// Const is +1 (always), -1 (never) or 0 (when Lit).
	Const int8
}

// True and False are the constant conditions.
var (
	True  = Cond{Const: 1}
	False = Cond{Const: -1}
)

// When is the condition that l is true.
func When(l sat.Lit) Cond { return Cond{Lit: l} }

// Not negates c.
func (c Cond) Not() Cond {
	if c.Const != 0 {
		return Cond{Const: -c.Const}
	}
	return Cond{Lit: c.Lit.Not()}
}

// Edge is a dependency between two graph nodes that holds under When.
type Edge struct {
	From, To int32
	Dep      anomaly.Dep
	Key      history.KeyID
	When     Cond
}

// Superposition is a set of options of which exactly one holds — unless
// Unless (when set) is true, and then none does (the superposition of an
// operation whose transaction may not have taken effect).
type Superposition struct {
	Options []sat.Lit
	Unless  Cond
}

// Graph is the IR of one check.
type Graph struct {
	// Nodes is the number of graph nodes.
	Nodes int32
	// edges are the graph's edges, known (When True) or conditioned, in
	// chunks so that millions of them are never copied to grow.
	edges  [][]Edge
	nedges int
	// Clauses are the logic expressions over the variables, in CNF.
	Clauses [][]sat.Lit
	// Superpositions are the exactly-one choices.
	Superpositions []Superposition
	// Rank, when set, holds a rank per node: the theory's initial
	// topological order prefers nodes of lower rank (acyclic.Theory.SetRank).
	Rank []int32
	vars int
	ands map[[2]sat.Lit]sat.Lit
}

// New returns an empty IR over nodes graph nodes.
func New(nodes int32) *Graph {
	return &Graph{Nodes: nodes, ands: map[[2]sat.Lit]sat.Lit{}}
}

// NewVar returns a fresh variable.
func (g *Graph) NewVar() sat.Var {
	g.vars++
	return sat.Var(g.vars - 1)
}

// Vars returns how many variables the IR has.
func (g *Graph) Vars() int { return g.vars }

// Clause adds the expression l1 ∨ l2 ∨ ….
func (g *Graph) Clause(lits ...sat.Lit) {
	g.Clauses = append(g.Clauses, lits)
}

// And returns a condition equivalent to x ∧ y, defining a variable for it
// once per pair of literals.
func (g *Graph) And(x, y Cond) Cond {
	switch {
	case x.Const < 0 || y.Const < 0:
		return False
	case x.Const > 0:
		return y
	case y.Const > 0:
		return x
	}
	a, b := min(x.Lit, y.Lit), max(x.Lit, y.Lit)
	if z, ok := g.ands[[2]sat.Lit{a, b}]; ok {
		return When(z)
	}
	z := sat.Pos(g.NewVar())
	g.ands[[2]sat.Lit{a, b}] = z
	g.Clause(a.Not(), b.Not(), z)
	g.Clause(z.Not(), a)
	g.Clause(z.Not(), b)
	return When(z)
}

// edgeChunk is how many edges one chunk holds.
const edgeChunk = 1 << 14

// Edge adds an edge that holds under when; one that never holds is
// dropped.
func (g *Graph) Edge(from, to int32, d anomaly.Dep, k history.KeyID, when Cond) {
	if when.Const < 0 {
		return
	}
	if len(g.edges) == 0 {
		// A small history's graph stays small: the first chunk grows as
		// append grows it, up to edgeChunk, and only the later ones are
		// made whole.
		g.edges = append(g.edges, make([]Edge, 0, 64))
	}
	last := &g.edges[len(g.edges)-1]
	if len(*last) == edgeChunk {
		g.edges = append(g.edges, make([]Edge, 0, edgeChunk))
		last = &g.edges[len(g.edges)-1]
	}
	*last = append(*last, Edge{from, to, d, k, when})
	g.nedges++
}

// NumEdges returns how many edges the graph has.
func (g *Graph) NumEdges() int { return g.nedges }

// Edges yields every edge, in the order added.
func (g *Graph) Edges() iter.Seq[Edge] {
	return func(yield func(Edge) bool) {
		for _, chunk := range g.edges {
			for _, e := range chunk {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// Superpose adds a superposition: exactly one of options holds, or none
// when unless holds.
func (g *Graph) Superpose(options []sat.Lit, unless Cond) {
	g.Superpositions = append(g.Superpositions, Superposition{Options: options, Unless: unless})
}

// Lowered is an IR turned into a solver and its acyclicity theory: T for
// plain acyclicity, C when the options name a rule of classed dsg.
type Lowered struct {
	S *sat.Solver
	T *acyclic.Theory
	C *acyclic.Classed
	// Clauses counts the clauses the solver was given.
	Clauses int
}

// Options tune the lowering.
type Options struct {
	// NoPhase switches off the theory's order-guided polarity
	// (topological prioritisation).
	NoPhase bool
	// Rule, when set, forbids only the cycles it names (counting item and
	// predicate anti-dependencies: rw and prw edges) instead of every
	// cycle.
	Rule acyclic.Rule
}

// ClassOf is the class of a dependency kind in a classed theory: ww is an
// Order edge (a dependency the causal rule tells apart).
func ClassOf(d anomaly.Dep) acyclic.Class {
	switch d {
	case anomaly.RW:
		return acyclic.ItemAnti
	case anomaly.PRW:
		return acyclic.PredAnti
	case anomaly.WW:
		return acyclic.Order
	}
	return acyclic.Dep
}

// Lower builds the solver and theory for g: a variable per IR variable,
// the clauses, each superposition as one clause (at least one option, or
// Unless) and pairwise exclusion (a sequential counter past six options),
// and every edge to the theory — fixed when it always holds. The IR's
// clauses are released.
func (g *Graph) Lower(o Options) *Lowered {
	s := sat.New()
	for range g.vars {
		s.NewVar()
	}
	low := &Lowered{S: s}
	var (
		reserve func(fixed, cond int)
		add     func(e Edge)
	)
	if o.Rule != 0 {
		c := acyclic.NewClassed(int(g.Nodes), o.Rule)
		c.SetNoPhase(o.NoPhase)
		c.SetRank(g.Rank)
		s.SetTheory(c)
		low.C, reserve = c, c.Reserve
		add = func(e Edge) {
			if e.When.Const > 0 {
				c.AddFixedEdge(e.From, e.To, ClassOf(e.Dep))
			} else {
				c.AddEdge(e.From, e.To, e.When.Lit, ClassOf(e.Dep))
			}
		}
	} else {
		t := acyclic.New(int(g.Nodes))
		t.NoPhase = o.NoPhase
		t.SetRank(g.Rank)
		s.SetTheory(t)
		low.T, reserve = t, t.Reserve
		add = func(e Edge) {
			if e.When.Const > 0 {
				t.AddFixedEdge(e.From, e.To)
			} else {
				t.AddEdge(e.From, e.To, e.When.Lit)
			}
		}
	}
	clause := func(lits ...sat.Lit) {
		low.Clauses++
		s.AddClause(lits...)
	}
	for _, c := range g.Clauses {
		clause(c...)
	}
	g.Clauses = nil
	for _, sp := range g.Superpositions {
		lowerSuperposition(s, sp, clause)
	}
	g.Superpositions = nil
	fixed := 0
	for e := range g.Edges() {
		if e.When.Const > 0 {
			fixed++
		}
	}
	reserve(fixed, g.nedges-fixed)
	for e := range g.Edges() {
		add(e)
	}
	return low
}

// lowerSuperposition adds exactly-one (or none under Unless) clauses.
func lowerSuperposition(s *sat.Solver, sp Superposition, add func(...sat.Lit)) {
	lits := sp.Options
	atLeast := append([]sat.Lit(nil), lits...)
	switch sp.Unless.Const {
	case 1:
		for _, l := range lits {
			add(l.Not())
		}
		return
	case 0:
		atLeast = append(atLeast, sp.Unless.Lit)
		for _, l := range lits {
			add(l.Not(), sp.Unless.Lit.Not())
		}
	}
	add(atLeast...)
	if len(lits) <= 6 {
		for i := range lits {
			for j := i + 1; j < len(lits); j++ {
				add(lits[i].Not(), lits[j].Not())
			}
		}
		return
	}
	prev := sat.Pos(s.NewVar()) // s_0: some of lits[..0] is true
	add(lits[0].Not(), prev)
	for i := 1; i < len(lits); i++ {
		next := sat.Pos(s.NewVar())
		add(lits[i].Not(), next)
		add(prev.Not(), next)
		add(prev.Not(), lits[i].Not())
		prev = next
	}
}

// Present returns the edges that hold when every literal of conflict is
// false (the cycle of a theory conflict), with the edges that always hold.
func (g *Graph) Present(conflict []sat.Lit) []Edge {
	truth := make(map[sat.Lit]bool, len(conflict))
	for _, l := range conflict {
		truth[l.Not()] = true
	}
	var out []Edge
	for e := range g.Edges() {
		if e.When.Const > 0 || (e.When.Const == 0 && truth[e.When.Lit]) {
			out = append(out, e)
		}
	}
	return out
}
