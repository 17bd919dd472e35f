package dsg

import (
	"context"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
)

// Nodes maps a graph node to its transaction; ok is false for auxiliary
// nodes, whose runs collapse into one rt step.
type Nodes func(node int32) (t history.TxnID, ok bool)

// Label returns the graph label of a dependency kind.
func Label(d anomaly.Dep) uint8 { return uint8(d) }

// Mask returns the graph mask of dependency kinds.
func Mask(ds ...anomaly.Dep) graph.Mask {
	var m graph.Mask
	for _, d := range ds {
		m |= 1 << d
	}
	return m
}

var (
	noAnti = Mask(anomaly.WW, anomaly.WR, anomaly.SO, anomaly.RT, anomaly.PWR)
	phases = []graph.Mask{
		Mask(anomaly.WW),             // G0
		Mask(anomaly.WW, anomaly.WR), // G1c
		noAnti,                       // session or real-time cycles without anti-dependency
	}
	anti = Mask(anomaly.RW, anomaly.PRW)
)

// smallComponent is the size up to which a component is searched from
// every node for the shortest cycle of each phase.
const smallComponent = 32

// tries bounds the work spent on one component looking for a shorter cycle.
const tries = 64

// Find returns one anomaly for each strongly connected component of g
// (over the edges in all) that holds a cycle. It stops early, returning
// what it has and the context's error, when ctx ends.
func FindCycles(ctx context.Context, h *history.History, g *graph.Graph, all graph.Mask, nodes Nodes) ([]anomaly.Anomaly, error) {
	comps := g.NontrivialSCCs(all)
	if len(comps) == 0 {
		return nil, nil
	}
	// For each cheaper phase, the components of the graph restricted to it;
	// computed over the whole graph, and only when a large component needs
	// them (small ones are searched from every node).
	type phase struct {
		mask graph.Mask
		comp []int32
		big  []bool
	}
	var ps []phase
	phaseSCCs := func() {
		for _, m := range phases {
			m &= all
			comp, n := g.SCC(m)
			size := make([]int32, n)
			for _, c := range comp {
				size[c]++
			}
			big := make([]bool, n)
			for c, s := range size {
				big[c] = s > 1
			}
			ps = append(ps, phase{m, comp, big})
		}
	}
	var out []anomaly.Anomaly
	for _, c := range comps {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		inC := membership(c)
		var cyc []int32
		if len(c) <= smallComponent {
			for _, m := range phases {
				for _, v := range c {
					if alt := g.ShortestCycleThrough(v, m&all, inC); alt != nil && (cyc == nil || len(alt) < len(cyc)) {
						cyc = alt
					}
				}
				if cyc != nil {
					break
				}
			}
		} else {
			if ps == nil {
				phaseSCCs()
			}
			for _, p := range ps {
				for _, v := range c {
					if p.big[p.comp[v]] {
						pc := p.comp[v]
						cyc = g.ShortestCycleThrough(v, p.mask, func(u int32) bool { return p.comp[u] == pc })
						break
					}
				}
				if cyc != nil {
					break
				}
			}
		}
		if cyc == nil && all&anti != 0 {
			cyc = g.ShortestCycleWithExactlyOneFrom(c, all&anti, all&noAnti, inC, tries)
		}
		if cyc == nil {
			for i, v := range c {
				if i >= tries/8 {
					break
				}
				if alt := g.ShortestCycleThrough(v, all, inC); alt != nil && (cyc == nil || len(alt) < len(cyc)) {
					cyc = alt
				}
			}
		}
		if cyc == nil {
			continue // cannot happen for a nontrivial component
		}
		out = append(out, ToAnomaly(h, g, cyc, nodes))
	}
	return out, nil
}

// membership returns a predicate for the nodes of component c.
func membership(c []int32) func(int32) bool {
	sorted := slices.Clone(c)
	slices.Sort(sorted)
	return func(v int32) bool {
		_, ok := slices.BinarySearch(sorted, v)
		return ok
	}
}

// ToAnomaly maps a cycle of graph edges to transactions and classifies it.
func ToAnomaly(h *history.History, g *graph.Graph, cyc []int32, nodes Nodes) anomaly.Anomaly {
	return StepsAnomaly(h, Steps(g, cyc, nodes))
}

// StepsAnomaly classifies a cycle of dependency steps between
// transactions.
func StepsAnomaly(h *history.History, steps []anomaly.Step) anomaly.Anomaly {
	k, p := anomaly.Classify(h, steps)
	var txns []history.TxnID
	for _, s := range steps {
		txns = append(txns, s.From)
	}
	return anomaly.Anomaly{Kind: k, Phenomenon: p, Txns: txns, Cycle: steps, Key: history.NoKey}
}

// Steps maps a cycle of graph edges to dependency steps between
// transactions: runs through auxiliary nodes become one rt step.
func Steps(g *graph.Graph, cyc []int32, nodes Nodes) []anomaly.Step {
	// Rotate so that the cycle starts at a transaction node.
	start := 0
	for i, e := range cyc {
		if _, ok := nodes(g.Edge(e).From); ok {
			start = i
			break
		}
	}
	var steps []anomaly.Step
	var from history.TxnID
	inRun := false
	for i := range cyc {
		e := g.Edge(cyc[(start+i)%len(cyc)])
		u, _ := nodes(e.From)
		w, wok := nodes(e.To)
		if !inRun {
			from = u
		}
		if !wok {
			inRun = true
			continue
		}
		if inRun {
			steps = append(steps, anomaly.Step{From: from, To: w, Dep: anomaly.RT, Key: history.NoKey})
			inRun = false
			continue
		}
		steps = append(steps, anomaly.Step{From: u, To: w, Dep: anomaly.Dep(e.Label), Key: history.KeyID(e.Data)})
	}
	return steps
}
