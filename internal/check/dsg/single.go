package dsg

import (
	"context"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
)

// FindSingleAnti returns, for each strongly connected component of g (over
// the edges in all) that holds a cycle with exactly one anti-dependency
// edge (G-single, which PL-2+ proscribes), the shortest such cycle through
// the first of its anti-dependency edges that closes one. Unlike
// FindCycles, which names each component's most specific cycle and tries
// a bounded number of anti-dependency edges, it tries every one until one
// closes such a cycle: a component it reports nothing for has none. A try
// is a breadth-first search from the edge's target back to its source
// over the component's other edges, so a component of n nodes and m edges
// with a anti-dependency edges and no such cycle costs O(a·(n+m)). It
// stops early, returning what it has and the context's error, when ctx
// ends.
func FindSingleAnti(ctx context.Context, h *history.History, g *graph.Graph, all graph.Mask, nodes Nodes) ([]anomaly.Anomaly, error) {
	var out []anomaly.Anomaly
	for _, c := range g.NontrivialSCCs(all) {
		inC := membership(c)
		for _, u := range c {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			if cyc := g.ShortestCycleWithExactlyOneFrom([]int32{u}, all&anti, all&^anti, inC, 0); cyc != nil {
				out = append(out, ToAnomaly(h, g, cyc, nodes))
				break
			}
		}
	}
	return out, nil
}
