package listappend

import (
	"context"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// plus decides PL-2+ on the lists' graph where it can: G1c is a cycle of
// ww and wr edges, G-single a cycle with exactly one rw edge (Adya), and
// the collected edges are certain — every order of an open key's
// unobserved appends has them, or paths through the first of those
// appends that stand for them with as many rw edges — so a cycle of either
// shape among them is a violation whatever the order. With no key open
// the graph is the whole dependency graph, and no such cycle means PL-2+
// holds. With open keys, their unobserved appends are ordered along the
// components of the whole graph and, within one, along a topological
// order of the ww and wr edges (which keeps those acyclic, and the whole
// graph too when it has no cycle): when that graph has no G-single
// either, it witnesses PL-2+. Otherwise
// plus reports false, and the solver searches the orders.
func (a *analysis) plus(ctx context.Context, l level.Level) ([]anomaly.Anomaly, bool, error) {
	g := a.build(l, nil)
	dep := g.Mask & dsg.Mask(anomaly.WW, anomaly.WR)
	if found, err := dsg.FindCycles(ctx, a.h, g.G, dep, g.Nodes); len(found) > 0 || err != nil {
		return found, true, err
	}
	if found, err := dsg.FindSingleAnti(ctx, a.h, g.G, g.Mask, g.Nodes); len(found) > 0 || err != nil {
		return found, true, err
	}
	if len(a.open) == 0 {
		return nil, true, nil
	}
	order, ok := g.G.TopoOrder(dep)
	if !ok { // cannot happen: FindCycles found no cycle of dep
		return nil, false, nil
	}
	pos := make([]int32, len(a.h.Txns))
	for i, v := range order {
		if t, ok := g.Nodes(v); ok && t != history.Init {
			pos[t] = int32(i)
		}
	}
	// Along the components of the whole graph first (an edge from u to v
	// has comp[u] >= comp[v]), so that a graph without cycles stays so.
	comp, _ := g.G.SCC(g.Mask)
	withOrder := a.build(l, a.openChains(comp, pos))
	found, err := dsg.FindSingleAnti(ctx, a.h, withOrder.G, withOrder.Mask, withOrder.Nodes)
	return nil, len(found) == 0 && err == nil, err
}
