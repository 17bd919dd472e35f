package polygraph

import (
	"context"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// shrinker searches for a small set of transactions that violates the
// level on its own (Boomslang's unsat search, then delta debugging). A
// set's sub-history keeps the set's transactions and drops every read, scan
// or iterator that some writer outside the set could have served, so a serializable history
// has only serializable sub-histories: a violating set is a real
// counterexample, and violation is monotone in the set.
//
// Its budget is work, not time: work, the operations and transactions of
// the sub-histories checked and the anti-dependencies their encodings
// derive; conflicts, the solver conflicts of all their checks; and the
// solver's work of all their checks (Limits.ShrinkWork,
// Limits.ShrinkConflicts, Limits.ShrinkSolverWork). A check that would
// need more conflicts or solver work than remain stops undecided, and
// counts as not violating; once any is spent, no set violates. So the sets tried,
// and the one found, are the same on any machine. The checks run no
// unsat search of their own: a sub-history too large to encode counts
// as not violating.
type shrinker struct {
	ctx       context.Context
	ix        *history.Index
	l         level.Level
	checker   Checker
	work      int64
	conflicts int64
	solver    int64 // solver work (sat.Solver.Work) left
	in        []bool
	// best is the smallest violating set found and its anomaly.
	best      []history.TxnID
	bestFound anomaly.Anomaly
}

// newShrinker returns a shrinker over ix at l whose checks run as c does,
// without the searches of their own, within c's counterexample budget.
func newShrinker(ctx context.Context, ix *history.Index, l level.Level, c Checker) *shrinker {
	inner := c
	inner.NoShrink, inner.NoUnsatSearch = true, true
	return &shrinker{ctx: ctx, ix: ix, l: l, checker: inner, work: shrinkWork(c.Limits), conflicts: shrinkConflicts(c.Limits), solver: shrinkSolverWork(c.Limits),
		in: make([]bool, len(ix.History().Txns))}
}

// spent reports whether the search must stop: its budget is spent or its
// context ended.
func (s *shrinker) spent() bool {
	return s.work <= 0 || s.conflicts <= 0 || s.solver <= 0 || s.ctx.Err() != nil
}

// violates checks the sub-history of set; on a violation it records set
// as the best so far.
func (s *shrinker) violates(set []history.TxnID) bool {
	if s.spent() {
		return false
	}
	h := s.ix.History()
	for _, t := range set {
		s.work -= int64(len(h.Txns[t].Ops)) + 1
	}
	for _, t := range set {
		s.in[t] = true
	}
	// Operations with an observation that a writer outside the set could
	// have served are dropped whole.
	drop := map[history.OpRef]bool{}
	for _, t := range set {
		s.ix.Observations(t, func(o history.Observation) {
			if o.Own >= 0 || drop[history.OpRef{Txn: t, Op: o.Op}] {
				return
			}
			s.ix.Sources(o, func(w int32) bool {
				if r := s.ix.WriteRef(w); r.Txn != t && !s.in[r.Txn] {
					drop[history.OpRef{Txn: t, Op: o.Op}] = true
					return false
				}
				return true
			})
		})
	}
	sub := h.Sub(set, func(t history.TxnID, j int) bool { return !drop[history.OpRef{Txn: t, Op: int32(j)}] })
	for _, t := range set {
		s.in[t] = false
	}
	c := s.checker
	if c.Conflicts <= 0 || c.Conflicts > s.conflicts {
		c.Conflicts = s.conflicts
	}
	if c.Work <= 0 || c.Work > s.solver {
		c.Work = s.solver
	}
	found, st, err := c.Run(s.ctx, history.NewIndex(sub.History), s.l)
	s.conflicts -= st.Solver.Conflicts
	s.solver -= st.Solver.Work
	s.work -= int64(st.Derived)
	if err != nil || len(found) == 0 || !found[0].IsCycle() {
		return false
	}
	a := found[0]
	for i, t := range a.Txns {
		a.Txns[i] = sub.Orig(t)
	}
	for i := range a.Cycle {
		a.Cycle[i].From, a.Cycle[i].To = sub.Orig(a.Cycle[i].From), sub.Orig(a.Cycle[i].To)
	}
	for i, r := range a.Ops {
		a.Ops[i] = sub.OrigOp(r)
	}
	s.best, s.bestFound = slices.Clone(set), a
	return true
}

// shrink looks for a small violating set of transactions, starting from
// the transactions of hint (a cycle the solver met). It narrows the
// history to a window in file order — the shortest violating prefix, then
// the shortest violating suffix of it — and then removes chunks of
// halving size and finally single transactions while the rest still
// violates. When that last pass completes, the set is 1-minimal. It
// returns false when no violating strict subset was found in the budget
// (see shrinker).
func (c Checker) shrink(ctx context.Context, ix *history.Index, l level.Level, hint anomaly.Anomaly) (anomaly.Anomaly, bool) {
	n := len(ix.History().Txns)
	s := newShrinker(ctx, ix, l, c)
	span := func(lo, hi int) []history.TxnID {
		out := make([]history.TxnID, 0, hi-lo)
		for t := lo; t < hi; t++ {
			out = append(out, history.TxnID(t))
		}
		return out
	}
	// The window: the hint's span first, as it usually violates.
	lo, hi := 0, n
	if len(hint.Cycle) > 0 {
		a, b := n, 0
		for _, st := range hint.Cycle {
			if st.From >= 0 {
				a, b = min(a, int(st.From)), max(b, int(st.From)+1)
			}
		}
		if a < b && s.violates(span(a, b)) {
			lo, hi = a, b
		}
	}
	// Shortest violating prefix of [lo, hi), then shortest suffix.
	for a, b := lo+1, hi; a < b; {
		m := (a + b) / 2
		if s.violates(span(lo, m)) {
			b, hi = m, m
		} else {
			a = m + 1
		}
	}
	for a, b := lo, hi-1; a < b; {
		m := (a + b + 1) / 2
		if s.violates(span(m, hi)) {
			a, lo = m, m
		} else {
			b = m - 1
		}
	}
	set := span(lo, hi)
	if s.best == nil && !s.violates(set) {
		return anomaly.Anomaly{}, false
	}
	// Delta debugging: drop chunks while the rest violates.
	complete := false
	for size := max(len(set)/2, 1); ; size /= 2 {
		for i := 0; i < len(set); {
			rest := slices.Concat(set[:i], set[min(i+size, len(set)):])
			if len(rest) > 0 && s.violates(rest) {
				set = rest
				continue
			}
			i += size
		}
		if s.spent() {
			break
		}
		if size == 1 {
			complete = true
			break
		}
	}
	if s.best == nil || len(s.best) >= n {
		return anomaly.Anomaly{}, false
	}
	a := s.bestFound
	a.Core, a.Minimal = s.best, complete && slices.Equal(s.best, set)
	return a, true
}
