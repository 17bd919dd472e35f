package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
)

// modelFlags are the flags check and run share that change what a history
// is checked against or how the solver searches: modules, the
// read-your-own-writes policy, and the solver's optimisation switches.
type modelFlags struct {
	Modules  []string
	OwnReads string
	Tuning   checker.Tuning
	Limits   checker.Limits
}

// moduleNames lists the modules --module knows, for messages.
func moduleNames() []string {
	names := []string{check.InnoDBRRModule}
	for n := range check.Modules() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (m *modelFlags) register(f *pflag.FlagSet) {
	f.StringVar(&m.OwnReads, "own-reads", "own", "what a read of a key its transaction wrote before returns: own (its last write; every level's internal consistency requires it), external (other transactions' writes only: stores that buffer writes), either, or infer (the policy the history shows: own if every such read saw its own write, external if none did, either if some did — opt in, since a database that never reads its own writes is then judged by the external policy instead of refuted; the result says what was inferred)")
	f.StringSliceVar(&m.Modules, "module", nil, "run a built-in module (repeatable): commit-order (the version order is the commit_ts order), start-order (T1 precedes T2 when commit_ts(T1) < start_ts(T2): the snapshot is taken at start_ts), session-order (session guarantees on a level without them), real-time (T1 precedes T2 when T1 ended before T2 began, on a level without real time), innodb-rr (MariaDB/InnoDB's REPEATABLE READ: snapshot reads from the first view, locking reads and writes at the latest committed state; use with --level rr; it rewrites each transaction into a view piece and a commit piece, which any checker may then judge). Only the sat checkers run the others")
	f.BoolVar(&m.Tuning.NoPrune, "no-prune", false, "solver switch, for measurement: no reachability pruning of the writer pairs (only the sat checkers take solver switches; with one set, auto picks them and a named other checker is refused)")
	f.BoolVar(&m.Tuning.NoPhase, "no-prioritize", false, "solver switch: no topological prioritisation (the acyclicity theory's order-guided polarity)")
	f.BoolVar(&m.Tuning.NoTwoWidth, "no-two-width", false, "solver switch: no 2-width cycle clauses")
	f.BoolVar(&m.Tuning.NoChrono, "no-chrono", false, "solver switch: no chronological backtracking")
	f.BoolVar(&m.Tuning.NoUnsatSearch, "no-unsat-search", false, "solver switch: no search of the history's windows when the whole encoding is too large (such a history is then undecided)")
	f.IntVar(&m.Limits.MaxDerived, "max-derived", check.DefaultMaxDerived, "solver bound: the most anti-dependencies through undecided write orders the whole history's encoding may derive; past it only windows of the history are checked (the unsat search), and a history none of them refutes is undecided")
	f.BoolVar(&m.Tuning.Dense, "dense-pairs", false, "solver switch: every two writers of a key form a pair (VeriStrong's construction) instead of only those the known graph leaves unordered, with dense reachability for pruning")
	inGroup(f, groupAdvanced, "no-prune", "no-prioritize", "no-two-width", "no-chrono", "no-unsat-search", "max-derived", "dense-pairs")
}

// options fills in o's part that the flags choose; a bad value is bad
// usage (exit status 2), the error naming the flag.
func (m *modelFlags) options(o *check.Options) error {
	if m.OwnReads == "infer" {
		o.InferOwnReads = true
	} else {
		own, ok := history.ParseOwnReads(m.OwnReads)
		if !ok {
			return unknownChoice("--own-reads", "read-your-own-writes policy", m.OwnReads, []string{"own", "external", "either", "infer"})
		}
		o.OwnReads = own
	}
	for _, name := range m.Modules {
		if name == check.InnoDBRRModule {
			o.InnoDBRR = true
			continue
		}
		mod, ok := check.Modules()[name]
		if !ok {
			return unknownChoice("--module", "module", name, moduleNames())
		}
		o.Modules = append(o.Modules, mod)
	}
	o.Tuning = m.Tuning
	if m.Limits.MaxDerived < 1 {
		return badInput(fmt.Errorf("--max-derived must be at least 1, not %d", m.Limits.MaxDerived))
	}
	o.Limits = m.Limits
	return nil
}
