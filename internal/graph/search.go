package graph

import "slices"

// begin starts a new search. It allocates the scratch space if needed,
// and advances the visited epoch, so old stamps no longer count as
// visited. Only when the epoch wraps around (once in 2^32 searches) does
// it clear the stamps.
func (g *Graph) begin() {
	if g.stamp == nil {
		g.stamp = make([]uint32, g.n)
		g.parent = make([]int32, g.n)
	}
	g.epoch++
	if g.epoch == 0 {
		clear(g.stamp)
		g.epoch = 1
	}
}

// bfs searches breadth-first from start, over edges in mask whose target
// satisfies inside (nil = all). It returns the first edge that reaches
// target. The search takes at most maxDepth edges (maxDepth < 0 = no
// limit). Only edges found along the way are checked against target, so
// target may equal start, which finds a shortest cycle. On success, parent
// leads back from the edge's source to start. It returns -1 if no path
// exists. The caller must call begin first. bfs checks neither start nor
// target against inside.
func (g *Graph) bfs(start, target int32, mask Mask, inside func(int32) bool, maxDepth int) int32 {
	if maxDepth == 0 {
		return -1
	}
	off, to, label, stamp, parent, ep := g.off, g.to, g.label, g.stamp, g.parent, g.epoch
	q := append(g.queue[:0], start)
	stamp[start] = ep
	parent[start] = -1
	found := int32(-1)
	level, levelEnd := 0, 1 // the depth of q[head], and where that level ends
	for head := 0; head < len(q) && found < 0; head++ {
		if head == levelEnd {
			level++
			levelEnd = len(q)
		}
		if maxDepth > 0 && level >= maxDepth {
			break // an edge from here would make a path longer than maxDepth
		}
		// Nodes at depth maxDepth can only end a path, never extend one.
		enqueue := maxDepth < 0 || level+1 < maxDepth
		x := q[head]
		for e := off[x]; e < off[x+1]; e++ {
			if mask>>label[e]&1 == 0 {
				continue
			}
			y := to[e]
			if y == target {
				found = e
				break
			}
			if stamp[y] == ep {
				continue
			}
			// Mark y visited before the inside check, so inside is asked
			// at most once per node.
			stamp[y] = ep
			if !enqueue || (inside != nil && !inside(y)) {
				continue
			}
			parent[y] = e
			q = append(q, y)
		}
	}
	g.queue = q[:0]
	return found
}

// pathTo returns the edges from start to the source of edge last, then
// last itself. It follows the parent edges the last bfs left behind.
func (g *Graph) pathTo(last int32) []int32 {
	path := []int32{last}
	for x := g.From(last); g.parent[x] >= 0; x = g.From(g.parent[x]) {
		path = append(path, g.parent[x])
	}
	slices.Reverse(path)
	return slices.Clip(path)
}

// ShortestCycleThrough returns a shortest cycle through v. The cycle uses
// only edges whose label is in mask, and only nodes that satisfy inside
// (nil = all nodes). It is returned as edge indices in order, starting
// with an out-edge of v. The result is nil if there is no such cycle, or
// if v does not satisfy inside. A self-loop is a cycle of length 1.
//
// The breadth-first search takes time in proportion to the region it
// explores. inside is called at most once per node reached.
func (g *Graph) ShortestCycleThrough(v int32, mask Mask, inside func(int32) bool) []int32 {
	if inside != nil && !inside(v) {
		return nil
	}
	g.begin()
	if e := g.bfs(v, v, mask, inside, -1); e >= 0 {
		return g.pathTo(e)
	}
	return nil
}

// ShortestPath returns a shortest path from src to dst. The path uses only
// edges whose label is in mask, and only nodes that satisfy inside (nil =
// all nodes), src and dst included. It is returned as edge indices in
// order. The result is nil if no path exists, and also if src == dst. Use
// ShortestCycleThrough for that case.
func (g *Graph) ShortestPath(src, dst int32, mask Mask, inside func(int32) bool) []int32 {
	if src == dst || (inside != nil && (!inside(src) || !inside(dst))) {
		return nil
	}
	g.begin()
	if e := g.bfs(src, dst, mask, inside, -1); e >= 0 {
		return g.pathTo(e)
	}
	return nil
}

// ShortestCycleWithExactlyOne returns a shortest cycle with exactly one
// edge whose label is in special. All of its other edges have labels in
// other. All of its nodes satisfy inside (nil = all nodes). A label in
// both masks counts as special, so the result never holds two special
// edges. The cycle starts with its special edge. The result is nil if
// there is no such cycle.
//
// For each special edge u->w, taken in node order and then edge order,
// the method searches breadth-first from w back to u over other edges. A
// search never goes deeper than needed to beat the best cycle found so
// far. Once a cycle of length 2 is found, only special self-loops (length
// 1) can beat it, and no more searches run. If limit > 0, at most limit
// searches run. The result is then the shortest cycle among those
// searches, and may not be the shortest overall. limit <= 0 means no
// limit.
//
// Each call scans all edges to find the special ones, and calls inside on
// the source of each special edge.
func (g *Graph) ShortestCycleWithExactlyOne(special, other Mask, inside func(int32) bool, limit int) []int32 {
	return g.ShortestCycleWithExactlyOneFrom(nil, special, other, inside, limit)
}

// ShortestCycleWithExactlyOneFrom is ShortestCycleWithExactlyOne with the
// special edges taken only from the out-edges of the nodes in from (nil:
// every node), so that a search inside one small component costs time for
// that component only.
func (g *Graph) ShortestCycleWithExactlyOneFrom(from []int32, special, other Mask, inside func(int32) bool, limit int) []int32 {
	other &^= special
	var best []int32
	tries := 0
	n := len(from)
	if from == nil {
		n = g.n
	}
	for i := range n {
		u := int32(i)
		if from != nil {
			u = from[i]
		}
		uIn := 0 // 0 = not asked yet, 1 = inside, -1 = outside
		for e := g.off[u]; e < g.off[u+1]; e++ {
			if special>>g.label[e]&1 == 0 {
				continue
			}
			if uIn == 0 {
				uIn = 1
				if inside != nil && !inside(u) {
					uIn = -1
				}
			}
			if uIn < 0 {
				break
			}
			w := g.to[e]
			if w == u {
				return []int32{e} // nothing is shorter than a self-loop
			}
			if best != nil && len(best) <= 2 {
				continue
			}
			if inside != nil && !inside(w) {
				continue
			}
			if limit > 0 && tries >= limit {
				return best
			}
			tries++
			depth := -1 // the longest w->u path that can beat best
			if best != nil {
				depth = len(best) - 2
			}
			g.begin()
			if f := g.bfs(w, u, other, inside, depth); f >= 0 {
				path := g.pathTo(f)
				best = append(append(make([]int32, 0, len(path)+1), e), path...)
			}
		}
	}
	return best
}

// TopoOrder returns the nodes in a topological order of the subgraph of
// the edges whose label is in mask. It uses Kahn's algorithm, taking ready
// nodes first-in first-out, starting with the sources in increasing id.
// If that subgraph has a cycle, the result is nil, false.
func (g *Graph) TopoOrder(mask Mask) (order []int32, ok bool) {
	indeg := make([]int32, g.n)
	for e, y := range g.to {
		if mask>>g.label[e]&1 != 0 {
			indeg[y]++
		}
	}
	order = make([]int32, 0, g.n)
	for v, d := range indeg {
		if d == 0 {
			order = append(order, int32(v))
		}
	}
	for head := 0; head < len(order); head++ {
		x := order[head]
		for e := g.off[x]; e < g.off[x+1]; e++ {
			if mask>>g.label[e]&1 == 0 {
				continue
			}
			y := g.to[e]
			if indeg[y]--; indeg[y] == 0 {
				order = append(order, y)
			}
		}
	}
	if len(order) < g.n {
		return nil, false
	}
	return order, true
}
