package checker

import (
	"context"
	"sync/atomic"
)

// Meter shows a running check's progress to whoever polls it — the
// command line's progress line on a terminal. Checkers update it now and
// then (the solver when it polls for interruption); reading it never
// changes what they decide. The zero value is ready; a nil *Meter
// ignores every update.
type Meter struct {
	phase atomic.Pointer[string]
	// Vars and Clauses are the size of the solver's current encoding;
	// Conflicts and Decisions its search so far.
	Vars, Clauses, Conflicts, Decisions atomic.Int64
	// Solves counts the solver searches begun (the unsat search's windows,
	// the weaker levels' checks, the shrinker's sub-histories).
	Solves atomic.Int64
}

// SetPhase says what the check is doing now ("encoding", "solving",
// "weaker levels", …).
func (m *Meter) SetPhase(p string) {
	if m != nil {
		m.phase.Store(&p)
	}
}

// Phase is what SetPhase said last ("" before it was called).
func (m *Meter) Phase() string {
	if m == nil {
		return ""
	}
	if p := m.phase.Load(); p != nil {
		return *p
	}
	return ""
}

// Solving records the start of a solver search over vars variables and
// clauses clauses.
func (m *Meter) Solving(vars, clauses int) {
	if m == nil {
		return
	}
	m.Solves.Add(1)
	m.Vars.Store(int64(vars))
	m.Clauses.Store(int64(clauses))
	m.Conflicts.Store(0)
	m.Decisions.Store(0)
	m.SetPhase("solving")
}

type meterKey struct{}

// WithMeter returns ctx carrying m, for the checkers under it to update.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterFrom returns the Meter ctx carries, or nil.
func MeterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}
