package graph

import (
	"fmt"
	"math"
)

// The split encoding (snapshot isolation's, internal/check/dsg) gives each
// node v of a graph over n nodes a second node v+n. An edge u→v whose
// label is in the anti mask leaves the second node: u+n→v. Every other
// edge enters both of the target's nodes: u→v and u→v+n. A cycle of the
// split graph is then a cycle of the graph in which no two anti edges
// follow each other.
//
// The split graph has about twice the edges of the graph. Split builds
// it; SplitTopoOrder searches it without building it, walking the edges
// of one or more graphs over the same nodes as if they were one split
// graph, so that a check that needs only its order or whether it has a
// cycle holds the graph once.

// Split returns the split encoding of g with the labels in anti as
// anti-dependencies: 2n nodes, node v's out-edges the non-anti out-edges
// of v in g, each as two edges (to w, then to w+n), and node v+n's the
// anti out-edges of v, in g's order. Labels and payloads are kept.
func (g *Graph) Split(anti Mask) *Graph {
	n := g.n
	if n > (math.MaxInt32-1)/2 {
		panic(fmt.Sprintf("graph: %d nodes are too many to split", n))
	}
	m := 0
	for _, l := range g.label {
		if anti>>l&1 != 0 {
			m++
		} else {
			m += 2
		}
	}
	if m > math.MaxInt32 {
		panic("graph: too many edges to split")
	}
	off := make([]int32, 2*n+1)
	to := make([]int32, 0, m)
	label := make([]uint8, 0, m)
	data := make([]int32, 0, m)
	for v := range n {
		for e := g.off[v]; e < g.off[v+1]; e++ {
			if l := g.label[e]; anti>>l&1 == 0 {
				w := g.to[e]
				to = append(to, w, w+int32(n))
				label = append(label, l, l)
				data = append(data, g.data[e], g.data[e])
			}
		}
		off[v+1] = int32(len(to))
	}
	for v := range n {
		for e := g.off[v]; e < g.off[v+1]; e++ {
			if l := g.label[e]; anti>>l&1 != 0 {
				to = append(to, g.to[e])
				label = append(label, l)
				data = append(data, g.data[e])
			}
		}
		off[n+v+1] = int32(len(to))
	}
	return &Graph{n: 2 * n, off: off, to: to, label: label, data: data}
}

// SplitTopoOrder returns what TopoOrder(mask) returns on the split
// encoding (Split(anti)) of the union of gs, graphs over the same number
// of nodes, without building it: the order over 2n nodes, or nil, false
// when it has a cycle. With one graph the order is the one TopoOrder
// gives on Split(anti); with more, each node's out-edges are taken graph
// by graph, in gs's order.
func SplitTopoOrder(anti, mask Mask, gs ...*Graph) (order []int32, ok bool) {
	if len(gs) == 0 {
		return []int32{}, true
	}
	if gs[0].n > (math.MaxInt32-1)/2 {
		panic(fmt.Sprintf("graph: %d nodes are too many to split", gs[0].n))
	}
	n := int32(gs[0].n)
	for _, g := range gs[1:] {
		if int32(g.n) != n {
			panic("graph: SplitTopoOrder of graphs with different node counts")
		}
	}
	indeg := make([]int32, 2*n)
	for _, g := range gs {
		for e, y := range g.to {
			switch l := g.label[e]; {
			case mask>>l&1 == 0:
			case anti>>l&1 != 0:
				indeg[y]++
			default:
				indeg[y]++
				indeg[y+n]++
			}
		}
	}
	order = make([]int32, 0, 2*n)
	for v, d := range indeg {
		if d == 0 {
			order = append(order, int32(v))
		}
	}
	for head := 0; head < len(order); head++ {
		x := order[head]
		first := x < n
		u := x
		if !first {
			u -= n
		}
		for _, g := range gs {
			for e := g.off[u]; e < g.off[u+1]; e++ {
				l := g.label[e]
				if mask>>l&1 == 0 || (anti>>l&1 != 0) == first {
					continue
				}
				y := g.to[e]
				if indeg[y]--; indeg[y] == 0 {
					order = append(order, y)
				}
				if first {
					if indeg[y+n]--; indeg[y+n] == 0 {
						order = append(order, y+n)
					}
				}
			}
		}
	}
	if len(order) < int(2*n) {
		return nil, false
	}
	return order, true
}
