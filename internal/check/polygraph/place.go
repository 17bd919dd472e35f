package polygraph

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// place decides a level without anti-dependencies (read committed, read
// uncommitted) in time linear in the candidates, without the solver. Such
// a level holds iff the transactions can be placed in an order in which
// every read is explained by the initial state or by a candidate writer
// placed before it, and every known edge (a white-box version order,
// session order where the level has it) points forward: a topological
// order of an acyclic wr ∪ ww graph is such an order, and such an order
// gives the version order and the writer of each read, every edge
// forward. Placing a transaction only adds explanations, so placing
// greedily whatever can be placed, until nothing can, decides it.
// Optional transactions (unknown outcome, not certainly observed) are
// placed when they can be and need not be.
//
// It returns nil when every certain transaction is placed, or else a cycle
// among the unplaced ones: each step a candidate writer (or known
// predecessor) that could not be placed before its reader — a cycle of
// the dependency graph under one choice of writers, so marked best-found.
func (p *Polygraph) place() []anomaly.Anomaly {
	h := p.h
	n := len(h.Txns)
	// need[t] counts t's unexplained reads and unplaced known predecessors.
	need := make([]int32, n)
	explained := make([]bool, len(p.Reads))
	byCand := map[history.TxnID][]int32{} // candidate → reads it may serve
	readsOf := make([][]int32, n)
	for i, r := range p.Reads {
		readsOf[r.R] = append(readsOf[r.R], int32(i))
		if slices.Contains(r.Cands, history.Init) {
			explained[i] = true
			continue
		}
		need[r.R]++
		for _, c := range r.Cands {
			byCand[c] = append(byCand[c], int32(i))
		}
	}
	succ := make([][]Edge, n)
	for _, k := range p.Known {
		if k.From != history.Init && k.From != k.To {
			succ[k.From] = append(succ[k.From], k)
			need[k.To]++
		}
	}
	placed := make([]bool, n)
	var ready []history.TxnID
	for t := range n {
		if p.Present(history.TxnID(t)) && need[t] == 0 {
			ready = append(ready, history.TxnID(t))
		}
	}
	impossible := map[history.TxnID]bool{}
	for _, t := range p.Impossible {
		impossible[t] = true
	}
	for len(ready) > 0 {
		t := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		if placed[t] || impossible[t] {
			continue
		}
		placed[t] = true
		release := func(u history.TxnID) {
			if need[u]--; need[u] == 0 && p.Present(u) {
				ready = append(ready, u)
			}
		}
		for _, i := range byCand[t] {
			if !explained[i] {
				explained[i] = true
				release(p.Reads[i].R)
			}
		}
		for _, k := range succ[t] {
			release(k.To)
		}
	}
	var stuck history.TxnID = -1
	for t := range n {
		if !placed[t] && p.certain(history.TxnID(t)) {
			stuck = history.TxnID(t)
			break
		}
	}
	if stuck < 0 {
		return nil
	}
	// Walk back from a stuck transaction along what it waits for; every
	// step stays among unplaced transactions, so the walk closes a cycle.
	var steps []anomaly.Step
	at := map[history.TxnID]int{}
	for t := stuck; ; {
		if i, ok := at[t]; ok {
			cycle := steps[i:]
			for l, r := 0, len(cycle)-1; l < r; l, r = l+1, r-1 {
				cycle[l], cycle[r] = cycle[r], cycle[l]
			}
			kind, ph := anomaly.Classify(h, cycle)
			return []anomaly.Anomaly{{Kind: kind, Phenomenon: ph, Txns: txnsOf(cycle), Key: history.NoKey, Cycle: cycle, BestFound: true}}
		}
		at[t] = len(steps)
		st, ok := p.waitsFor(t, placed, explained, readsOf, impossible)
		if !ok {
			return []anomaly.Anomaly{{Kind: anomaly.Cycle, Phenomenon: anomaly.G1c, Txns: []history.TxnID{stuck}, Key: history.NoKey, BestFound: true}}
		}
		steps = append(steps, st)
		t = st.From
	}
}

// waitsFor returns an edge into t from an unplaced transaction that t waits
// for: a known predecessor, or a candidate writer of an unexplained read.
func (p *Polygraph) waitsFor(t history.TxnID, placed, explained []bool, readsOf [][]int32, impossible map[history.TxnID]bool) (anomaly.Step, bool) {
	for _, k := range p.Known {
		if k.To == t && k.From != history.Init && !placed[k.From] && p.Present(k.From) {
			return anomaly.Step{From: k.From, To: t, Dep: k.Dep, Key: k.Key}, true
		}
	}
	for _, i := range readsOf[t] {
		if explained[i] {
			continue
		}
		r := p.Reads[i]
		for _, c := range r.Cands {
			if c != t && p.Present(c) && !impossible[c] {
				return anomaly.Step{From: c, To: t, Dep: r.wrDep(), Key: r.Key}, true
			}
		}
	}
	return anomaly.Step{}, false
}

func txnsOf(cycle []anomaly.Step) []history.TxnID {
	out := make([]history.TxnID, len(cycle))
	for i, s := range cycle {
		out[i] = s.From
	}
	return out
}
