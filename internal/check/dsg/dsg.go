package dsg

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the known-graph checker, named "dsg".
type Checker struct{}

// Name returns "dsg".
func (Checker) Name() string { return "dsg" }

// Capabilities: none beyond the histories it decides.
func (Checker) Capabilities() checker.Capabilities { return checker.Capabilities{} }

// Plan returns the check of ix at l when decides accepts it.
func (Checker) Plan(ix *history.Index, l level.Level, _ checker.Options) (checker.Check, error) {
	return checker.Simple(ix, l, decides, check)
}

// decides returns nil for what Plan accepts: read committed and read uncommitted on histories of reads
// and writes with unique values. When values repeat a read's writer can be
// ambiguous; the solver checker decides those.
func decides(ix *history.Index, l level.Level) error {
	if l.ID != level.ReadCommitted && l.ID != level.ReadUncommitted {
		return fmt.Errorf("it decides read-committed and read-uncommitted, not %s", l.Name)
	}
	return checker.UniqueRegisters(ix)
}

// check is the check Plan returns: it returns one G0/G1c cycle per strongly connected component of the
// known wr ∪ ww graph (none for read uncommitted).
func check(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	if l.ID == level.ReadUncommitted {
		return nil, ctx.Err()
	}
	g := Build(ix, Options{AllReads: true})
	return FindCycles(ctx, ix.History(), g.G, g.Mask, g.Nodes)
}
