package polygraph

import (
	"fmt"

	"github.com/isoscope/isoscope/internal/check/checker"
)

// The default limits: the derived anti-dependencies one encoding may hold,
// and the counterexample search's budgets in work (about 20 s each on the
// 2-core machine); docs/limits.md gives the measurements behind them.
const (
	DefaultMaxDerived       = 2_000_000
	DefaultShrinkWork       = 8_000_000
	DefaultShrinkConflicts  = 200_000
	DefaultShrinkSolverWork = 500_000_000
)

// maxDerived returns the bound on derived anti-dependencies.
func maxDerived(l checker.Limits) int {
	if l.MaxDerived == 0 {
		return DefaultMaxDerived
	}
	return l.MaxDerived
}

// shrinkWork returns the bound on the sub-histories a search checks.
func shrinkWork(l checker.Limits) int64 {
	if l.ShrinkWork <= 0 {
		return DefaultShrinkWork
	}
	return l.ShrinkWork
}

// shrinkConflicts returns the bound on a search's solver conflicts.
func shrinkConflicts(l checker.Limits) int64 {
	if l.ShrinkConflicts <= 0 {
		return DefaultShrinkConflicts
	}
	return l.ShrinkConflicts
}

// shrinkSolverWork returns the bound on a search's solver work.
func shrinkSolverWork(l checker.Limits) int64 {
	if l.ShrinkSolverWork <= 0 {
		return DefaultShrinkSolverWork
	}
	return l.ShrinkSolverWork
}

// BudgetError says a solver search reached its limit of conflicts or of
// work (checker.Limits.Conflicts, Work) without a verdict: the check is
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

// Is makes the error checker.ErrUndecided: the history is neither
// accepted nor refuted.
func (e *BudgetError) Is(target error) bool { return target == checker.ErrUndecided }
