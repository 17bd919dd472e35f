package check

import (
	"context"
	"errors"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/check/listappend"
	"github.com/isoscope/isoscope/internal/check/lwt"
	"github.com/isoscope/isoscope/internal/check/mt"
	"github.com/isoscope/isoscope/internal/check/polygraph"
	"github.com/isoscope/isoscope/internal/check/precheck"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checkers returns every algorithm, fastest first: the order in which Auto
// tries them.
func Checkers() []Checker {
	return []Checker{lwt.Checker{}, mt.Checker{}, listappend.Checker{}, dsg.Checker{}, polygraph.Checker{}, polygraph.Checker{BCGraph: true}}
}

// Names returns the names of every algorithm, for usage messages.
func Names() []string {
	var out []string
	for _, c := range Checkers() {
		out = append(out, c.Name())
	}
	return out
}

// Select returns the checker named name, or with "auto" (or "") the first
// of Checkers that decides ix's history at level l. It returns an
// *UnsupportedError when the named checker, or every checker, declines.
func Select(ix *history.Index, l level.Level, name string) (Checker, error) {
	return selectWith(ix, l, name, nil)
}

// selectWith is Select for a check with modules: a checker decides only if
// it runs them, and it is returned running them.
func selectWith(ix *history.Index, l level.Level, name string, modules []polygraph.Module) (Checker, error) {
	named := name != "" && name != "auto"
	var why []string
	for _, c := range Checkers() {
		if named && c.Name() != name {
			continue
		}
		if err := decides(c, ix, l, modules); err != nil {
			if named {
				return nil, &UnsupportedError{Checker: name, Level: l, Why: []string{err.Error()}}
			}
			why = append(why, c.Name()+": "+err.Error())
			continue
		}
		if len(modules) > 0 {
			return c.(ModuleUser).WithModules(modules), nil
		}
		return c, nil
	}
	if named {
		return nil, fmt.Errorf("unknown checker %q (known: auto, %v)", name, Names())
	}
	return nil, &UnsupportedError{Level: l, Why: why}
}

// VersionOrderUser is implemented by checkers that take a white-box version
// order (the header's version_order) into account. Others decline
// histories that carry one: ignoring it could call a violation correct.
type VersionOrderUser interface {
	UsesVersionOrder() bool
}

// OwnReadsUser is implemented by checkers that follow the index's
// read-your-own-writes policy (history.OwnReads); the others assume
// reads see their transaction's own writes and decline other policies.
type OwnReadsUser interface {
	FollowsOwnReads() bool
}

// decides is c.Decides, declining a white-box version order, a
// read-your-own-writes policy or modules c ignores.
func decides(c Checker, ix *history.Index, l level.Level, modules []polygraph.Module) error {
	if _, ok := c.(ModuleUser); len(modules) > 0 && !ok {
		return fmt.Errorf("it does not run modules")
	}
	if ix.OwnReads() != history.MustReadOwn {
		if u, ok := c.(OwnReadsUser); !ok || !u.FollowsOwnReads() {
			return fmt.Errorf("it assumes reads see their transaction's own writes, not the %q policy", ix.OwnReads())
		}
	}
	if ix.History().Header.VersionOrder != nil {
		if u, ok := c.(VersionOrderUser); !ok || !u.UsesVersionOrder() {
			return fmt.Errorf("it does not use the history's white-box version order")
		}
	}
	return c.Decides(ix, l)
}

// ModuleUser is implemented by checkers that run modules (polygraph.Module)
// on the history before they search.
type ModuleUser interface {
	WithModules(ms []polygraph.Module) polygraph.Checker
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
	// Modules extend the history's abstract semantic graph with what the
	// caller knows of the database (polygraph.Module); only checkers that
	// run modules then decide.
	Modules []polygraph.Module
}

// Run checks h against level l: the shared checks, then the chosen
// algorithm. An error means bad usage (no checker decides this history);
// a context that ends gives outcome Unknown unless a violation was already
// found.
func Run(ctx context.Context, h *history.History, l level.Level, o Options) (Result, error) {
	ix := history.NewIndexWith(h, o.OwnReads)
	res, err := runIndexed(ctx, ix, l, o.Checker, o.Modules)
	if err != nil || res.Outcome != Violation || !o.Holds {
		return res, err
	}
	for _, w := range l.WeakerLevels() {
		implied := false
		for _, got := range res.Holds {
			implied = implied || got.Implies(w.ID)
		}
		if implied {
			continue
		}
		c, err := selectWith(ix, w, "auto", o.Modules)
		if err != nil {
			continue // no checker decides it: say nothing
		}
		if s, ok := c.(Searching); ok && s.Searches() {
			continue // not cheap to know
		}
		sub, err := runIndexed(ctx, ix, w, c.Name(), o.Modules)
		if err != nil {
			continue
		}
		if sub.Outcome == Satisfied {
			res.Holds = append(res.Holds, w)
		}
	}
	return res, nil
}

// undecided reports whether err says a checker gave up without a verdict
// for lack of resources (an error with an Undecided method that says so).
func undecided(err error) bool {
	var u interface{ Undecided() bool }
	return errors.As(err, &u) && u.Undecided()
}

func runIndexed(ctx context.Context, ix *history.Index, l level.Level, name string, modules []polygraph.Module) (Result, error) {
	c, err := selectWith(ix, l, name, modules)
	if err != nil {
		return Result{}, err
	}
	res := Result{Level: l, Checker: c.Name(), Stats: ix.History().Stats()}
	if cv, ok := c.(Caveated); ok {
		res.Caveat = cv.Caveat(ix, l)
	}
	res.Anomalies = precheck.Run(ix, l)
	err = ctx.Err()
	if err == nil {
		var found []anomaly.Anomaly
		found, err = c.Check(ctx, ix, l)
		res.Anomalies = append(res.Anomalies, found...)
	}
	switch {
	case len(res.Anomalies) > 0:
		res.Outcome = Violation
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		res.Outcome, res.Reason = Unknown, "timed out before a verdict"
	case err != nil && undecided(err):
		res.Outcome, res.Reason = Unknown, err.Error()
	case err != nil:
		return Result{}, err
	default:
		res.Outcome = Satisfied
	}
	return res, nil
}

// Kinds counts the anomalies of a result by kind, in catalogue order.
func (r *Result) Kinds() map[anomaly.Kind]int {
	m := map[anomaly.Kind]int{}
	for _, a := range r.Anomalies {
		m[a.Kind]++
	}
	return m
}
