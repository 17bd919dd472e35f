package acyclic

import (
	"slices"

	"github.com/isoscope/isoscope/internal/sat"
)

// Class is what an edge of a Classed theory is, for the cycles its rule
// counts: a dependency, or an item or predicate anti-dependency; Order is
// a dependency that orders versions (ww), which NoCausalAnti tells from
// the others.
type Class uint8

// The classes.
const (
	Dep Class = iota
	ItemAnti
	PredAnti
	// Order is a write dependency (ww): a dependency edge, kept in the
	// topological order like Dep, that the rules count apart only where
	// they say so (NoCausalAnti).
	Order
)

// IsAnti reports whether c is an anti-dependency class.
func (c Class) IsAnti() bool { return c == ItemAnti || c == PredAnti }

// Rule says which cycles a Classed theory forbids. Every rule forbids the
// cycles of dependency edges alone (Adya's G1c); they differ in which
// cycles through anti-dependencies they allow.
type Rule uint8

// The rules.
const (
	// NoSingleAnti forbids every cycle with at most one anti-dependency,
	// item or predicate: G1c and G-single (PL-2+; PL-FCV on the
	// start-ordered graph).
	NoSingleAnti Rule = iota + 1
	// NoItemAnti forbids every cycle through an item anti-dependency (and
	// those without anti-dependencies): G1c and G2-item. Cycles whose
	// anti-dependencies are all predicate ones are allowed (PL-2.99).
	NoItemAnti
	// NoCausalAnti forbids every cycle without anti-dependencies and
	// every cycle with exactly one anti-dependency and no Order edge: a
	// read that missed a version its transaction causally depends on
	// through session order and write-read alone (transactional causal
	// consistency: no (so ∪ wr)+ ; rw cycle, with so ∪ wr ∪ ww acyclic).
	NoCausalAnti
)

// Forbids reports whether rule forbids a cycle with items item and preds
// predicate anti-dependencies and orders Order edges (any number of other
// dependency edges).
func (r Rule) Forbids(items, preds, orders int) bool {
	switch r {
	case NoSingleAnti:
		return items+preds <= 1
	case NoItemAnti:
		return items > 0 || preds == 0
	case NoCausalAnti:
		return items+preds == 0 || items+preds == 1 && orders == 0
	}
	return true
}

// states is how many search states the rule's walks need.
func (r Rule) states() int32 {
	if r == NoCausalAnti {
		return 3
	}
	return 2
}

// Classed is a theory of cycles that are forbidden by how many edges of
// each class they hold (Adya's phenomena beyond plain acyclicity: G-single,
// G2-item), where the present edges may form allowed dsg. The
// dependency edges must stay acyclic, which a Theory keeps in its dynamic
// topological order; anti-dependencies are kept beside it. Inserting an
// edge searches, breadth-first over (node, what the path has crossed),
// for a path back from its head to its tail that would close a forbidden
// cycle; its edges, negated, are the conflict clause (they form a closed
// walk, which always holds a forbidden simple cycle — see Simple).
//
// Edges are numbered in the order they are added, fixed or not, across
// both kinds; Violation and Walk speak in those numbers.
type Classed struct {
	rule   Rule
	deps   *Theory
	index  []int32 // global number → dependency edge id (≥ 0) or -(anti id)-1
	global []int32 // dependency edge id → global number
	order  []bool  // dependency edge id → an Order edge
	anti   []cEdge
	aglob  []int32 // anti edge id → global number
	aout   [][]int32
	byLit  [][]int32 // anti edges by literal
	stack  []int32   // linked anti edges, in the order added
	stkPos []int32
	fixed  []int32 // fixed anti edges, linked when the search starts
	linked int     // anti edges linked
	// violation holds a forbidden closed walk among the fixed edges.
	violation []int32
	settled   bool
	// the search over (node, state): state s of node v is s*n+v.
	n      int32
	mark   []uint32
	epoch  uint32
	parent []int32 // the edge (dependency id, or -(anti id)-1) that reached it
	prev   []int32 // and the state it was reached from
	queue  []int32
	// work counts the edges the searches have scanned.
	work int64
}

// Work returns how many edges the theory's searches (its own and its
// dependency order's) have scanned so far: a count of its work that does
// not depend on the machine's speed (sat.Worker).
func (c *Classed) Work() int64 { return c.work + c.deps.Work() }

type cEdge struct {
	from, to int32
	lit      sat.Lit
	class    Class
}

// NewClassed returns the theory over n nodes with rule r and no edges.
func NewClassed(n int, r Rule) *Classed {
	m := int(r.states()) * n
	return &Classed{rule: r, deps: New(n), aout: make([][]int32, n), n: int32(n),
		mark: make([]uint32, m), parent: make([]int32, m), prev: make([]int32, m)}
}

// SetNoPhase switches the order-guided polarity off (for measurements).
func (c *Classed) SetNoPhase(off bool) { c.deps.NoPhase = off }

// SetRank sets the initial order's preference among nodes, as
// Theory.SetRank does.
func (c *Classed) SetRank(rank []int32) { c.deps.SetRank(rank) }

// AddEdge registers from→to of class cl, present exactly when lit is true.
func (c *Classed) AddEdge(from, to int32, lit sat.Lit, cl Class) {
	if !cl.IsAnti() {
		c.global = append(c.global, int32(len(c.index)))
		c.index = append(c.index, int32(len(c.deps.edges)))
		c.order = append(c.order, cl == Order)
		c.deps.AddEdge(from, to, lit)
		return
	}
	id := int32(len(c.anti))
	c.aglob = append(c.aglob, int32(len(c.index)))
	c.index = append(c.index, -id-1)
	c.anti = append(c.anti, cEdge{from, to, lit, cl})
	for int(lit) >= len(c.byLit) {
		c.byLit = append(c.byLit, nil)
	}
	c.byLit[lit] = append(c.byLit[lit], id)
}

// AddFixedEdge adds from→to of class cl, always present.
func (c *Classed) AddFixedEdge(from, to int32, cl Class) {
	if !cl.IsAnti() {
		c.global = append(c.global, int32(len(c.index)))
		c.index = append(c.index, int32(len(c.deps.edges)))
		c.order = append(c.order, cl == Order)
		c.deps.AddFixedEdge(from, to)
		return
	}
	id := int32(len(c.anti))
	c.aglob = append(c.aglob, int32(len(c.index)))
	c.index = append(c.index, -id-1)
	c.anti = append(c.anti, cEdge{from, to, -1, cl})
	c.fixed = append(c.fixed, id)
}

// Reserve makes room for the edges to come, as Theory.Reserve does.
func (c *Classed) Reserve(fixed, cond int) {
	c.deps.Reserve(fixed, cond)
	c.index = slices.Grow(c.index, fixed+cond)
}

// settle lays out the fixed edges: the dependency ones in one topological
// sort, then each fixed anti-dependency, checked as it is linked (every
// forbidden cycle of fixed edges is found when its last anti-dependency
// comes, or is a dependency cycle).
func (c *Classed) settle() {
	if c.settled {
		return
	}
	c.settled = true
	if c.deps.Contradicted() {
		c.violation = make([]int32, len(c.deps.FixedCycle))
		for i, id := range c.deps.FixedCycle {
			// fixedCycleFrom walks backwards.
			c.violation[len(c.violation)-1-i] = c.global[id]
		}
		return
	}
	for _, id := range c.fixed {
		if w := c.through(-id - 1); w != nil {
			c.violation = w
			return
		}
		c.link(id, -1)
	}
	c.fixed = nil
}

// Contradicted reports whether the fixed edges alone hold a forbidden
// cycle.
func (c *Classed) Contradicted() bool {
	c.settle()
	return c.violation != nil
}

// Violation returns a forbidden closed walk of fixed edges (global edge
// numbers, in order), or nil.
func (c *Classed) Violation() []int32 {
	c.settle()
	return c.violation
}

// Edge returns edge number g's ends, literal (-1 when fixed) and class.
func (c *Classed) Edge(g int32) (from, to int32, lit sat.Lit, cl Class) {
	i := c.index[g]
	if i >= 0 {
		f, t, l := c.deps.Edge(i)
		if c.order[i] {
			return f, t, l, Order
		}
		return f, t, l, Dep
	}
	e := c.anti[-i-1]
	return e.from, e.to, e.lit, e.class
}

// Assign adds the edges of l; a forbidden cycle gives a conflict clause.
func (c *Classed) Assign(l sat.Lit, pos int) []sat.Lit {
	c.settle()
	if c.violation != nil {
		return []sat.Lit{}
	}
	if cl := c.deps.Assign(l, pos); cl != nil {
		return cl
	}
	if int(l) < len(c.deps.byLit) && c.linked > 0 {
		for _, id := range c.deps.byLit[l] {
			if c.rule == NoCausalAnti && c.order[id] || !c.mayClose(id) {
				// An Order edge closes no forbidden cycle with an
				// anti-dependency under NoCausalAnti; a cycle of
				// dependencies alone the order finds.
				continue
			}
			if w := c.through(id); w != nil {
				return c.clause(w)
			}
		}
	}
	if int(l) < len(c.byLit) {
		for _, id := range c.byLit[l] {
			if w := c.through(-id - 1); w != nil {
				return c.clause(w)
			}
			c.link(id, int32(pos))
		}
	}
	return nil
}

// mayClose reports whether dependency edge id, just linked (so its tail
// precedes its head in the topological order), could close a forbidden
// cycle at all: a walk from its head back to its tail climbs the order
// along dependency edges and must come down along anti-dependencies. With
// NoSingleAnti the walk has one, (u, v), with v at or before the tail and u
// at or after the head; otherwise some anti-dependency leaves the region
// from the head on for a node before it. Scanning the linked
// anti-dependencies until one fits is cheaper than the search it spares
// when none does. (Bounding the search by the fitting ones instead costs
// more: the scan then cannot stop early.)
func (c *Classed) mayClose(id int32) bool {
	e := c.deps.edges[id]
	ord := c.deps.ord
	lo, hi := ord[e.from], ord[e.to]
	c.work += int64(len(c.stack))/8 + 1
	for _, a := range c.stack {
		u, v := ord[c.anti[a].from], ord[c.anti[a].to]
		if u >= hi && (v <= lo || c.rule == NoItemAnti && v < hi) {
			return true
		}
	}
	return false
}

// clause negates the literals of walk's conditioned edges.
func (c *Classed) clause(walk []int32) []sat.Lit {
	var out []sat.Lit
	for _, g := range walk {
		if _, _, lit, _ := c.Edge(g); lit >= 0 && !slices.Contains(out, lit.Not()) {
			out = append(out, lit.Not())
		}
	}
	return out
}

func (c *Classed) link(id, pos int32) {
	c.aout[c.anti[id].from] = append(c.aout[c.anti[id].from], id)
	c.stack = append(c.stack, id)
	c.stkPos = append(c.stkPos, pos)
	c.linked++
}

// Backtrack removes the edges of the assignments at trail position pos and
// later.
func (c *Classed) Backtrack(pos int) {
	c.deps.Backtrack(pos)
	for len(c.stack) > 0 && c.stkPos[len(c.stack)-1] >= int32(pos) {
		id := c.stack[len(c.stack)-1]
		c.stack, c.stkPos = c.stack[:len(c.stack)-1], c.stkPos[:len(c.stkPos)-1]
		from := c.anti[id].from
		c.aout[from] = c.aout[from][:len(c.aout[from])-1]
		c.linked--
	}
}

// Phase prefers the polarity whose dependency edges agree with the order.
func (c *Classed) Phase(v sat.Var) (bool, bool) { return c.deps.Phase(v) }

// ends returns the ends and class of ref, an edge named as the search
// names them: a dependency id, or -(anti id)-1.
func (c *Classed) ends(ref int32) (from, to int32, cl Class) {
	if ref >= 0 {
		e := c.deps.edges[ref]
		if c.order[ref] {
			return e.from, e.to, Order
		}
		return e.from, e.to, Dep
	}
	e := c.anti[-ref-1]
	return e.from, e.to, e.class
}

// step is the search state after crossing an edge of class cl from state
// s (from 0 for the inserted edge itself), or -1 when the walk can no
// longer close a forbidden cycle. For NoSingleAnti the state counts the
// anti-dependencies crossed (0 or 1); for NoItemAnti it says whether an
// item anti-dependency was crossed; for NoCausalAnti it is 0 (neither an
// anti-dependency nor an Order edge crossed), 1 (an Order edge, no
// anti-dependency) or 2 (one anti-dependency, no Order edge).
func (c *Classed) step(s int32, cl Class) int32 {
	switch c.rule {
	case NoCausalAnti:
		switch {
		case cl.IsAnti():
			if s != 0 {
				return -1
			}
			return 2
		case cl == Order:
			if s == 2 {
				return -1
			}
			return 1
		}
		return s
	case NoSingleAnti:
		if cl.IsAnti() {
			if s == 1 {
				return -1
			}
			return 1
		}
		return s
	default: // NoItemAnti: has the walk crossed an item anti-dependency?
		if cl == ItemAnti {
			return 1
		}
		return s
	}
}

// accepts reports whether reaching the inserted edge's tail in state s
// closes a forbidden cycle.
func (c *Classed) accepts(s int32) bool {
	if c.rule == NoSingleAnti || c.rule == NoCausalAnti {
		return true // every state a walk can be in is a forbidden cycle's
	}
	return s == 1
}

// through searches for a forbidden closed walk through the edge ref (not
// yet linked, or a dependency edge just linked): a path from its head back
// to its tail. It returns the walk's global edge numbers, ref first, or
// nil.
func (c *Classed) through(ref int32) []int32 {
	u, v, cl := c.ends(ref)
	s0 := c.step(0, cl)
	if s0 < 0 {
		return nil
	}
	if u == v {
		if c.accepts(s0) {
			return []int32{c.globalOf(ref)}
		}
		return nil
	}
	n := c.n
	c.epoch++
	if c.epoch == 0 {
		clear(c.mark)
		c.epoch = 1
	}
	// A state from which only dependency edges may follow reaches u only
	// within the topological order's bound.
	depsOnly := func(s int32) bool { return c.rule == NoSingleAnti && s == 1 || c.rule == NoCausalAnti && s != 0 }
	ub := c.deps.ord[u]
	q := c.queue[:0]
	first := s0*n + v
	c.mark[first], c.parent[first] = c.epoch, 0
	q = append(q, first)
	found := int32(-1)
	visit := func(from, s int32, r int32) bool {
		_, w, wcl := c.ends(r)
		t := c.step(s, wcl)
		if t < 0 {
			return false
		}
		if depsOnly(t) && c.deps.ord[w] > ub {
			return false
		}
		st := t*n + w
		if c.mark[st] == c.epoch {
			return false
		}
		c.mark[st], c.parent[st], c.prev[st] = c.epoch, r, from
		if w == u && c.accepts(t) {
			found = st
			return true
		}
		q = append(q, st)
		return false
	}
search:
	for i := 0; i < len(q); i++ {
		st := q[i]
		s, x := st/n, st%n
		c.work += int64(len(c.deps.out[x])) + 1
		for _, id := range c.deps.out[x] {
			if visit(st, s, id) {
				break search
			}
		}
		if depsOnly(s) {
			continue
		}
		c.work += int64(len(c.aout[x]))
		for _, id := range c.aout[x] {
			if visit(st, s, -id-1) {
				break search
			}
		}
	}
	c.queue = q
	if found < 0 {
		return nil
	}
	// Walk back from the tail's state to the head's first state.
	var back []int32
	for st := found; st != first; st = c.prev[st] {
		back = append(back, c.globalOf(c.parent[st]))
	}
	walk := []int32{c.globalOf(ref)}
	for i := len(back) - 1; i >= 0; i-- {
		walk = append(walk, back[i])
	}
	return walk
}

func (c *Classed) globalOf(ref int32) int32 {
	if ref >= 0 {
		return c.global[ref]
	}
	return c.aglob[-ref-1]
}

// Simple returns a forbidden simple cycle inside the forbidden closed walk
// (global edge numbers, in order): while a node repeats, the walk splits
// there into two closed walks, and one of them is still forbidden — the
// rules count anti-dependencies (and Order edges), and the two parts share
// them out (at most one between them stays at most one; an item one lands
// in one part; none stays none; one anti-dependency without Order edges
// lands in a part without them).
func (c *Classed) Simple(walk []int32) []int32 {
	walk = slices.Clone(walk)
	for {
		at := map[int32]int{}
		split := false
		for j, g := range walk {
			from, _, _, _ := c.Edge(g)
			i, ok := at[from]
			if !ok {
				at[from] = j
				continue
			}
			inner := slices.Clone(walk[i:j])
			outer := append(slices.Clone(walk[:i]), walk[j:]...)
			if c.forbidden(inner) {
				walk = inner
			} else {
				walk = outer
			}
			split = true
			break
		}
		if !split {
			return walk
		}
	}
}

// forbidden reports whether the rule forbids a cycle over walk's edges.
func (c *Classed) forbidden(walk []int32) bool {
	items, preds, orders := 0, 0, 0
	for _, g := range walk {
		switch _, _, _, cl := c.Edge(g); cl {
		case ItemAnti:
			items++
		case PredAnti:
			preds++
		case Order:
			orders++
		}
	}
	return c.rule.Forbids(items, preds, orders)
}
