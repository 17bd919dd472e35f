// Package depgraph builds the dependency graph that a history with unique
// values fixes by itself (MTC Algorithm 1, BuildDependency, in the optimised
// form of §IV-C without the transitive closure of ww): wr edges from each
// read to the one write of its value; ww edges from the version a
// transaction read to the transaction's own write of that key
// (read-modify-write); rw edges from every other reader of a version to the
// transaction that overwrote it that way; so edges between consecutive
// transactions of a session; and rt edges encoded in O(n log n) through a
// chain of auxiliary time nodes instead of n² pairs.
//
// For snapshot isolation the graph can be built split: every transaction
// has a second node that only anti-dependency edges leave, so that a cycle
// of the split graph is exactly a cycle of (SO ∪ WR ∪ WW) ; RW? (MTC
// Definition 6), in linear size.
package depgraph

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/cycles"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
)

// Options chooses the edges of the graph.
type Options struct {
	SessionOrder bool
	RealTime     bool
	// AntiDependencies adds rw edges.
	AntiDependencies bool
	// Split builds the snapshot-isolation encoding.
	Split bool
	// AllReads takes wr and ww edges from every external read, not only
	// the first read of each key (for levels that allow non-repeatable
	// reads, where each read has its own writer).
	AllReads bool
}

// Divergence is MTC's Definition 10: two transactions read the same version
// of a key and both overwrote it.
type Divergence struct {
	Key history.KeyID
	// Writer wrote the version both read (Init for the initial state).
	Writer history.TxnID
	// Readers are the transactions that read it and wrote the key.
	Readers []history.TxnID
}

// Graph is a built dependency graph with its node mapping.
type Graph struct {
	G *graph.Graph
	// Nodes maps graph nodes back to transactions.
	Nodes       cycles.Nodes
	Divergences []Divergence
	// Mask holds every label the graph uses.
	Mask graph.Mask
}

// Node returns the graph node of transaction t (Init is node 0).
func Node(t history.TxnID) int32 { return int32(t) + 1 }

type readRec struct {
	t   history.TxnID
	wid int32
	key history.KeyID
}

// Build builds the graph of ix's history. It assumes unique values: every
// read resolves to at most one write. Reads that resolve to nothing, to
// the reader itself or to a transaction that did not take effect add no
// edge (the shared checks report them).
func Build(ix *history.Index, o Options) *Graph {
	h := ix.History()
	n := len(h.Txns)
	nw := ix.NumWrites()
	initID := func(k history.KeyID) int32 { return int32(nw) + int32(k) }
	split := int32(0)
	nodes := n + 1
	if o.Split {
		split = int32(n + 1)
		nodes *= 2
	}
	b := graph.NewBuilder(nodes, 6*n)
	child := make([]int32, nw+len(h.Keys)) // first overwriting reader + 1; 0 none
	var extra map[int32][]history.TxnID    // further overwriting readers (divergence)
	reads := make([]readRec, 0, 2*n)
	var written, firstRead []history.KeyID
	addD := func(from, to int32, d anomaly.Dep, k history.KeyID) {
		b.Add(from, to, uint8(d), int32(k))
		if o.Split {
			b.Add(from, to+split, uint8(d), int32(k))
		}
	}
	for i := range h.Txns {
		t := history.TxnID(i)
		if !ix.Effective(t) {
			continue
		}
		written = written[:0]
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Write {
				written = append(written, op.Key)
			}
		}
		firstRead = firstRead[:0]
		ix.ExternalReads(t, func(j int, op history.Op) {
			first := !slices.Contains(firstRead, op.Key)
			if !first && !o.AllReads {
				return // only the first external read of a key counts
			}
			if first {
				firstRead = append(firstRead, op.Key)
			}
			var wid int32
			writer := history.Init
			if ix.WrittenInitially(op.Key, op.Value) {
				wid = initID(op.Key)
			} else {
				id := ix.ReadFrom(t, j)
				if id < 0 {
					return
				}
				wid, writer = id, ix.WriteRef(id).Txn
				if writer == t || !ix.Effective(writer) {
					return
				}
				addD(Node(writer), Node(t), anomaly.WR, op.Key)
			}
			if !first {
				if writer != history.Init && slices.Contains(written, op.Key) {
					addD(Node(writer), Node(t), anomaly.WW, op.Key)
				}
				return
			}
			reads = append(reads, readRec{t, wid, op.Key})
			if !slices.Contains(written, op.Key) {
				return
			}
			if writer != history.Init {
				addD(Node(writer), Node(t), anomaly.WW, op.Key)
			}
			if child[wid] == 0 {
				child[wid] = int32(t) + 1
				return
			}
			if extra == nil {
				extra = map[int32][]history.TxnID{}
			}
			extra[wid] = append(extra[wid], t)
		})
	}
	g := &Graph{Mask: cycles.Mask(anomaly.WW, anomaly.WR)}
	for wid, more := range extra {
		d := Divergence{Writer: history.Init, Key: history.KeyID(wid - int32(nw)),
			Readers: append([]history.TxnID{history.TxnID(child[wid] - 1)}, more...)}
		if wid < int32(nw) {
			ref := ix.WriteRef(wid)
			d.Writer, d.Key = ref.Txn, h.Txns[ref.Txn].Ops[ref.Op].Key
		}
		g.Divergences = append(g.Divergences, d)
	}
	slices.SortFunc(g.Divergences, func(a, b Divergence) int { return int(a.Readers[0]) - int(b.Readers[0]) })
	if o.AntiDependencies {
		g.Mask |= cycles.Mask(anomaly.RW)
		for _, r := range reads {
			from := Node(r.t) + split
			if c := child[r.wid]; c != 0 && history.TxnID(c-1) != r.t {
				b.Add(from, Node(history.TxnID(c-1)), uint8(anomaly.RW), int32(r.key))
			}
			for _, s := range extra[r.wid] {
				if s != r.t {
					b.Add(from, Node(s), uint8(anomaly.RW), int32(r.key))
				}
			}
		}
	}
	if o.SessionOrder {
		g.Mask |= cycles.Mask(anomaly.SO)
		last := make([]history.TxnID, len(h.Sessions))
		for i := range last {
			last[i] = -1
		}
		for i := range h.Txns {
			t := history.TxnID(i)
			if !ix.Effective(t) {
				continue
			}
			s := h.Txns[i].Session
			if last[s] >= 0 {
				addD(Node(last[s]), Node(t), anomaly.SO, history.NoKey)
			}
			last[s] = t
		}
	}
	firstAux := int32(nodes)
	if o.RealTime {
		g.Mask |= cycles.Mask(anomaly.RT)
		addRealTime(b, ix)
	}
	g.G = b.Build()
	g.Nodes = func(v int32) (history.TxnID, bool) {
		if v >= firstAux {
			return 0, false
		}
		if split > 0 && v >= split {
			v -= split
		}
		return history.TxnID(v - 1), true
	}
	return g
}

// addRealTime encodes real time: transactions sorted by end get a chain of
// auxiliary nodes A_1 → A_2 → …; each transaction enters the chain at its
// own position, and the chain enters transaction S at the last position
// whose end is before S began. A path T ⇝ S exists through the chain
// exactly when T ended before S began.
func addRealTime(b *graph.Builder, ix *history.Index) {
	h := ix.History()
	var byEnd []history.TxnID
	for i := range h.Txns {
		if ix.Effective(history.TxnID(i)) && h.Txns[i].HasTime {
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
	aux := make([]int32, len(byEnd))
	for i, t := range byEnd {
		aux[i] = b.AddNode()
		b.Add(Node(t), aux[i], uint8(anomaly.RT), int32(history.NoKey))
		if i > 0 {
			b.Add(aux[i-1], aux[i], uint8(anomaly.RT), int32(history.NoKey))
		}
	}
	for _, t := range byEnd {
		begin := h.Txns[t].Begin
		// the last position whose end is strictly before begin
		i, _ := slices.BinarySearchFunc(byEnd, begin, func(x history.TxnID, b int64) int {
			if h.Txns[x].End < b {
				return -1
			}
			return 1
		})
		if i > 0 {
			b.Add(aux[i-1], Node(t), uint8(anomaly.RT), int32(history.NoKey))
		}
	}
}
