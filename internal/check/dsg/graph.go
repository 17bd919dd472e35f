package dsg

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
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
	Nodes       Nodes
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

// Build builds the graph of ix's history. Every read whose value exactly
// one write (or the initial state) holds names its writer; reads that
// resolve to nothing, to several writes, to the reader itself or to a
// transaction that did not take effect add no edge (the shared checks
// report the first and the last two). With unique values that is every read.
func Build(ix *history.Index, o Options) *Graph {
	h := ix.History()
	n := len(h.Txns)
	nw := ix.NumWrites()
	initID := func(k history.KeyID) int32 { return int32(nw) + int32(k) }
	e := NewEdges(n, o.Split, 6*n)
	child := make([]int32, nw+len(h.Keys)) // first overwriting reader + 1; 0 none
	var extra map[int32][]history.TxnID    // further overwriting readers (divergence)
	reads := make([]readRec, 0, 2*n)
	var written, firstRead []history.KeyID
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
			id := ix.ReadFrom(t, j)
			if ix.WrittenInitially(op.Key, op.Value) {
				if id >= 0 {
					return // ambiguous: the initial state and a write hold the value
				}
				wid = initID(op.Key)
			} else {
				if id < 0 || ix.NextWrite(id) >= 0 {
					return // nobody, or several, wrote the value
				}
				wid, writer = id, ix.WriteRef(id).Txn
				if writer == t || !ix.Effective(writer) {
					return
				}
				e.Dep(writer, t, anomaly.WR, op.Key)
			}
			if !first {
				if writer != history.Init && slices.Contains(written, op.Key) {
					e.Dep(writer, t, anomaly.WW, op.Key)
				}
				return
			}
			reads = append(reads, readRec{t, wid, op.Key})
			if !slices.Contains(written, op.Key) {
				return
			}
			if writer != history.Init {
				e.Dep(writer, t, anomaly.WW, op.Key)
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
	var divs []Divergence
	for wid, more := range extra {
		d := Divergence{Writer: history.Init, Key: history.KeyID(wid - int32(nw)),
			Readers: append([]history.TxnID{history.TxnID(child[wid] - 1)}, more...)}
		if wid < int32(nw) {
			ref := ix.WriteRef(wid)
			d.Writer, d.Key = ref.Txn, h.Txns[ref.Txn].Ops[ref.Op].Key
		}
		divs = append(divs, d)
	}
	slices.SortFunc(divs, func(a, b Divergence) int { return int(a.Readers[0]) - int(b.Readers[0]) })
	if o.AntiDependencies {
		for _, r := range reads {
			if c := child[r.wid]; c != 0 && history.TxnID(c-1) != r.t {
				e.Anti(r.t, history.TxnID(c-1), anomaly.RW, r.key)
			}
			for _, s := range extra[r.wid] {
				if s != r.t {
					e.Anti(r.t, s, anomaly.RW, r.key)
				}
			}
		}
	}
	if o.SessionOrder {
		e.SessionOrder(h, ix.Effective)
	}
	if o.RealTime {
		e.RealTime(h, ix.Effective)
	}
	g := e.Finish()
	g.Divergences = divs
	return g
}
