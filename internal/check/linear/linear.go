// Package linear decides linearizability — strict serializability of
// histories whose every transaction is one operation on one register —
// and serializability (sequential consistency) of such histories when each
// session works on one register. These are the histories of Jepsen's
// register tests, knossos and porcupine (reads, writes and
// compare-and-set, as their readers encode them), with repeated values and
// operations of unknown outcome, which the general solver decides slowly.
//
// A transaction of such a history reads its register (at most one value
// before it writes), writes it, or both: a compare-and-set that succeeded
// is [r k old, w k new]. As a step of the register it has a precondition
// (the value it read first, if any) and an effect (its last write, if
// any). A committed transaction must be placed; one of unknown outcome may
// be placed anywhere after it began, or not at all (it may not have taken
// effect); an aborted one takes no part.
//
// The check, per register (linearizability is local: Herlihy and Wing's
// P-compositionality), in this order:
//
//   - unique values: when no two operations write the same value and none
//     writes the initial one, and every operation reads before it writes,
//     MTC's Algorithm 2 (package lwt) decides it in O(n log n);
//   - a cheap refutation: a read of a value that no write can still have
//     produced when it ran — every writer of the value began after the
//     read ended, or was overwritten by a write that ended before the read
//     began — refutes the register with an exact cycle;
//   - otherwise a Wing–Gong–Lowe search with just-in-time linearization:
//     the operations are placed one at a time, each only once every
//     operation that ended before it began is placed, and a configuration
//     (the operations placed, the register's value) is never explored
//     twice (porcupine's memo). Beyond porcupine: a read of the current
//     value is placed at once without trying the alternatives (its
//     position is forced: placing it first loses nothing); of required
//     candidates alike (same precondition and effect) only the first to
//     end is tried; an operation of unknown outcome is placed only just
//     before an operation that reads what it wrote, and of several
//     interchangeable ones (same precondition and effect, both already
//     begun) only the first; the memo subsumes a configuration that
//     placed more operations of unknown outcome than one visited with the
//     same value and required operations (leaving them unplaced never
//     hurts); and a configuration in which a value some operation still
//     has to read can no longer be produced is abandoned.
//
// Registers are checked in parallel; each one's outcome depends on it
// alone, so the result does not depend on the schedule. The memo is
// bounded (Options.MemoryLimit, else DefaultMemory) and so is the search's
// work (Options.Limits.Work): past either the check is undecided
// (checker.ErrUndecided). A failed search's counterexample is porcupine's:
// the longest linearizable prefix it found and the operation that cannot
// follow it.
package linear

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the register linearizability checker, named "linear".
type Checker struct{}

// Name returns "linear".
func (Checker) Name() string { return "linear" }

// Capabilities: a search (exponential in the worst case, bounded by
// Options.Limits.Work and the memory bound), nothing else beyond the
// histories it decides.
func (Checker) Capabilities() checker.Capabilities { return checker.Capabilities{Search: true} }

// Plan returns the check of ix at l when every transaction that may take
// effect is one operation on one register (plan says what that takes).
func (Checker) Plan(ix *history.Index, l level.Level, o checker.Options) (checker.Check, error) {
	p, err := newPlan(ix, l)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]anomaly.Anomaly, error) { return p.run(ctx, o) }, nil
}

// DefaultMemory bounds, in bytes, what the searches of one check keep
// (their memos and stacks) when Options.MemoryLimit sets no bound.
const DefaultMemory = 1 << 30

// run checks every register, in parallel on the machine's processors, and
// returns the anomalies in register order. An error (the context ended, a
// bound was hit) comes with the anomalies found on the other registers.
func (p *plan) run(ctx context.Context, o checker.Options) ([]anomaly.Anomaly, error) {
	mem := o.MemoryLimit
	if mem <= 0 {
		mem = DefaultMemory
	}
	workers := min(runtime.GOMAXPROCS(0), len(p.keys))
	// Each register's search has its own share of the memory bound, so
	// that what one finds does not depend on how far the others got.
	lim := limits{memory: mem / int64(max(workers, 1)), work: o.Limits.Work}
	type result struct {
		found []anomaly.Anomaly
		err   error
	}
	results := make([]result, len(p.keys))
	one := func(i int) {
		results[i].found, results[i].err = p.checkKey(ctx, &p.keys[i], lim)
	}
	if workers <= 1 {
		for i := range p.keys {
			if ctx.Err() != nil {
				results[i].err = ctx.Err()
				break
			}
			one(i)
		}
	} else {
		// The largest registers first, so that the processors finish
		// together.
		order := make([]int, len(p.keys))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return len(p.keys[b].ops) - len(p.keys[a].ops) })
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := range next {
					one(i)
				}
			})
		}
		for _, i := range order {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	var out []anomaly.Anomaly
	var firstErr error
	for _, r := range results {
		out = append(out, r.found...)
		if r.err != nil && (firstErr == nil || isContext(r.err) && !isContext(firstErr)) {
			firstErr = r.err
		}
	}
	return out, firstErr
}

// isContext reports whether err is a context's error: the check was
// stopped, which says more than a bound that one register hit.
func isContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// checkKey decides one register: Algorithm 2 with unique values, else the
// refutation and then the search.
func (p *plan) checkKey(ctx context.Context, k *keyPlan, lim limits) ([]anomaly.Anomaly, error) {
	if k.unique != nil {
		if a, ok := checkUnique(p.ix, k); ok {
			return []anomaly.Anomaly{a}, nil
		}
		return nil, nil
	}
	refuter := refuteSessions
	if p.realTime {
		refuter = refute
	}
	if a, ok := refuter(p.h, k); ok {
		return []anomaly.Anomaly{a}, nil
	}
	s := newSearch(p, k, lim)
	ok, err := s.run(ctx)
	if err != nil {
		if errors.Is(err, checker.ErrUndecided) {
			err = fmt.Errorf("register %s: %w", p.h.KeyName(k.key), err)
		}
		return nil, err
	}
	if ok {
		return nil, nil
	}
	return []anomaly.Anomaly{s.counterexample()}, nil
}
