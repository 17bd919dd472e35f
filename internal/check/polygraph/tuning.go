package polygraph

// Tuning switches off the solver checker's shared optimisations one by
// one, for measurement: each field is the Checker field of the same name.
// The zero Tuning changes nothing. A verdict never flips (every
// optimisation is sound and complete), but a check may become undecided:
// without pruning, or with dense pairs, the encoding can pass Limits.MaxDerived,
// and without the unsat search nothing decides a history past it.
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

// WithTuning returns c with t's switches set (a switch already set on c
// stays set).
func (c Checker) WithTuning(t Tuning) Checker {
	c.NoPrune = c.NoPrune || t.NoPrune
	c.NoPhase = c.NoPhase || t.NoPhase
	c.NoTwoWidth = c.NoTwoWidth || t.NoTwoWidth
	c.NoChrono = c.NoChrono || t.NoChrono
	c.NoUnsatSearch = c.NoUnsatSearch || t.NoUnsatSearch
	c.Dense = c.Dense || t.Dense
	return c
}
