package polygraph

import "fmt"

// Limits bound the work of the solver checker. Each is a count of work —
// derived anti-dependencies, candidate sub-histories, solver conflicts —
// never a span of time, so that whatever bound stops a search, it stops
// at the same point on a fast machine and a slow one, idle or loaded: the
// outcome and the counterexample depend on the history and the limits
// only. (A context's deadline may still end a check, as undecided.) The
// zero Limits is the defaults.
type Limits struct {
	// MaxDerived bounds the costly anti-dependencies an encoding may
	// derive (see derivedEstimate): past it the whole history is not
	// encoded, and only the unsat search can decide it. Zero means
	// DefaultMaxDerived; a negative bound lets no encoding with
	// anti-dependencies through.
	MaxDerived int
	// Conflicts bounds each solver search, in conflicts: a search that
	// reaches it stops undecided (a *BudgetError). Zero sets no bound.
	Conflicts int64
	// ShrinkTries bounds the candidate sub-histories one counterexample
	// search (the unsat search's windows, or the shrinker after a
	// refutation) checks; zero means DefaultShrinkTries.
	ShrinkTries int
	// ShrinkConflicts bounds the solver conflicts of all the checks of
	// sub-histories of one counterexample search together; zero means
	// DefaultShrinkConflicts.
	ShrinkConflicts int64
}

// The default limits. MaxDerived: Boomslang's RandomRange and RandomBench
// at 10,000 transactions derive about 18,000, a 100,000-transaction
// history with repeated values 57,000; 600 transactions on 12 keys with
// repeated values would derive 17 M and take a minute and 6 GB to encode.
//
// DefaultShrinkTries and DefaultShrinkConflicts stand for the 20 seconds
// the counterexample search used to be allowed: on the 2-core machine
// they were measured on, checking one sub-history of the unsat search's
// benchmark histories (TestUnsatSearch's, 400 transactions; the windows
// of 10,000-transaction RandomBench histories) takes 1 to 40 ms, and a
// search that runs to its end — the windows, then the halving passes to
// a 1-minimal core — tries at most a few hundred. The conflicts of those
// checks are a few per sub-history (the solver mostly propagates), at
// tens of microseconds each. 2,000 tries and 200,000 conflicts thus let
// every search of the tests and benchmarks run to its end, and bound a
// pathological one to about the old 20 seconds.
const (
	DefaultMaxDerived      = 2_000_000
	DefaultShrinkTries     = 2000
	DefaultShrinkConflicts = 200_000
)

// maxDerived returns the bound on derived anti-dependencies.
func (l Limits) maxDerived() int {
	if l.MaxDerived == 0 {
		return DefaultMaxDerived
	}
	return l.MaxDerived
}

// shrinkTries returns the bound on the sub-histories a search checks.
func (l Limits) shrinkTries() int {
	if l.ShrinkTries <= 0 {
		return DefaultShrinkTries
	}
	return l.ShrinkTries
}

// shrinkConflicts returns the bound on a search's solver conflicts.
func (l Limits) shrinkConflicts() int64 {
	if l.ShrinkConflicts <= 0 {
		return DefaultShrinkConflicts
	}
	return l.ShrinkConflicts
}

// WithLimits returns c with the limits of l that are set (non-zero).
func (c Checker) WithLimits(l Limits) Checker {
	if l.MaxDerived != 0 {
		c.MaxDerived = l.MaxDerived
	}
	if l.Conflicts != 0 {
		c.Conflicts = l.Conflicts
	}
	if l.ShrinkTries != 0 {
		c.ShrinkTries = l.ShrinkTries
	}
	if l.ShrinkConflicts != 0 {
		c.ShrinkConflicts = l.ShrinkConflicts
	}
	return c
}

// BudgetError says a solver search reached its conflict limit
// (Limits.Conflicts) without a verdict: the check is undecided, not failed.
type BudgetError struct {
	// Conflicts is the limit that was reached.
	Conflicts int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the solver reached its limit of %d conflicts without a verdict", e.Conflicts)
}

// Undecided reports true: the history is neither accepted nor refuted.
func (e *BudgetError) Undecided() bool { return true }
