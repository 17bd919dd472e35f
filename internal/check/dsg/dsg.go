// Package dsg decides read committed (Adya PL-2) and read uncommitted
// (PL-1) on histories with unique values by a cycle search on the part of
// the direct serialization graph that the history fixes.
//
// With unique values every read names its writer, so the wr edges are
// known. A ww edge W → T is known where T read W's version of a key and
// then wrote the key: any version order that put T first would close the
// cycle W -wr→ T -ww→ W, which is G1c. Every other pair of writers can be
// ordered along a topological order of the known edges, which adds no
// cycle. So a history (with the shared checks passed) satisfies PL-2
// exactly when the known wr ∪ ww graph is acyclic, and PL-1 always: it
// proscribes only G0, and a version order taken from any one total order of
// the transactions has no write cycle.
package dsg

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/cycles"
	"github.com/isoscope/isoscope/internal/check/depgraph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the known-graph checker, named "dsg".
type Checker struct{}

// Name returns "dsg".
func (Checker) Name() string { return "dsg" }

// Decides accepts read committed and read uncommitted on histories of reads
// and writes with unique values. When values repeat a read's writer can be
// ambiguous; the solver checker decides those.
func (Checker) Decides(ix *history.Index, l level.Level) error {
	if l.ID != level.ReadCommitted && l.ID != level.ReadUncommitted {
		return fmt.Errorf("it decides read-committed and read-uncommitted, not %s", l.Name)
	}
	h := ix.History()
	for i := range h.Txns {
		if !ix.Effective(history.TxnID(i)) {
			continue
		}
		for _, op := range h.Txns[i].Ops {
			if op.Kind != history.Read && op.Kind != history.Write {
				return fmt.Errorf("transaction %s has a %s operation; it handles reads and writes", h.TxnName(history.TxnID(i)), op.Kind)
			}
		}
	}
	if !ix.Unique() {
		k, v, _ := ix.Duplicate()
		return fmt.Errorf("values repeat (%s is written more than once at %s); it needs unique values", v, h.KeyName(k))
	}
	return nil
}

// Check returns one G0/G1c cycle per strongly connected component of the
// known wr ∪ ww graph (none for read uncommitted).
func (Checker) Check(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	if l.ID == level.ReadUncommitted {
		return nil, ctx.Err()
	}
	g := depgraph.Build(ix, depgraph.Options{AllReads: true})
	return cycles.Find(ctx, ix.History(), g.G, g.Mask, g.Nodes)
}
