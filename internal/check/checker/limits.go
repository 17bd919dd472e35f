package checker

// Limits bound the work of a searching checker. Each is a count of work —
// derived anti-dependencies, candidate sub-histories, solver conflicts,
// solver work — never a span of time, so that whatever bound stops a
// search, it stops at the same point on a fast machine and a slow one,
// idle or loaded: the outcome and the counterexample depend on the history
// and the limits only. (A context's deadline may still end a check, as
// undecided.) A zero field is the checker's default (package polygraph's
// Default… constants).
type Limits struct {
	// MaxDerived bounds the costly anti-dependencies an encoding may
	// derive: past it the whole history is not encoded, and only the
	// unsat search (checking windows of the history on their own) can
	// decide it. A negative bound lets no encoding with anti-dependencies
	// through.
	MaxDerived int
	// Conflicts bounds each solver search, in conflicts: a search that
	// reaches it stops undecided. Zero sets no bound.
	Conflicts int64
	// Work bounds each solver search in work: the solver's propagations
	// and the edges its acyclicity theory's searches scan, which at the
	// weak levels is where the time between conflicts goes. A search that
	// reaches it stops undecided. Zero sets no bound.
	Work int64
	// ShrinkWork bounds the work of one counterexample search (the unsat
	// search's windows, or the shrinker after a refutation): each
	// sub-history it checks costs its operations, plus one per
	// transaction, plus the anti-dependencies its encoding derives.
	ShrinkWork int64
	// ShrinkConflicts bounds the solver conflicts of all the checks of
	// sub-histories of one counterexample search together.
	ShrinkConflicts int64
	// ShrinkSolverWork bounds the solver work (Work's units) of all the
	// checks of sub-histories of one counterexample search together.
	ShrinkSolverWork int64
}

// Tuning switches off the solver's shared optimisations one by one, for
// measurement. The zero Tuning changes nothing. A verdict never flips
// (every optimisation is sound and complete), but a check may become
// undecided: without pruning, or with dense pairs, the encoding can pass
// Limits.MaxDerived, and without the unsat search nothing decides a
// history past it.
type Tuning struct {
	// NoPrune: no reachability pruning of the writer pairs.
	NoPrune bool
	// NoPhase: no topological prioritisation (order-guided polarity).
	NoPhase bool
	// NoTwoWidth: no 2-width cycle clauses.
	NoTwoWidth bool
	// NoChrono: no chronological backtracking in the solver.
	NoChrono bool
	// NoUnsatSearch: no unsat search over windows when the whole
	// encoding is too large.
	NoUnsatSearch bool
	// Dense: every two writers of a key form a pair (VeriStrong's
	// construction) instead of only those the known graph leaves
	// unordered, and pruning uses a dense reachability matrix.
	Dense bool
}

// Any reports whether t switches anything off.
func (t Tuning) Any() bool { return t != Tuning{} }
