package polygraph

import (
	"context"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// unsatWindows is how many windows the unsat search cuts a history into;
// consecutive windows overlap by half.
const unsatWindows = 8

// unsatSearch is Boomslang's unsat search: it cuts the history, in file
// order, into overlapping windows whose ends sit at points of low
// concurrency, and checks each window's sub-history on its own. A
// sub-history drops every observation a writer outside it could have
// served (see shrinker), so a window that violates the level is a real
// counterexample for the whole history; windows that hold prove nothing.
// It is the way to a verdict when the whole history's encoding is too
// large. It returns the first violation found, shrunk to a core. Its
// windows and the shrinking each have the budget of work Limits set (see
// shrinker): which windows are checked, and so whether a violation is
// found, does not depend on the machine's speed.
func (c Checker) unsatSearch(ctx context.Context, ix *history.Index, l level.Level) (anomaly.Anomaly, bool) {
	h := ix.History()
	n := len(h.Txns)
	size := max(n/unsatWindows*2, 2)
	if size >= n {
		return anomaly.Anomaly{}, false
	}
	s := newShrinker(ctx, ix, l, c)
	for lo := 0; lo < n; {
		hi := lowConcurrencyCut(h, min(lo+size, n), size/4)
		set := make([]history.TxnID, 0, hi-lo)
		for t := lo; t < hi; t++ {
			set = append(set, history.TxnID(t))
		}
		if s.violates(set) {
			a := s.bestFound
			a.Core = slices.Clone(s.best)
			if small, ok := c.shrink(ctx, ix, l, a); ok {
				return small, true
			}
			return a, true
		}
		if hi >= n || s.spent() {
			break
		}
		lo = lowConcurrencyCut(h, lo+size/2, size/4)
	}
	return anomaly.Anomaly{}, false
}

// lowConcurrencyCut returns a position within slack of at (in file order,
// at most len(h.Txns)) where the fewest transactions are running: the
// fewest of those before it end after the next one begins. Without
// instants it returns at.
func lowConcurrencyCut(h *history.History, at, slack int) int {
	n := len(h.Txns)
	if at >= n {
		return n
	}
	best, bestRunning := at, -1
	for p := max(at-slack, 1); p <= min(at+slack, n-1); p++ {
		next := &h.Txns[p]
		if !next.HasTime {
			return at
		}
		running := 0
		for q := max(p-slack, 0); q < p; q++ {
			if t := &h.Txns[q]; t.HasTime && t.End > next.Begin {
				running++
			}
		}
		if bestRunning < 0 || running < bestRunning {
			best, bestRunning = p, running
		}
	}
	return best
}
