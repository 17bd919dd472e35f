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
	// Work bounds each solver search in work: the solver's propagations
	// and the edges its acyclicity theory's searches scan (sat.Solver's
	// WorkLimit), which at the weak levels is where the time between
	// conflicts goes. A search that reaches it stops undecided (a
	// *BudgetError). Zero sets no bound.
	Work int64
	// ShrinkWork bounds the work of one counterexample search (the
	// unsat search's windows, or the shrinker after a refutation): each
	// sub-history it checks costs its operations, plus one per
	// transaction, plus the anti-dependencies its encoding derives. Zero
	// means DefaultShrinkWork.
	ShrinkWork int64
	// ShrinkConflicts bounds the solver conflicts of all the checks of
	// sub-histories of one counterexample search together; zero means
	// DefaultShrinkConflicts.
	ShrinkConflicts int64
	// ShrinkSolverWork bounds the solver work (Work's units) of all the
	// checks of sub-histories of one counterexample search together; zero
	// means DefaultShrinkSolverWork.
	ShrinkSolverWork int64
}

// The default limits. MaxDerived: Boomslang's RandomRange and RandomBench
// at 10,000 transactions derive about 18,000, a 100,000-transaction
// history with repeated values 57,000; 600 transactions on 12 keys with
// repeated values would derive 17 M and take a minute and 6 GB to encode.
//
// DefaultShrinkWork and DefaultShrinkConflicts stand for the 20 seconds
// the counterexample search used to be allowed, measured on the 2-core
// machine they were chosen on. Shrinking the solver's refutations of
// general histories with planted stale reads (1,000 to 10,000
// transactions of 4 operations, half the keys with repeated values) got
// through 390,000 to 640,000 units of work a second on an idle machine
// (163,000 in 0.41 s at 1,000 transactions; 3.4 M in 7.4 s at 10,000) and
// 180,000 to 200,000 on a loaded one (the same 3.4 M in 18.9 s), with a
// few hundred conflicts in all; the unsat search's windows of
// TestUnsatSearch's 400-transaction histories cost about 11,000 units in
// 25 to 55 ms. So 8 M units are about 20 s of work on the idle machine.
// The solver, on small dense encodings (60 transactions on 6 keys with
// repeated values), meets 7,500 to 13,000 conflicts a second: 200,000
// conflicts are about 20 s of solving. The solver's work (propagations
// and the edges its theory's searches scan) went at 13 M units a second
// at repeatable read and 60 M at PL-2+ on a 600-transaction blind-write
// history from Badger: 500 M units are 8 to 40 s. Every counterexample
// search of the tests ends well within all three. The unsat search's windows and the
// shrinking of the violation it finds have each a budget of their own.
const (
	DefaultMaxDerived       = 2_000_000
	DefaultShrinkWork       = 8_000_000
	DefaultShrinkConflicts  = 200_000
	DefaultShrinkSolverWork = 500_000_000
)

// maxDerived returns the bound on derived anti-dependencies.
func (l Limits) maxDerived() int {
	if l.MaxDerived == 0 {
		return DefaultMaxDerived
	}
	return l.MaxDerived
}

// shrinkWork returns the bound on the sub-histories a search checks.
func (l Limits) shrinkWork() int64 {
	if l.ShrinkWork <= 0 {
		return DefaultShrinkWork
	}
	return l.ShrinkWork
}

// shrinkConflicts returns the bound on a search's solver conflicts.
func (l Limits) shrinkConflicts() int64 {
	if l.ShrinkConflicts <= 0 {
		return DefaultShrinkConflicts
	}
	return l.ShrinkConflicts
}

// shrinkSolverWork returns the bound on a search's solver work.
func (l Limits) shrinkSolverWork() int64 {
	if l.ShrinkSolverWork <= 0 {
		return DefaultShrinkSolverWork
	}
	return l.ShrinkSolverWork
}

// WithLimits returns c with the limits of l that are set (non-zero).
func (c Checker) WithLimits(l Limits) Checker {
	if l.MaxDerived != 0 {
		c.MaxDerived = l.MaxDerived
	}
	if l.Conflicts != 0 {
		c.Conflicts = l.Conflicts
	}
	if l.Work != 0 {
		c.Work = l.Work
	}
	if l.ShrinkWork != 0 {
		c.ShrinkWork = l.ShrinkWork
	}
	if l.ShrinkConflicts != 0 {
		c.ShrinkConflicts = l.ShrinkConflicts
	}
	if l.ShrinkSolverWork != 0 {
		c.ShrinkSolverWork = l.ShrinkSolverWork
	}
	return c
}

// BudgetError says a solver search reached its limit of conflicts or of
// work (Limits.Conflicts, Limits.Work) without a verdict: the check is
// undecided, not failed.
type BudgetError struct {
	// Conflicts and Work are the limits the search had (0: none).
	Conflicts, Work int64
}

func (e *BudgetError) Error() string {
	switch {
	case e.Conflicts > 0 && e.Work > 0:
		return fmt.Sprintf("the solver reached its limit of %d conflicts or %d units of work without a verdict", e.Conflicts, e.Work)
	case e.Work > 0:
		return fmt.Sprintf("the solver reached its limit of %d units of work without a verdict", e.Work)
	}
	return fmt.Sprintf("the solver reached its limit of %d conflicts without a verdict", e.Conflicts)
}

// Undecided reports true: the history is neither accepted nor refuted.
func (e *BudgetError) Undecided() bool { return true }
