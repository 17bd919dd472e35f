// Package isoscope tells whether a history of database transactions
// satisfies an isolation level, for programs that embed the checker.
//
// Build a History from Go values (NewHistory) or read one in any format
// isoscope reads (ReadHistory, OpenHistory); Check it at a Level. The
// Result says whether it is Satisfied, Violated or Undecided, and each
// Anomaly of a violation names the transactions, the cycle of dependency
// edges between them, the key and operations at issue, and a plain
// explanation:
//
//	h, err := isoscope.NewHistory([]isoscope.Txn{
//		{Session: isoscope.Int(1), Ops: []isoscope.Op{isoscope.R(x, isoscope.Null), isoscope.W(x, isoscope.Int(1))}},
//		…
//	})
//	res, err := isoscope.Check(ctx, h, isoscope.Options{Level: isoscope.SnapshotIsolation})
//	if res.Outcome == isoscope.Violated {
//		fmt.Println(res.Anomalies[0].Kind, res.Anomalies[0].Explanation)
//	}
//
// A program can record its own history as it runs: a Recorder, safe for
// many goroutines, records each transaction (Begin, its operations with
// their results, Commit, Abort or Unknown) with instants from one
// monotonic clock, streams the history in isoscope's format and hands it
// back for Check. Package isoscopetest fails a Go test whose history
// violates a level (docs/recorder.md).
//
// A verdict is sound and complete: the checker Auto picks is sound and
// complete for the history at the level (Result.Checker names it). A
// Module adds what the caller knows of its database before the search.
package isoscope

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

// Options choose what to check.
type Options struct {
	// Level is the isolation level; the zero Level is Serializable, or the
	// level the history's format implies (Knossos and Porcupine logs:
	// StrictSerializable).
	Level Level
	// Checker is the algorithm; "" is Auto: the first that is sound and
	// complete for the history at the level.
	Checker Checker
	// WeakerLevels asks, on a violation, which weaker levels still hold
	// (Result.Holds), where that is cheap to know.
	WeakerLevels bool
	// OwnReads is what a read of a key its transaction wrote before may
	// return; only the SAT checker follows policies other than OwnWrite.
	OwnReads OwnReads
	// Modules run on the history before the search and add what the
	// caller knows about its database (see Module). Only the SAT checker
	// runs modules, so with modules it decides.
	Modules []Module
	// InnoDBRR checks the history against MariaDB/InnoDB's REPEATABLE
	// READ (the innodb-rr module) instead of the textbook level: snapshot
	// reads come from the transaction's first read view, locking reads
	// (Op.Lock) and writes see the latest committed state. Each
	// transaction is split into a view piece and a commit piece, checked
	// at serializability; InnoDB's documented behaviour (lost updates
	// through a snapshot read and an UPDATE) is accepted, and what it does
	// not allow (fractured snapshots, G1, a read that misses the
	// transaction's own write) is not. Level must be RepeatableRead. The
	// model is deliberately not tight: Result.Caveat says what it may
	// miss.
	InnoDBRR bool
}

// Result is what a check found.
type Result struct {
	// Level is the level asked for, and Outcome the verdict.
	Level   Level
	Outcome Outcome
	// Checker is the algorithm that decided.
	Checker Checker
	// Anomalies are every anomaly found that the level proscribes: all of
	// the checks every level shares (thin-air, aborted and intermediate
	// reads, …) and one cycle per violating strongly connected component.
	Anomalies []Anomaly
	// Holds lists weaker levels the history still satisfies, strongest
	// first, when it violates Level and Options.WeakerLevels asked.
	Holds []Level
	// CheckedAt is the level the history was really checked at when that
	// is not Level (0 otherwise): strict serializability of a history
	// whose transactions lack begin and end instants is checked at
	// Serializable. Note then says why a violation there is one of Level.
	CheckedAt Level
	Note      string
	// Reason says why the outcome is Undecided.
	Reason string
	// Caveat says what the check may have missed, when its model is not
	// tight (InnoDBRR).
	Caveat string
	// Modules names the modules the check ran, in order.
	Modules []string
	// OwnReads is the read-your-own-writes policy the check followed (the
	// one inferred, with Options.OwnReads Infer).
	OwnReads OwnReads
	// Stats counts what the history holds.
	Stats Stats

	// checked is the check's own result, which WriteText and WriteReport
	// render.
	checked *report.Checked
}

// Kind names an anomaly of the catalogue (docs/anomalies.md).
type Kind string

// The anomaly kinds.
const (
	// Cycle is a dependency cycle no finer name fits.
	Cycle                     Kind = "cycle"
	ThinAirRead               Kind = "thin-air-read"
	AbortedRead               Kind = "aborted-read"
	FutureRead                Kind = "future-read"
	NotMyLastWrite            Kind = "not-my-last-write"
	NotMyOwnWrite             Kind = "not-my-own-write"
	IntermediateRead          Kind = "intermediate-read"
	NonRepeatableRead         Kind = "non-repeatable-read"
	SessionGuaranteeViolation Kind = "session-guarantee-violation"
	NonMonotonicRead          Kind = "non-monotonic-read"
	FracturedRead             Kind = "fractured-read"
	CausalityViolation        Kind = "causality-violation"
	LongFork                  Kind = "long-fork"
	LostUpdate                Kind = "lost-update"
	WriteSkew                 Kind = "write-skew"
	RealTimeViolation         Kind = "real-time-violation"
	IncompatibleOrder         Kind = "incompatible-order"
	DuplicateElements         Kind = "duplicate-elements"
	StaleRead                 Kind = "stale-read"
	ReadBeyondSnapshot        Kind = "read-beyond-snapshot"
	ConcurrentWrite           Kind = "concurrent-write"
	CommitBeforeStart         Kind = "commit-before-start"
)

// Anomaly is one finding: what went wrong, between which transactions,
// and why it is wrong, in the history's own names. The virtual initial
// transaction, which installs the initial state, is named Str("init").
type Anomaly struct {
	Kind Kind
	// Phenomenon is the Adya phenomenon ("G2-item", "G-single", …), or ""
	// when none applies.
	Phenomenon string
	// Txns are the transactions involved, in the order Explanation names
	// them.
	Txns []Value
	// Cycle is one concrete cycle, for cycle anomalies.
	Cycle []Edge
	// Key and Value are the key and the value at issue for anomalies about
	// a single read (thin-air, aborted, intermediate reads, …); Key is
	// Null otherwise.
	Key, Value Value
	// Ops are the operations at issue: for a single read, the offending
	// read first, then the writes it concerns.
	Ops []OpRef
	// Explanation says in plain words what the anomaly is.
	Explanation string
	// BestFound says the cycle is one the search found under some choice
	// of the history's uncertain dependencies: the verdict is exact, the
	// cycle illustrates it.
	BestFound bool
	// Core are the transactions of a sub-history that violates the level
	// on its own, when the SAT checker's counterexample search found one;
	// Minimal says none of them can be left out.
	Core    []Value
	Minimal bool
}

// Edge is one dependency of an anomaly's cycle: From → To of kind Dep, on
// Key (Null for an edge on no key).
type Edge struct {
	From, To Value
	Dep      Dep
	Key      Value
}

// OpRef names an operation: the transaction, and the operation's
// position in it (from 0).
type OpRef struct {
	Txn   Value
	Index int
}

// Check checks h against the level in o. It returns an error for an
// unknown level or checker, a module that fails, or when no algorithm can
// decide this history at this level; a context that ends gives outcome
// Undecided (unless a violation was found already).
func Check(ctx context.Context, h *History, o Options) (*Result, error) {
	var l level.Level
	switch {
	case o.Level != 0:
		id, ok := toLevel[o.Level]
		if !ok {
			return nil, fmt.Errorf("unknown level %d", o.Level)
		}
		l = level.Get(id)
	case h.h.Header.Implies != "":
		var err error
		if l, err = level.Lookup(h.h.Header.Implies); err != nil {
			return nil, err
		}
	default:
		l = level.Get(level.Serializable)
	}
	co := check.Options{Checker: string(o.Checker), Holds: o.WeakerLevels, InnoDBRR: o.InnoDBRR}
	for _, m := range o.Modules {
		co.Modules = append(co.Modules, asChecker(m))
	}
	switch o.OwnReads {
	case OwnWrite:
	case External:
		co.OwnReads = history.ReadsExternal
	case Either:
		co.OwnReads = history.ReadsEither
	case Infer:
		co.InferOwnReads = true
	default:
		return nil, fmt.Errorf("unknown OwnReads %d", o.OwnReads)
	}
	res, err := check.Run(ctx, h.h, l, co)
	if err != nil {
		return nil, err
	}
	out := &Result{Level: fromLevel(res.Level.ID), Checker: Checker(res.Checker), Reason: res.Reason,
		Caveat: res.Caveat, Note: res.Note, Modules: res.Modules, Stats: Stats(res.Stats),
		checked: &report.Checked{File: h.h.Name, History: h.h, Result: res}}
	switch res.Outcome {
	case check.Satisfied:
		out.Outcome = Satisfied
	case check.Violated:
		out.Outcome = Violated
	default:
		out.Outcome = Undecided
	}
	if res.CheckedAt != nil {
		out.CheckedAt = fromLevel(res.CheckedAt.ID)
	}
	for _, w := range res.Holds {
		out.Holds = append(out.Holds, fromLevel(w.ID))
	}
	switch res.OwnReads {
	case history.ReadsExternal:
		out.OwnReads = External
	case history.ReadsEither:
		out.OwnReads = Either
	}
	for i := range res.Anomalies {
		out.Anomalies = append(out.Anomalies, anomalyOf(h.h, &res.Anomalies[i]))
	}
	return out, nil
}

// anomalyOf returns the internal anomaly a in h's own names: its
// transactions by their ids in the history, its keys and values as the
// history writes them.
func anomalyOf(h *history.History, a *anomaly.Anomaly) Anomaly {
	txn := func(t history.TxnID) Value {
		if t == history.Init {
			return Str("init")
		}
		return Value{h.Txns[t].ID}
	}
	key := func(k history.KeyID) Value {
		if k < 0 || int(k) >= len(h.Keys) {
			return Null
		}
		return Value{h.Keys[k]}
	}
	out := Anomaly{Kind: Kind(a.Kind.String()), Phenomenon: a.Phenomenon.String(), Key: key(a.Key), Value: Value{a.Value},
		Explanation: report.Explain(h, a), BestFound: a.BestFound, Minimal: a.Minimal}
	for _, t := range a.Txns {
		out.Txns = append(out.Txns, txn(t))
	}
	for _, s := range a.Cycle {
		out.Cycle = append(out.Cycle, Edge{From: txn(s.From), To: txn(s.To), Dep: Dep(s.Dep.String()), Key: key(s.Key)})
	}
	for _, r := range a.Ops {
		out.Ops = append(out.Ops, OpRef{Txn: txn(r.Txn), Index: int(r.Op)})
	}
	for _, t := range a.Core {
		out.Core = append(out.Core, txn(t))
	}
	return out
}
