package graph

import (
	"fmt"
	"math"
)

// MaxLabel is the largest edge label. Labels are 0..MaxLabel, so that
// every label has a bit in a Mask.
const MaxLabel = 31

// Edge is one labelled, directed edge of a graph.
type Edge struct {
	From, To int32 // source and target nodes
	Label    uint8 // the caller's dependency kind, 0..MaxLabel
	Data     int32 // the caller's payload, for example a key id, or -1
}

// Mask is a set of edge labels: bit i stands for label i.
type Mask uint32

// AllLabels is the mask that holds every label.
const AllLabels = ^Mask(0)

// MaskOf returns the set of the given labels. Labels above MaxLabel are
// ignored.
func MaskOf(labels ...uint8) Mask {
	var m Mask
	for _, l := range labels {
		if l <= MaxLabel {
			m |= 1 << l
		}
	}
	return m
}

// Has reports whether label l is in m.
func (m Mask) Has(l uint8) bool { return l <= MaxLabel && m&(1<<l) != 0 }

// Builder collects the nodes and edges of a Graph. Create it with
// NewBuilder, and call Build once when all edges are added.
type Builder struct {
	n     int
	from  []int32
	to    []int32
	label []uint8
	data  []int32
}

// NewBuilder returns a Builder for a graph with nodes 0..nodes-1.
// edgeHint is the expected number of edges. It sizes the edge arrays in
// advance and may be 0.
func NewBuilder(nodes int, edgeHint int) *Builder {
	if nodes < 0 || nodes > math.MaxInt32-1 {
		panic(fmt.Sprintf("graph: node count %d out of range", nodes))
	}
	edgeHint = max(edgeHint, 0)
	return &Builder{
		n:     nodes,
		from:  make([]int32, 0, edgeHint),
		to:    make([]int32, 0, edgeHint),
		label: make([]uint8, 0, edgeHint),
		data:  make([]int32, 0, edgeHint),
	}
}

// AddNode appends a node to the graph and returns its id. Use it for
// auxiliary nodes that are not known when the Builder is created.
func (b *Builder) AddNode() int32 {
	if b.n >= math.MaxInt32-1 {
		panic("graph: too many nodes")
	}
	b.n++
	return int32(b.n - 1)
}

// Add adds the edge from->to with the given label and payload. Both nodes
// must already exist, and label must be at most MaxLabel. Otherwise Add
// panics. Duplicate edges and self-loops are allowed.
func (b *Builder) Add(from, to int32, label uint8, data int32) {
	if from < 0 || int(from) >= b.n || to < 0 || int(to) >= b.n {
		panic(fmt.Sprintf("graph: edge %d->%d out of range [0,%d)", from, to, b.n))
	}
	if label > MaxLabel {
		panic(fmt.Sprintf("graph: label %d > %d", label, MaxLabel))
	}
	if len(b.to) >= math.MaxInt32 {
		panic("graph: too many edges")
	}
	b.from = append(b.from, from)
	b.to = append(b.to, to)
	b.label = append(b.label, label)
	b.data = append(b.data, data)
}

// Build returns the graph of the collected nodes and edges in CSR form.
// Each node's out-edges keep the order in which they were added. Build
// reuses some of the Builder's arrays, so it empties the Builder. The
// Builder then holds no nodes and no edges.
func (b *Builder) Build() *Graph {
	n, m := b.n, len(b.to)
	off := make([]int32, n+1)
	for _, f := range b.from {
		off[f+1]++
	}
	for v := range n {
		off[v+1] += off[v]
	}
	// Turn b.from into each edge's destination index. A stable counting
	// sort keeps insertion order within each node.
	dest := b.from
	for i, f := range dest {
		dest[i] = off[f]
		off[f]++
	}
	for v := n; v > 0; v-- {
		off[v] = off[v-1]
	}
	off[0] = 0
	// Scatter the edge arrays one at a time. Each array a pass frees is
	// reused by the next pass, so at the peak Build needs only 5 bytes per
	// edge beyond the Builder's 13. Following the permutation's cycles in
	// place would need no extra memory, but it was about ten times slower,
	// because its random accesses form a dependent chain.
	to := make([]int32, m)
	for i, d := range dest {
		to[d] = b.to[i]
	}
	data := b.to[:m:m]
	for i, d := range dest {
		data[d] = b.data[i]
	}
	label := make([]uint8, m)
	for i, d := range dest {
		label[d] = b.label[i]
	}
	*b = Builder{}
	return &Graph{n: n, off: off, to: to, label: label, data: data}
}

// Graph is an immutable directed multigraph in CSR form, with labelled
// edges. Edge indices are 0..Edges()-1. The out-edges of node v are the
// indices Out(v) returns.
//
// The methods of a Graph are not safe for concurrent use. The searches
// share scratch space stored in the Graph (see the package comment).
type Graph struct {
	n     int
	off   []int32 // out-edges of v are off[v]..off[v+1]-1
	to    []int32
	label []uint8
	data  []int32

	// Scratch space for the breadth-first searches, allocated on first use.
	stamp  []uint32 // stamp[v] == epoch: v was visited by the current search
	epoch  uint32
	parent []int32 // parent[v]: the edge that reached v in the current search
	queue  []int32
}

// Nodes returns the number of nodes.
func (g *Graph) Nodes() int { return g.n }

// Edges returns the number of edges.
func (g *Graph) Edges() int { return len(g.to) }

// Out returns the range [lo, hi) of the edge indices of v's out-edges.
// They are in the order in which they were added.
func (g *Graph) Out(v int32) (lo, hi int32) { return g.off[v], g.off[v+1] }

// Edge returns edge i. The graph does not store edge sources, so Edge
// finds From by binary search over the offsets, which takes O(log n). Use
// To, Label and Data in hot loops that already know the source.
func (g *Graph) Edge(i int32) Edge {
	return Edge{From: g.From(i), To: g.to[i], Label: g.label[i], Data: g.data[i]}
}

// From returns the source node of edge i in O(log n) time.
func (g *Graph) From(i int32) int32 {
	if i < 0 || int(i) >= len(g.to) {
		panic(fmt.Sprintf("graph: edge %d out of range [0,%d)", i, len(g.to)))
	}
	// Find the smallest v with off[v+1] > i.
	lo, hi := 0, g.n-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if g.off[mid+1] > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return int32(lo)
}

// To returns the target node of edge i.
func (g *Graph) To(i int32) int32 { return g.to[i] }

// Label returns the label of edge i.
func (g *Graph) Label(i int32) uint8 { return g.label[i] }

// Data returns the payload of edge i.
func (g *Graph) Data(i int32) int32 { return g.data[i] }
