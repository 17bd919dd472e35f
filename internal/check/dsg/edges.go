package dsg

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
)

// Edges accumulates the dependency edges of a history over transaction
// nodes (Init is node 0, transaction t is node t+1), handling the split
// encoding for snapshot isolation and the auxiliary real-time chain. Every
// builder of dependency graphs (read/write, list append) uses it.
type Edges struct {
	b     *graph.Builder
	n     int
	split int32
	mask  graph.Mask
}

// NewEdges starts a graph over n transactions; split selects the
// snapshot-isolation encoding; hint is the expected number of edges.
func NewEdges(n int, split bool, hint int) *Edges {
	e := &Edges{n: n}
	nodes := n + 1
	if split {
		e.split = int32(n + 1)
		nodes *= 2
	}
	e.b = graph.NewBuilder(nodes, hint)
	return e
}

// Dep adds a dependency that is not an anti-dependency (ww, wr, so, pwr):
// with the split encoding it also enters the target's second node, from
// which one anti-dependency may follow.
func (e *Edges) Dep(from, to history.TxnID, d anomaly.Dep, k history.KeyID) {
	e.mask |= 1 << d
	e.b.Add(Node(from), Node(to), uint8(d), int32(k))
	if e.split > 0 {
		e.b.Add(Node(from), Node(to)+e.split, uint8(d), int32(k))
	}
}

// Order adds a ww edge that orders two versions without making the first
// writer visible to the second (prefix consistency): with the split
// encoding it enters only the target's first node, from which no
// anti-dependency follows directly.
func (e *Edges) Order(from, to history.TxnID, k history.KeyID) {
	e.mask |= 1 << anomaly.WW
	e.b.Add(Node(from), Node(to), uint8(anomaly.WW), int32(k))
}

// Anti adds an anti-dependency (rw, prw); with the split encoding it leaves
// the source's second node.
func (e *Edges) Anti(from, to history.TxnID, d anomaly.Dep, k history.KeyID) {
	e.mask |= 1 << d
	e.b.Add(Node(from)+e.split, Node(to), uint8(d), int32(k))
}

// SessionOrder adds so edges between consecutive transactions of each
// session that took effect.
func (e *Edges) SessionOrder(h *history.History, effective func(history.TxnID) bool) {
	last := make([]history.TxnID, len(h.Sessions))
	for i := range last {
		last[i] = -1
	}
	for i := range h.Txns {
		t := history.TxnID(i)
		if !effective(t) {
			continue
		}
		s := h.Txns[i].Session
		if last[s] >= 0 {
			e.Dep(last[s], t, anomaly.SO, history.NoKey)
		}
		last[s] = t
	}
}

// RealTime encodes real time in O(n log n) edges through RealTimeChain.
func (e *Edges) RealTime(h *history.History, effective func(history.TxnID) bool) {
	e.mask |= Mask(anomaly.RT)
	aux, edges := RealTimeChain(h, effective)
	base := int32(-1)
	for range aux {
		if v := e.b.AddNode(); base < 0 {
			base = v
		}
	}
	for _, ed := range edges {
		from, to := ed[0], ed[1]
		if from < 0 {
			from = base + (-from - 1)
		}
		if to < 0 {
			to = base + (-to - 1)
		}
		e.b.Add(from, to, uint8(anomaly.RT), int32(history.NoKey))
	}
}

// RealTimeChain encodes real time in O(n log n): transactions sorted by end
// get a chain of auxiliary nodes A_1 → A_2 → …; each transaction enters the
// chain at its own position, and the chain enters transaction S at the last
// position whose end is before S began. A path T ⇝ S exists through the
// chain exactly when T ended before S began. A transaction of unknown
// status precedes nothing: if it committed, it may have done so at any
// time after it began (its end is when the client gave up waiting). It
// returns the number of
// auxiliary nodes and the edges, with transaction t as Node(t) and
// auxiliary node i as -(i+1).
func RealTimeChain(h *history.History, effective func(history.TxnID) bool) (int, [][2]int32) {
	var byEnd []history.TxnID
	for i := range h.Txns {
		if effective(history.TxnID(i)) && h.Txns[i].HasTime {
			byEnd = append(byEnd, history.TxnID(i))
		}
	}
	slices.SortFunc(byEnd, func(a, c history.TxnID) int {
		ea, ec := h.Txns[a].End, h.Txns[c].End
		switch {
		case ea < ec:
			return -1
		case ea > ec:
			return 1
		}
		return int(a) - int(c)
	})
	aux := func(i int) int32 { return -int32(i) - 1 }
	edges := make([][2]int32, 0, 3*len(byEnd))
	for i, t := range byEnd {
		if h.Txns[t].Status != history.Unknown {
			edges = append(edges, [2]int32{Node(t), aux(i)})
		}
		if i > 0 {
			edges = append(edges, [2]int32{aux(i - 1), aux(i)})
		}
	}
	for _, t := range byEnd {
		begin := h.Txns[t].Begin
		i, _ := slices.BinarySearchFunc(byEnd, begin, func(x history.TxnID, b int64) int {
			if h.Txns[x].End < b {
				return -1
			}
			return 1
		})
		if i > 0 {
			edges = append(edges, [2]int32{aux(i - 1), Node(t)})
		}
	}
	return len(byEnd), edges
}

// Finish builds the graph.
func (e *Edges) Finish() *Graph {
	firstAux := int32(e.n + 1)
	if e.split > 0 {
		firstAux *= 2
	}
	split := e.split
	return &Graph{
		G:    e.b.Build(),
		Mask: e.mask,
		Nodes: func(v int32) (history.TxnID, bool) {
			if v >= firstAux {
				return 0, false
			}
			if split > 0 && v >= split {
				v -= split
			}
			return history.TxnID(v - 1), true
		},
	}
}
