package polygraph

import (
	"fmt"

	"github.com/isoscope/isoscope/internal/check/checker"
)

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
