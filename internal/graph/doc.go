// Package graph holds the dependency graphs that isoscope searches for
// dsg. The graphs can have millions of nodes, so the package keeps them
// lean and flat.
//
// Nodes are the int32 values 0..n-1. Each edge carries a Label, which is
// the caller's dependency kind (0..31), and a Data payload. Callers store,
// for example, a key id in Data, or -1 when there is none. A Mask is a set
// of labels. Every search takes a Mask and uses only the edges whose label
// is in it, so one graph can hold several dependency relations, and a
// search can look at any union of them.
//
// A Builder collects edges. Build turns them into a Graph stored as
// compressed sparse rows (CSR): an offset array per node, plus one flat
// array each for edge targets, labels and payloads. Edge sources are not
// stored. Edge finds them by binary search over the offsets.
//
// The algorithms never recurse in proportion to graph size.
//   - SCC and NontrivialSCCs run an iterative form of Pearce's
//     space-efficient variant of Tarjan's algorithm.
//   - ShortestCycleThrough, ShortestPath and ShortestCycleWithExactlyOne
//     use breadth-first search.
//   - TopoOrder uses Kahn's algorithm.
//   - SplitTopoOrder runs it on the split encoding of one or more graphs
//     (snapshot isolation's: a second node per node, split.go) without
//     building it; Split builds it.
//
// The breadth-first searches keep their scratch space in the Graph: a
// visited-epoch stamp per node, a parent edge per node and a queue. That
// space is allocated on first use and reused by later searches. A search
// costs time in proportion to the region it explores, never O(n) per call.
// Because of this shared scratch space, the methods of a Graph are not
// safe for concurrent use. Give each goroutine its own Graph, or
// serialize the calls.
//
// Later, the SAT theory will add Pearce–Kelly incremental topological
// ordering. It is not part of the package yet.
package graph
