// Package checker is the contract between the checking driver (package
// check) and its algorithms (chronos, lwt, mt, list-append, dsg, saturate, the
// solver): what a checker says it can take, as data (Capabilities); the
// one options value it is configured with (Options); and how it is asked
// to check one history — it plans the check, deciding in the same pass
// whether it is sound and complete for the history, and the plan runs
// it. What the solver's extension point asks of a module (Module, ASG)
// is part of the contract too, since options carry modules.
//
// The ordered list of checkers, the automatic choice, the search for the
// weaker levels that still hold and the InnoDB rewriting live beside the
// contract, in package check.
package checker

import (
	"context"
	"errors"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is one checking algorithm.
type Checker interface {
	// Name is the name --checker selects it by.
	Name() string
	// Capabilities says what the checker takes beyond a plain history of
	// the kind it decides.
	Capabilities() Capabilities
	// Plan decides, in one pass over the history, whether the checker is
	// sound and complete for ix's history at level l under o; if it is,
	// it returns the check to run, which keeps what deciding computed.
	// Otherwise it returns an error that says why not. The driver has
	// already declined what the capabilities rule out (a white-box
	// version order, a read-your-own-writes policy, modules or switches
	// the checker does not take), so Plan need not look at them.
	Plan(ix *history.Index, l level.Level, o Options) (Check, error)
}

// Check looks for the cycle anomalies the level proscribes, on the
// history and at the level it was planned for. The shared checks (thin
// air, aborted and intermediate reads, internal consistency) have run
// before and are not repeated. A context that ends makes it return the
// context's error; a bound of o.Limits or o.MemoryLimit that stops it
// returns an error that wraps ErrUndecided.
type Check func(ctx context.Context) ([]anomaly.Anomaly, error)

// Capabilities are what a checker can take, as data.
type Capabilities struct {
	// VersionOrder: it respects a white-box version order (the header's
	// version_order). A checker without it declines a history that
	// carries one: ignoring it could call a violation correct.
	VersionOrder bool
	// OwnReads: it follows read-your-own-writes policies other than
	// history.MustReadOwn. A checker without it assumes every read of a
	// key its transaction wrote returns the last own write.
	OwnReads bool
	// Modules: it runs modules (Options.Modules) and takes the solver's
	// switches (Options.Tuning).
	Modules bool
	// Search: its worst case is exponential (a SAT search), bounded by
	// Options.Limits; the driver runs it to tell which weaker levels still
	// hold only on small histories.
	Search bool
}

// Options configure one check. The zero Options is the defaults.
type Options struct {
	// Modules extend the history's abstract semantic graph before the
	// search (only for a checker with Capabilities.Modules).
	Modules []Module
	// Tuning switches the solver's optimisations off, for measurement
	// (only for a checker with Capabilities.Modules).
	Tuning Tuning
	// Limits bound a searching checker's work, in counts of work.
	Limits Limits
	// MemoryLimit bounds, in bytes, what a searching checker's
	// construction may keep (0: no bound); past it the check is
	// undecided instead of exhausting the machine.
	MemoryLimit int64
	// NoShrink skips the counterexample search after a refutation: the
	// verdict stands, its counterexample is the first one found.
	NoShrink bool
}

// ErrUndecided is wrapped (errors.Is) by every error that says a check
// gave up without a verdict for lack of resources — a bound of Limits, a
// memory bound — rather than failed: the history is neither accepted nor
// refuted.
var ErrUndecided = errors.New("undecided")

// Simple is the Plan of a checker that takes no options: decides says
// whether it accepts ix's history at l, and check is then the check.
func Simple(ix *history.Index, l level.Level, decides func(*history.Index, level.Level) error,
	check func(context.Context, *history.Index, level.Level) ([]anomaly.Anomaly, error)) (Check, error) {
	if err := decides(ix, l); err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]anomaly.Anomaly, error) { return check(ctx, ix, l) }, nil
}

// UniqueRegisters returns nil when every transaction that took effect in
// ix's history only reads and writes, and no value is written twice to a
// key — the histories the checkers that need unique values decide — and
// otherwise says which transaction or value is in the way.
func UniqueRegisters(ix *history.Index) error {
	h := ix.History()
	for i := range h.Txns {
		if !ix.Effective(history.TxnID(i)) {
			continue
		}
		for _, op := range h.Txns[i].Ops {
			if op.Kind != history.Read && op.Kind != history.Write {
				return fmt.Errorf("transaction %s has %s operation; it handles reads and writes", h.TxnName(history.TxnID(i)), op.Kind.Noun())
			}
		}
	}
	if !ix.Unique() {
		k, v, _ := ix.Duplicate()
		return fmt.Errorf("values repeat (%s is written more than once at %s); it needs unique values", v, h.KeyName(k))
	}
	return nil
}
