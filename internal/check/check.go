package check

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/chronos"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/check/innodb"
	"github.com/isoscope/isoscope/internal/check/linear"
	"github.com/isoscope/isoscope/internal/check/listappend"
	"github.com/isoscope/isoscope/internal/check/lwt"
	"github.com/isoscope/isoscope/internal/check/mt"
	"github.com/isoscope/isoscope/internal/check/polygraph"
	"github.com/isoscope/isoscope/internal/check/precheck"
	"github.com/isoscope/isoscope/internal/check/saturate"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checkers returns every algorithm, fastest first: the order in which Auto
// tries them. Chronos comes first: when every transaction carries the
// database's timestamps, it decides SI and SER by replaying them. The
// register search (linear) decides the register histories of Jepsen,
// knossos and porcupine (one operation per transaction, repeated values,
// unknown outcomes) that the linear-time checkers before it decline; the
// saturation checker decides the axiomatic weak levels (rc-session, read
// atomic, causal) on unique values before the solver would.
func Checkers() []checker.Checker {
	return []checker.Checker{chronos.Checker{}, lwt.Checker{}, mt.Checker{}, listappend.Checker{}, dsg.Checker{}, saturate.Checker{},
		linear.Checker{}, polygraph.Checker{}, polygraph.Checker{BCGraph: true}}
}

// Modules returns the built-in modules of the solver by name
// (commit-order, start-order, real-time, session-order); the innodb-rr
// model is Options.InnoDBRR.
func Modules() map[string]checker.Module { return polygraph.Modules() }

// DefaultMaxDerived is the default of checker.Limits.MaxDerived: the most
// anti-dependencies through undecided write orders the solver's encoding
// of a whole history may derive.
const DefaultMaxDerived = polygraph.DefaultMaxDerived

// Names returns the names of every algorithm, for usage messages.
func Names() []string {
	var out []string
	for _, c := range Checkers() {
		out = append(out, c.Name())
	}
	return out
}

// plan returns the checker named name, or with "auto" (or "") the first of
// Checkers that decides ix's history at level l under o, with the check it
// planned. A checker decides only if its capabilities take what the
// history and o ask for (capable). It returns an *UnsupportedError when
// the named checker, or every checker, declines.
func plan(ix *history.Index, l level.Level, name string, o checker.Options) (checker.Checker, checker.Check, error) {
	named := name != "" && name != "auto"
	var why []string
	for _, c := range Checkers() {
		if named && c.Name() != name {
			continue
		}
		check, err := capable(c.Capabilities(), ix, o)
		if err == nil {
			check, err = c.Plan(ix, l, o)
		}
		if err != nil {
			if named {
				return nil, nil, &UnsupportedError{Checker: name, Level: l, Why: []string{err.Error()}}
			}
			why = append(why, c.Name()+": "+err.Error())
			continue
		}
		return c, check, nil
	}
	if named {
		return nil, nil, fmt.Errorf("unknown checker %q (known: auto, %v)", name, Names())
	}
	return nil, nil, &UnsupportedError{Level: l, Why: why}
}

// capable returns an error when a checker of capabilities c cannot take
// ix's history under o: a white-box version order, a read-your-own-writes
// policy, modules or solver switches it ignores.
func capable(c checker.Capabilities, ix *history.Index, o checker.Options) (checker.Check, error) {
	switch {
	case len(o.Modules) > 0 && !c.Modules:
		return nil, fmt.Errorf("it does not run modules")
	case o.Tuning.Any() && !c.Modules:
		return nil, fmt.Errorf("it has none of the solver's optimisations to switch off")
	case ix.OwnReads() != history.MustReadOwn && !c.OwnReads:
		return nil, fmt.Errorf("it assumes reads see their transaction's own writes, not the %q policy", ix.OwnReads())
	case ix.History().Header.VersionOrder != nil && !c.VersionOrder:
		return nil, fmt.Errorf("it does not use the history's white-box version order")
	}
	return nil, nil
}

// Options tune Run.
type Options struct {
	// Checker is "auto" (or empty) or the name of one algorithm.
	Checker string
	// Holds asks, when the level is violated, which weaker levels the
	// history still satisfies (checked only where a checker decides them).
	Holds bool
	// OwnReads is the read-your-own-writes policy (history.MustReadOwn
	// when zero).
	OwnReads history.OwnReads
	// InferOwnReads replaces OwnReads by the policy the history shows
	// (history.InferOwnReads): own when every read after its
	// transaction's write of the key saw that write, external when none
	// did, either when some did. Opt in: every level's internal
	// consistency includes reading your own writes, so a database that
	// never does is judged by the external policy instead of being
	// refuted.
	InferOwnReads bool
	// Modules extend the history's abstract semantic graph with what the
	// caller knows of the database (checker.Module); only checkers that
	// run modules then decide.
	Modules []checker.Module
	// Tuning switches the solver checker's optimisations off, for
	// measurement; only the solver checkers then decide.
	Tuning checker.Tuning
	// MemoryLimit bounds the memory of the check, in bytes (0: no bound):
	// the solver's construction keeps within its share of it — what
	// remains once the history and its index are in memory, less a
	// quarter left to the garbage collector — and past it the check is
	// undecided ("needs more than N MB") instead of growing. The caller
	// sets the process's soft limit (debug.SetMemoryLimit) to match.
	MemoryLimit int64
	// Limits bound the solver checker's work — the size of its encoding,
	// its counterexample searches — in counts of work, so that where they
	// stop a search does not depend on the machine's speed; the zero
	// Limits is the defaults (see checker.Limits).
	Limits checker.Limits
	// InnoDBRR checks the history against MariaDB/InnoDB's REPEATABLE
	// READ, the innodb-rr module (package innodb): each transaction is
	// split into a view piece and a commit piece and the pieces are
	// checked at serializability. The level must be repeatable read.
	InnoDBRR bool
}

// innodbCaveat is what a check against InnoDB's repeatable read may miss.
const innodbCaveat = "checked against InnoDB's repeatable read as view and commit pieces, a deliberately loose model: it misses a violation that shows only in where a view really was taken or in what an UPDATE's own search saw"

// InnoDBRRModule is the name of the InnoDB repeatable-read model
// (Options.InnoDBRR) among the modules a Result lists, and on the command
// line.
const InnoDBRRModule = "innodb-rr"

// Run checks h against level l: the shared checks, then the chosen
// algorithm. An error means bad usage (no checker decides this history);
// a context that ends gives outcome Unknown unless a violation was already
// found.
func Run(ctx context.Context, h *history.History, l level.Level, o Options) (Result, error) {
	if len(h.Parts) > 0 {
		return runParts(ctx, h, l, o)
	}
	own := o.OwnReads
	var evidence *history.OwnReadsEvidence
	ix, err := history.NewIndexContext(ctx, h, own)
	if err == nil && o.InferOwnReads {
		e := history.InferOwnReads(ix)
		evidence, own = &e, e.Policy()
		if own != o.OwnReads {
			ix, err = history.NewIndexContext(ctx, h, own)
		}
	}
	if err != nil {
		// The context ended while the history was indexed.
		return Result{Level: l, Outcome: Undecided, Reason: stopped(ctx, err), Stats: h.Stats()}, nil
	}
	if l.RealTime && !o.InnoDBRR {
		if first, n, of := untimed(ix); n > 0 {
			return runUntimed(ctx, h, l, o, first, n, of)
		}
	}
	so := checker.Options{Modules: o.Modules, Tuning: o.Tuning, MemoryLimit: solverShare(o.MemoryLimit), Limits: o.Limits}
	var shared sharedFindings // the shared checks' findings on ix
	var res Result
	decided := false
	if stronger := strongerFirst(l, o); len(stronger) > 0 {
		if c, _, err := plan(ix, l, "auto", so); err == nil && c.Capabilities().Modules {
			for _, s := range stronger {
				if res, decided = runStronger(ctx, ix, l, s, so); decided {
					break
				}
			}
		}
	}
	switch {
	case decided:
	case o.InnoDBRR:
		res, err = runInnoDB(ctx, h, l, own, o.Checker, so)
	default:
		res, err = runIndexed(ctx, ix, l, o.Checker, so, &shared)
	}
	if err != nil {
		return res, err
	}
	res.OwnReads, res.OwnReadsEvidence, res.Index = own, evidence, ix
	for _, m := range o.Modules {
		res.Modules = append(res.Modules, m.Name())
	}
	if o.InnoDBRR {
		res.Modules = append(res.Modules, InnoDBRRModule)
	}
	if res.Outcome != Violated || !o.Holds {
		return res, nil
	}
	for _, w := range l.WeakerLevels() {
		if ctx.Err() != nil {
			break // the weaker levels not checked yet are not claimed
		}
		implied := false
		for _, got := range res.Holds {
			implied = implied || got.Implies(w.ID)
		}
		if implied {
			continue
		}
		// Searching checkers are cheap to run on a small history:
		// bounded in work (the encoding's size, the solver's conflicts
		// and work), without the counterexample search a violation would
		// start. The bounds are counts, not time, so which levels are
		// claimed does not depend on the machine's speed; only the
		// check's own context, ending, leaves the rest unclaimed.
		small := len(ix.History().Txns) <= holdsSearchMax
		var (
			c     checker.Checker
			check checker.Check
			err   error
		)
		if small {
			c, check, err = planBounded(ix, w, so, holdsSearchMaxDerived, holdsSearchConflicts, holdsSearchWork)
		} else {
			c, check, err = plan(ix, w, "auto", so)
		}
		if err != nil || c.Capabilities().Search && !small {
			continue // no checker decides it cheaply: say nothing
		}
		if sub, err := runPlanned(ctx, ix, w, c, check, &shared); err == nil && sub.Outcome == Satisfied {
			res.Holds = append(res.Holds, w)
		}
	}
	return res, nil
}

// untimed counts the transactions that took effect but have no begin and
// end instants: n of the of that took effect, the first of them first.
func untimed(ix *history.Index) (first history.TxnID, n, of int) {
	h := ix.History()
	for i := range h.Txns {
		t := history.TxnID(i)
		if !ix.Effective(t) {
			continue
		}
		of++
		if !h.Txns[i].HasTime {
			if n == 0 {
				first = t
			}
			n++
		}
	}
	return first, n, of
}

// runUntimed checks h at l, a level with real time, when n of the of
// transactions that took effect (first the first of them) lack begin and
// end instants, so that their real-time order is unknown. Such a history
// is checked at serializability, which l implies: a violation of it is a
// violation of l, found at serializability; if it holds, l is undecided.
// With some instants present, real time among the timed transactions is
// not checked: the outcome is then Unknown rather than a verdict that
// could depend on the order of the untimed ones.
func runUntimed(ctx context.Context, h *history.History, l level.Level, o Options, first history.TxnID, n, of int) (Result, error) {
	ser := level.Get(level.Serializable)
	res, err := Run(ctx, h, ser, o)
	if err != nil {
		return res, fmt.Errorf("%s without begin and end instants is checked at %s, which it implies: %w", l.Name, ser.Name, err)
	}
	which := "transaction " + h.TxnName(first)
	if line := h.Txns[first].Line; line > 0 {
		which += fmt.Sprintf(", line %d", line)
	}
	missing := fmt.Sprintf("%d of %d transactions have no begin and end instants (the first: %s), so their real-time order is unknown", n, of, which)
	res.Level, res.CheckedAt = l, &ser
	switch res.Outcome {
	case Violated:
		res.Note = fmt.Sprintf("found at %s, which %s implies: %s", ser.Name, l.Name, missing)
	case Satisfied:
		res.Outcome = Undecided
		res.Reason = fmt.Sprintf("%s holds, but %s cannot be decided: %s", ser.Name, l.Name, missing)
	default:
		res.Reason = fmt.Sprintf("%s (checked at %s, which %s implies: %s)", res.Reason, ser.Name, l.Name, missing)
	}
	return res, nil
}

// holdsSearchMax, holdsSearchMaxDerived, holdsSearchConflicts and
// holdsSearchWork bound the solver searches that ask, after a violation,
// which weaker levels still hold (histories of at most holdsSearchMax
// transactions; about a second each): counts, not time, so the levels
// claimed depend on the history alone. docs/limits.md gives the
// measurements behind them.
const (
	holdsSearchMax        = 1000
	holdsSearchMaxDerived = 300_000
	holdsSearchConflicts  = 10_000
	holdsSearchWork       = 30_000_000
)

// planBounded plans an automatic check of ix at l that only a cheap
// verdict is wanted of: without a counterexample search, the solver
// encoding at most maxDerived derived anti-dependencies and stopping,
// undecided, after conflicts conflicts or work units of its work.
func planBounded(ix *history.Index, l level.Level, so checker.Options, maxDerived int, conflicts, work int64) (checker.Checker, checker.Check, error) {
	wo := so
	wo.NoShrink = true
	wo.Limits.MaxDerived = min(wo.Limits.MaxDerived, maxDerived)
	if wo.Limits.MaxDerived == 0 {
		wo.Limits.MaxDerived = maxDerived
	}
	wo.Limits.Conflicts, wo.Limits.Work = conflicts, work
	c, check, err := plan(ix, l, "auto", wo)
	if err == nil && c.Capabilities().Modules && !wo.Tuning.NoUnsatSearch {
		// The solver also goes without its unsat search. The switch is
		// set only for it: a checker without switches declines any
		// (capable), and would leave every such history to the solver.
		wo.Tuning.NoUnsatSearch = true
		c, check, err = plan(ix, l, c.Name(), wo)
	}
	return c, check, err
}

// strongerFirst returns the levels, in order, a history is first
// checked at when it is checked at l automatically, without modules,
// switches or InnoDB's model, and the solver would decide it. Cursor
// stability, PL-2+ and PL-FCV have no session order, so the solver pairs
// every two writers of a key and searches the classed cycles, while
// serializability and snapshot isolation, which imply them, have the
// session-chain construction and plain acyclicity (serializability
// without the split graph, the cheaper of the two); repeatable read is
// implied by serializability alone. A history that satisfies a stronger
// level — any history from a database that gives it — is decided there
// at a fraction of the cost.
func strongerFirst(l level.Level, o Options) []level.Level {
	if o.InnoDBRR || o.Checker != "" && o.Checker != "auto" || len(o.Modules) > 0 || o.Tuning.Any() {
		return nil
	}
	switch l.ID {
	case level.CursorStability, level.PL2Plus, level.PLFCV:
		return []level.Level{level.Get(level.Serializable), level.Get(level.SnapshotIsolation)}
	case level.RepeatableRead:
		return []level.Level{level.Get(level.Serializable)}
	}
	return nil
}

// strongerMaxDerived, strongerConflicts and strongerWork bound the check
// at the stronger level (strongerFirst): it is worth its cost only when it
// is quick, as it is on a history that satisfies that level (a 100,000-
// transaction history at snapshot isolation meets a few hundred
// conflicts); past them the history is checked at its own level. Counts,
// not time, as for the holds search.
const (
	strongerMaxDerived = 500_000
	strongerConflicts  = 20_000
	strongerWork       = 400_000_000
)

// runStronger checks ix at s, which implies l, with bounded work, and
// reports whether that decided l: s holds, and so does l. Any other
// outcome decides nothing about l.
func runStronger(ctx context.Context, ix *history.Index, l, s level.Level, so checker.Options) (Result, bool) {
	c, check, err := planBounded(ix, s, so, strongerMaxDerived, strongerConflicts, strongerWork)
	if err != nil {
		return Result{}, false
	}
	res, err := runPlanned(ctx, ix, s, c, check, nil)
	if err != nil || res.Outcome != Satisfied {
		return Result{}, false
	}
	res.Level, res.CheckedAt = l, &s
	res.Note = fmt.Sprintf("%s holds, which implies %s", s.Name, l.Name)
	return res, true
}

// undecided reports whether err says a checker gave up without a verdict
// for lack of resources (checker.ErrUndecided).
func undecided(err error) bool { return errors.Is(err, checker.ErrUndecided) }

// runInnoDB checks h against InnoDB's repeatable read: its pieces
// (innodb.Split) at serializability, with the findings mapped back to h's
// transactions.
func runInnoDB(ctx context.Context, h *history.History, l level.Level, own history.OwnReads, name string, so checker.Options) (Result, error) {
	if l.ID != level.RepeatableRead {
		return Result{}, fmt.Errorf("%s is InnoDB's repeatable read: check it at repeatable-read, not %s", InnoDBRRModule, l.Name)
	}
	if own != history.MustReadOwn {
		return Result{}, fmt.Errorf("%s: InnoDB reads its own writes; the %q read-your-own-writes policy does not apply", InnoDBRRModule, own)
	}
	p := innodb.Split(h)
	res, err := runIndexed(ctx, history.NewIndex(p.H), level.Get(level.Serializable), name, so, nil)
	if err != nil {
		return res, err
	}
	res.Level, res.Stats = l, h.Stats()
	res.Caveat = strings.TrimPrefix(res.Caveat+"; "+innodbCaveat, "; ")
	for i, a := range res.Anomalies {
		res.Anomalies[i] = p.MapBack(a)
	}
	return res, nil
}

// sharedFindings remembers the shared checks' findings on one index at
// one level, for the levels they judge alike (precheck.Alike).
type sharedFindings struct {
	ok    bool
	l     level.Level
	found []anomaly.Anomaly
}

// runIndexed checks ix at l with the checker named (or the first that
// decides, for "auto"), planned under so (runPlanned).
func runIndexed(ctx context.Context, ix *history.Index, l level.Level, name string, so checker.Options, memo *sharedFindings) (Result, error) {
	c, check, err := plan(ix, l, name, so)
	if err != nil {
		return Result{}, err
	}
	return runPlanned(ctx, ix, l, c, check, memo)
}

// runPlanned checks ix at l with c's planned check: the shared checks
// (reusing memo's findings when it holds them for a level they judge
// alike, and keeping them there), then the check.
func runPlanned(ctx context.Context, ix *history.Index, l level.Level, c checker.Checker, check checker.Check, memo *sharedFindings) (Result, error) {
	var err error
	res := Result{Level: l, Checker: c.Name(), Stats: ix.History().Stats()}
	checker.MeterFrom(ctx).SetPhase(fmt.Sprintf("%s, checker %s", l.Name, c.Name()))
	if memo != nil && memo.ok && precheck.Alike(memo.l, l) {
		res.Anomalies = slices.Clone(memo.found)
	} else {
		res.Anomalies, err = precheck.RunContext(ctx, ix, l)
		if memo != nil && err == nil {
			*memo = sharedFindings{ok: true, l: l, found: slices.Clone(res.Anomalies)}
		}
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		var found []anomaly.Anomaly
		found, err = check(ctx)
		res.Anomalies = append(res.Anomalies, found...)
	}
	stoppedShort := err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || undecided(err))
	switch {
	case len(res.Anomalies) > 0:
		res.Outcome = Violated
		if stoppedShort {
			// What was found is certain; what the rest of the check
			// would have found is not known.
			why := err.Error()
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				why = stopped(ctx, err)
			}
			res.Caveat = strings.TrimPrefix(res.Caveat+"; the check was cut short ("+why+"): the anomalies shown are certain, but others may be missing", "; ")
		}
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		res.Outcome, res.Reason = Undecided, stopped(ctx, err)
	case err != nil && undecided(err):
		res.Outcome, res.Reason = Undecided, err.Error()
	case err != nil:
		return Result{}, err
	default:
		res.Outcome = Satisfied
	}
	return res, nil
}

// stopped is the reason of a check that ctx ended before a verdict (err
// is the context error the checker returned): a timeout, an interruption,
// or the cause ctx was cancelled with when it says the check is undecided
// (a resource limit).
func stopped(ctx context.Context, err error) string {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = err
	}
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return "timed out before a verdict"
	case undecided(cause):
		return cause.Error()
	case errors.Is(cause, context.Canceled):
		return "interrupted before a verdict"
	}
	return "interrupted before a verdict: " + cause.Error()
}

// ResourceLimitError says a check was stopped for a resource limit: the
// process's memory passed its bound. A context cancelled with it as its
// cause (context.WithCancelCause) ends the check undecided with this
// reason.
type ResourceLimitError struct {
	// What names the resource and the bound, e.g. "memory: more than
	// 1024 MB in use".
	What string
}

func (e *ResourceLimitError) Error() string { return "resource limit: " + e.What }

// Is makes the error checker.ErrUndecided: the history is neither
// accepted nor refuted.
func (e *ResourceLimitError) Is(target error) bool { return target == checker.ErrUndecided }

// heapGCFraction is the part of the memory bound the solver's share
// leaves to the garbage collector (its slack between collections).
const heapGCFraction = 4

// solverShare is the solver construction's share of a memory bound of
// limit bytes (0: none): what the live heap (the history and its index)
// leaves of it, less a quarter, and at least one byte, so that a bound
// the history alone passes leaves the construction nothing.
func solverShare(limit int64) int64 {
	if limit <= 0 {
		return 0
	}
	// The live heap as the last collection measured it, or before any
	// collection every object allocated.
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	var live int64
	for _, x := range s {
		if live == 0 && x.Value.Kind() == metrics.KindUint64 {
			live = int64(x.Value.Uint64())
		}
	}
	return max((limit-live)-(limit-live)/heapGCFraction, 1)
}

// Kinds counts the anomalies of a result by kind, in catalogue order.
func (r *Result) Kinds() map[anomaly.Kind]int {
	m := map[anomaly.Kind]int{}
	for _, a := range r.Anomalies {
		m[a.Kind]++
	}
	return m
}
