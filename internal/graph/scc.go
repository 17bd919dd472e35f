package graph

// sccFrame is one frame of the explicit depth-first search stack.
type sccFrame struct {
	v    int32 // the node being visited
	e    int32 // the next out-edge of v to examine
	root bool  // v is still a candidate component root
}

// SCC returns the strongly connected components of the subgraph of the
// edges whose label is in mask. comp[v] is the component of node v, in
// 0..count-1.
//
// The ids are in reverse topological order of the condensation: if an edge
// in mask goes from u to v and comp[u] != comp[v], then comp[u] > comp[v].
// So component 0 is a sink.
//
// SCC uses Pearce's space-efficient variant of Tarjan's algorithm, with an
// explicit stack instead of recursion. Besides comp, it uses one stack
// frame of 12 bytes per node on the current DFS path, and one int32 per
// node waiting on the component stack. It runs in O(n + m).
func (g *Graph) SCC(mask Mask) (comp []int32, count int) {
	n := g.n
	// rindex[v] == 0: v is not visited yet. While v is active, rindex[v] is
	// its (lowered) visit index. Once v's component is finished,
	// rindex[v] = c, where c counts down from n-1 (Pearce, 2016).
	rindex := make([]int32, n)
	var frames []sccFrame
	var stack []int32
	index := int32(1)
	c := int32(n - 1)
	off, to, label := g.off, g.to, g.label
	for s := range int32(n) {
		if rindex[s] != 0 {
			continue
		}
		rindex[s] = index
		index++
		frames = append(frames, sccFrame{v: s, e: off[s], root: true})
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			v := f.v
			end := off[v+1]
			descended := false
			for f.e < end {
				e := f.e
				f.e++
				if mask>>label[e]&1 == 0 {
					continue
				}
				w := to[e]
				if rindex[w] == 0 {
					rindex[w] = index
					index++
					frames = append(frames, sccFrame{v: w, e: off[w], root: true})
					descended = true
					break
				}
				if rindex[w] < rindex[v] {
					rindex[v] = rindex[w]
					f.root = false
				}
			}
			if descended {
				continue
			}
			// All of v's edges are done: finish v.
			root := f.root
			frames = frames[:len(frames)-1]
			if root {
				index--
				for len(stack) > 0 && rindex[v] <= rindex[stack[len(stack)-1]] {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					rindex[w] = c
					index--
				}
				rindex[v] = c
				c--
			} else {
				stack = append(stack, v)
			}
			// Back in the parent: the tree edge parent->v is done.
			if len(frames) > 0 {
				p := &frames[len(frames)-1]
				if rindex[v] < rindex[p.v] {
					rindex[p.v] = rindex[v]
					p.root = false
				}
			}
		}
	}
	// Number the components in the order they were finished.
	last := int32(n - 1)
	for v, r := range rindex {
		rindex[v] = last - r
	}
	return rindex, int(last - c)
}

// NontrivialSCCs returns the node lists of the strongly connected
// components, over the edges in mask, that hold a cycle. Those are the
// components with more than one node, and single nodes with a self-loop
// whose label is in mask. The lists come in increasing component id (see
// SCC), and each list is sorted by node id. All lists share one backing
// array. The result is nil if the graph restricted to mask is acyclic.
func (g *Graph) NontrivialSCCs(mask Mask) [][]int32 {
	comp, count := g.SCC(mask)
	// size[c] counts c's nodes. Components that hold a cycle get their
	// size negated, as a mark.
	size := make([]int32, count)
	for _, c := range comp {
		size[c]++
	}
	for v := range int32(g.n) {
		if size[comp[v]] != 1 {
			continue
		}
		for e := g.off[v]; e < g.off[v+1]; e++ {
			if g.to[e] == v && mask>>g.label[e]&1 != 0 {
				size[comp[v]] = -1 // a self-loop: mark it now
				break
			}
		}
	}
	// Turn the sizes into start offsets in one backing array. start[c] is
	// -1 for components that are left out.
	total, lists := int32(0), 0
	for c, s := range size {
		switch {
		case s > 1 || s < 0:
			size[c] = total
			total += max(s, -s)
			lists++
		default:
			size[c] = -1
		}
	}
	if lists == 0 {
		return nil
	}
	start := size
	nodes := make([]int32, total)
	out := make([][]int32, 0, lists)
	for v, c := range comp {
		if p := start[c]; p >= 0 {
			nodes[p] = int32(v)
			start[c]++
		}
	}
	// start[c] now points one past the end of c's list.
	lo := int32(0)
	for _, end := range start {
		if end >= 0 {
			out = append(out, nodes[lo:end:end])
			lo = end
		}
	}
	return out
}
