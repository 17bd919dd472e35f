// Package acyclic is the acyclicity theory of the CDCL(T) solver in package
// sat (VeriStrong, Cai et al., PVLDB 2025, §5.2 and §6.2): edge literals
// whose true edges must form an acyclic graph, kept in the dynamic
// topological order of Pearce and Kelly (2006).
package acyclic

import (
	"slices"

	"github.com/isoscope/isoscope/internal/sat"
)

// Theory is the acyclicity theory (VeriStrong §5.2): every edge is
// present exactly when its literal is true (or always, for fixed edges),
// and the present edges must form no cycle. It keeps them in a dynamic
// topological order (Pearce and Kelly, 2006), so that an edge that agrees
// with the order is added in O(1) and others search only the region
// between their ends. A cycle is refuted by a conflict clause made of the
// negated literals of its edges (the forward search is breadth-first, so
// the cycle is short). Phase suggests the polarity whose edges agree with
// the current order (VeriStrong §6.2).
type Theory struct {
	ord      []int32 // position of each node in the topological order
	node     []int32 // node at each position
	out, in  [][]int32
	edges    []aEdge
	byLit    [][]int32
	stack    []int32 // present edges, in the order added
	stackPos []int32
	mark     []uint32
	epoch    uint32
	parent   []int32
	queue    []int32
	pending  []int32 // fixed edges not linked yet
	rank     []int32 // when set, the initial order's preference (SetRank)
	// NoPhase switches the order-guided polarity off (for measurements).
	NoPhase bool
	// FixedCycle holds the edges of a cycle made of fixed edges alone, if
	// one was added (the instance is then unsatisfiable).
	FixedCycle []int32
	// work counts the edges the searches of insert have scanned.
	work int64
}

// Work returns how many edges the theory's searches have scanned so far:
// a count of its work that does not depend on the machine's speed
// (sat.Worker).
func (a *Theory) Work() int64 { return a.work }

type aEdge struct {
	from, to int32
	lit      sat.Lit // -1 for fixed edges
}

// New returns the theory over n nodes, with no edges.
func New(n int) *Theory {
	a := &Theory{ord: make([]int32, n), node: make([]int32, n), out: make([][]int32, n), in: make([][]int32, n),
		mark: make([]uint32, n), parent: make([]int32, n)}
	for i := range n {
		a.ord[i], a.node[i] = int32(i), int32(i)
	}
	return a
}

// AddEdge registers from→to, present exactly when lit is true.
func (a *Theory) AddEdge(from, to int32, lit sat.Lit) {
	id := int32(len(a.edges))
	a.edges = append(a.edges, aEdge{from, to, lit})
	for int(lit) >= len(a.byLit) {
		a.byLit = append(a.byLit, nil)
	}
	a.byLit[lit] = append(a.byLit[lit], id)
}

// Reserve makes room for fixed more fixed edges and cond more conditioned
// ones, so that adding millions of edges does not copy them to grow.
func (a *Theory) Reserve(fixed, cond int) {
	a.edges = slices.Grow(a.edges, fixed+cond)
	a.pending = slices.Grow(a.pending, fixed)
}

// AddFixedEdge adds from→to, always present. Fixed edges are collected and
// laid out in one topological sort when the search starts, rather than
// inserted one by one.
func (a *Theory) AddFixedEdge(from, to int32) {
	id := int32(len(a.edges))
	a.edges = append(a.edges, aEdge{from, to, -1})
	a.pending = append(a.pending, id)
}

// SetRank sets the order in which the initial topological sort prefers
// nodes: of the nodes whose predecessors are all placed, the one of least
// rank (then least number) comes next. Without it the sort is breadth
// first. Any rank gives a topological order; a rank that follows how the
// transactions ran (the history's order) gives one that the edges the
// search adds mostly agree with, so they move few nodes and close few
// cycles.
func (a *Theory) SetRank(rank []int32) { a.rank = rank }

// settle links the pending fixed edges: a topological sort of them gives
// the initial order (Kahn), so every later insertion starts from it.
func (a *Theory) settle() {
	if len(a.pending) == 0 {
		return
	}
	n := len(a.ord)
	indeg := make([]int32, n)
	for _, id := range a.pending {
		a.link(id)
		indeg[a.edges[id].to]++
	}
	for _, id := range a.pending {
		a.stack = append(a.stack, id)
		a.stackPos = append(a.stackPos, -1)
	}
	a.pending = nil
	order := make([]int32, 0, n)
	ready := rankHeap{rank: a.rank}
	for v := range n {
		if indeg[v] == 0 {
			ready.push(int32(v))
		}
	}
	for ready.len() > 0 {
		x := ready.pop()
		order = append(order, x)
		for _, eid := range a.out[x] {
			if a.edges[eid].lit >= 0 {
				continue
			}
			if w := a.edges[eid].to; indeg[w] > 0 {
				if indeg[w]--; indeg[w] == 0 {
					ready.push(w)
				}
			}
		}
	}
	if len(order) < n {
		// A cycle among fixed edges: find one for the record.
		for v := range n {
			if indeg[v] > 0 {
				a.FixedCycle = a.fixedCycleFrom(int32(v), indeg)
				break
			}
		}
		return
	}
	for i, v := range order {
		a.ord[v], a.node[i] = int32(i), v
	}
}

// fixedCycleFrom walks fixed edges among nodes left with in-degree from v
// until a node repeats, and returns that cycle's edges.
func (a *Theory) fixedCycleFrom(v int32, indeg []int32) []int32 {
	at := map[int32]int{}
	var path []int32
	for {
		if i, ok := at[v]; ok {
			return path[i:]
		}
		at[v] = len(path)
		next := int32(-1)
		for _, eid := range a.in[v] {
			if a.edges[eid].lit < 0 && indeg[a.edges[eid].from] > 0 {
				next = eid
				break
			}
		}
		if next < 0 {
			return path
		}
		path = append(path, next)
		v = a.edges[next].from
	}
}

// Contradicted reports whether the fixed edges alone hold a cycle.
func (a *Theory) Contradicted() bool {
	a.settle()
	return a.FixedCycle != nil
}

// Edge returns edge id's ends and literal (-1 when fixed).
func (a *Theory) Edge(id int32) (from, to int32, lit sat.Lit) {
	e := a.edges[id]
	return e.from, e.to, e.lit
}

// Assign adds the edges of l; a cycle gives a conflict clause.
func (a *Theory) Assign(l sat.Lit, pos int) []sat.Lit {
	a.settle()
	if a.FixedCycle != nil {
		return []sat.Lit{} // unsatisfiable whatever is assigned
	}
	if int(l) >= len(a.byLit) {
		return nil
	}
	for _, id := range a.byLit[l] {
		if cyc := a.insert(id); cyc != nil {
			var clause []sat.Lit
			for _, e := range cyc {
				if lit := a.edges[e].lit; lit >= 0 && !slices.Contains(clause, lit.Not()) {
					clause = append(clause, lit.Not())
				}
			}
			return clause
		}
		a.stack = append(a.stack, id)
		a.stackPos = append(a.stackPos, int32(pos))
	}
	return nil
}

// Backtrack removes the edges of the assignments at trail position pos and
// later.
func (a *Theory) Backtrack(pos int) {
	for len(a.stack) > 0 && a.stackPos[len(a.stack)-1] >= int32(pos) {
		id := a.stack[len(a.stack)-1]
		a.stack = a.stack[:len(a.stack)-1]
		a.stackPos = a.stackPos[:len(a.stackPos)-1]
		e := a.edges[id]
		a.out[e.from] = a.out[e.from][:len(a.out[e.from])-1]
		a.in[e.to] = a.in[e.to][:len(a.in[e.to])-1]
	}
}

// Phase prefers the polarity of v whose edges go forward in the order.
func (a *Theory) Phase(v sat.Var) (bool, bool) {
	if a.NoPhase {
		return false, false
	}
	back := func(l sat.Lit) (n int, any bool) {
		if int(l) >= len(a.byLit) {
			return 0, false
		}
		for _, id := range a.byLit[l] {
			e := a.edges[id]
			any = true
			if a.ord[e.from] > a.ord[e.to] {
				n++
			}
		}
		return n, any
	}
	pb, pAny := back(sat.Pos(v))
	nb, nAny := back(sat.Neg(v))
	switch {
	case pAny && pb == 0 && (!nAny || nb > 0):
		return true, true
	case nAny && nb == 0 && (!pAny || pb > 0):
		return false, true
	}
	return false, false
}

// insert adds edge id unless it closes a cycle, which it returns (edge ids).
func (a *Theory) insert(id int32) []int32 {
	e := a.edges[id]
	u, v := e.from, e.to
	if u == v {
		return []int32{id}
	}
	if a.ord[u] < a.ord[v] {
		a.link(id)
		return nil
	}
	ub, lb := a.ord[u], a.ord[v]
	// Forward, breadth-first, from v within ord ≤ ub: reaching u is a cycle.
	a.next()
	fwd := a.queue[:0]
	fwd = append(fwd, v)
	a.mark[v], a.parent[v] = a.epoch, -1
	for i := 0; i < len(fwd); i++ {
		x := fwd[i]
		a.work += int64(len(a.out[x])) + 1
		for _, eid := range a.out[x] {
			w := a.edges[eid].to
			if a.mark[w] == a.epoch || a.ord[w] > ub {
				continue
			}
			a.mark[w], a.parent[w] = a.epoch, eid
			if w == u {
				cyc := []int32{id}
				for n := u; a.parent[n] >= 0; n = a.edges[a.parent[n]].from {
					cyc = append(cyc, a.parent[n])
				}
				a.queue = fwd
				return cyc
			}
			fwd = append(fwd, w)
		}
	}
	a.queue = fwd
	// Backward from u within ord ≥ lb.
	a.next()
	bwd := []int32{u}
	a.mark[u] = a.epoch
	for i := 0; i < len(bwd); i++ {
		x := bwd[i]
		a.work += int64(len(a.in[x])) + 1
		for _, eid := range a.in[x] {
			w := a.edges[eid].from
			if a.mark[w] == a.epoch || a.ord[w] < lb {
				continue
			}
			a.mark[w] = a.epoch
			bwd = append(bwd, w)
		}
	}
	// Reorder: the backward set, then the forward set, into their pooled
	// positions.
	byOrd := func(x, y int32) int { return int(a.ord[x]) - int(a.ord[y]) }
	f := slices.Clone(fwd)
	slices.SortFunc(bwd, byOrd)
	slices.SortFunc(f, byOrd)
	pos := make([]int32, 0, len(bwd)+len(f))
	for _, x := range bwd {
		pos = append(pos, a.ord[x])
	}
	for _, x := range f {
		pos = append(pos, a.ord[x])
	}
	slices.Sort(pos)
	for i, x := range append(bwd, f...) {
		a.ord[x] = pos[i]
		a.node[pos[i]] = x
	}
	a.link(id)
	return nil
}

func (a *Theory) link(id int32) {
	e := a.edges[id]
	a.out[e.from] = append(a.out[e.from], id)
	a.in[e.to] = append(a.in[e.to], id)
}

func (a *Theory) next() {
	a.epoch++
	if a.epoch == 0 {
		clear(a.mark)
		a.epoch = 1
	}
}

// rankHeap holds the nodes ready to be placed by settle: a queue (first in,
// first out) without ranks, a min-heap by (rank, node) with them.
type rankHeap struct {
	rank  []int32
	nodes []int32
	head  int
}

func (h *rankHeap) len() int { return len(h.nodes) - h.head }

func (h *rankHeap) less(i, j int) bool {
	x, y := h.nodes[i], h.nodes[j]
	if h.rank[x] != h.rank[y] {
		return h.rank[x] < h.rank[y]
	}
	return x < y
}

func (h *rankHeap) push(v int32) {
	h.nodes = append(h.nodes, v)
	if h.rank == nil {
		return
	}
	for i := len(h.nodes) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.nodes[i], h.nodes[p] = h.nodes[p], h.nodes[i]
		i = p
	}
}

func (h *rankHeap) pop() int32 {
	if h.rank == nil {
		h.head++
		return h.nodes[h.head-1]
	}
	v := h.nodes[0]
	last := len(h.nodes) - 1
	h.nodes[0] = h.nodes[last]
	h.nodes = h.nodes[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			break
		}
		h.nodes[i], h.nodes[c] = h.nodes[c], h.nodes[i]
		i = c
	}
	return v
}
