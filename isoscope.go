// Package isoscope checks whether a history of database transactions
// satisfies an isolation level, for programs that embed the checker. It is a
// thin layer over the command's own machinery: read a history, check it at
// a level, and get the result in the shape of the CLI's JSON output.
//
//	h, err := isoscope.ReadHistory(file, "history.jsonl")
//	res, err := isoscope.Check(ctx, h, isoscope.Options{Level: "si"})
//	if res.Outcome == "violation" { … res.Anomalies[0].Explanation … }
package isoscope

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/polygraph"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

// History is a history read by ReadHistory or ParseNotation.
type History struct {
	h *history.History
}

// Stats counts a history's transactions, sessions, operations and keys.
type Stats = history.Stats

// Stats counts what the history holds.
func (h *History) Stats() Stats { return h.h.Stats() }

// ReadHistory reads a history from r in any stream format isoscope reads
// (its JSON Lines format, dbcop, Plume, AWDIT, knossos, porcupine, Jepsen,
// TimeKiller), detected from the first bytes as isoscope check detects a
// file's format; gzip-compressed input is decompressed. Reading is bounded
// by check's default limits. name is used in error messages. Bad input
// gives an error naming the line and the field.
func ReadHistory(r io.Reader, name string) (*History, error) {
	o, err := registry.Read(r, name, "auto", registry.Options{})
	if err != nil {
		return nil, err
	}
	return &History{h: o.History}, nil
}

// ParseNotation builds a history from the one-line notation of isoscope's
// tests, e.g. "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2".
func ParseNotation(s string) (*History, error) {
	h, err := history.Parse(s)
	if err != nil {
		return nil, err
	}
	return &History{h: h}, nil
}

// Options choose what to check.
type Options struct {
	// Level is an isolation level name or short form ("ser", "si",
	// "strict-serializable", "rc", …); empty means serializable.
	Level string
	// Checker is "auto" (or empty) or an algorithm's name ("mt", "lwt",
	// "dsg").
	Checker string
	// WeakerLevels asks, on a violation, which weaker levels still hold.
	WeakerLevels bool
	// OwnReads is what a read of a key its transaction wrote before may
	// return: "own" (its last write; the default), "external" (only other
	// transactions' writes: stores that buffer writes until commit),
	// "either", or "infer": the policy the history shows (own when every
	// such read saw its own write, external when none did, either when
	// some did), which Result.OwnReads then reports. Inference is opt in:
	// every level's internal consistency includes reading your own
	// writes, and a database that never does would be judged by the
	// external policy instead of refuted. Only the solver checker follows
	// policies other than own.
	OwnReads string
	// Modules run on the history before the search and add what the
	// caller knows about its database (see Module). Only the solver
	// checker runs modules, so with modules it decides.
	Modules []Module
	// InnoDBRepeatableRead checks the history against MariaDB/InnoDB's
	// REPEATABLE READ instead of the textbook level: snapshot reads come
	// from the transaction's first read view, locking reads
	// (Op attribute lock) and writes see the latest committed state. Each
	// transaction is split into a view piece and a commit piece, which are
	// checked at serializability; InnoDB's documented behaviour (lost
	// updates through a snapshot read and an UPDATE) is accepted, and
	// what it does not allow (fractured snapshots, G1, a read that misses
	// the transaction's own write) is not. Level must be repeatable read
	// ("rr"). The model is deliberately not tight: see package
	// internal/check/innodb.
	InnoDBRepeatableRead bool
	// Tuning switches the solver checker's optimisations off, for
	// measurement; with any switch set only the solver checkers decide.
	Tuning Tuning
}

// Tuning switches off the solver checker's optimisations one by one
// (NoPrune, NoPhase, NoTwoWidth, NoChrono, NoUnsatSearch, Dense), for
// measurement. A verdict never flips, but a check may become undecided
// (outcome "unknown"): without pruning or with dense pairs the encoding
// can pass its bound, and without the unsat search nothing decides a
// history past it.
type Tuning = polygraph.Tuning

// StartOrder is the built-in module for databases that take a
// transaction's snapshot at its start_ts: T1 precedes T2 whenever
// commit_ts(T1) < start_ts(T2) (Adya's start-dependency).
type StartOrder = polygraph.StartOrder

// Module is Boomslang's extension point: a pass over the history's
// abstract semantic graph that adds edges every dependency graph of the
// history has — a version order the database exposes, an order its clients
// observed. Implement Name and Extend; Extend reads the ASG (the history,
// its index, the writers of each key) and adds edges with ASG.Before, or
// superpositions of edge sets — exactly one holds — with ASG.Either.
type Module = polygraph.Module

// ASG is the abstract semantic graph a Module reads and extends.
type ASG = polygraph.ASG

// ModuleEdge is a dependency edge a Module names in a superposition
// (ASG.Either): from, to, its kind and key (NoKey for none).
type ModuleEdge = polygraph.Edge

// SessionOrder is the built-in module that adds session order to a level
// that does not ask for it.
type SessionOrder = polygraph.SessionOrder

// RealTime is the built-in module that adds real-time order (from the
// begin and end instants) to a level that does not ask for it.
type RealTime = polygraph.RealTime

// CommitOrder is the built-in module for databases whose version order is
// their commit order: every key's writers ordered by commit_ts.
type CommitOrder = polygraph.CommitOrder

// TxnID identifies a transaction of a history: its position in file order.
type TxnID = history.TxnID

// KeyID identifies a key of a history; NoKey marks an edge on no key.
type KeyID = history.KeyID

// NoKey marks an edge that is not about one key.
const NoKey = history.NoKey

// Dep is a kind of dependency edge.
type Dep = anomaly.Dep

// The dependency kinds a Module may add.
const (
	WW = anomaly.WW // version order: the target overwrote the source's version
	WR = anomaly.WR // the target read the source's version
	SO = anomaly.SO // session order
	RT = anomaly.RT // real time: the source ended before the target began
)

// Result is the outcome of a check, in the shape of the CLI's JSON result:
// Outcome is "satisfied", "violation" or "unknown".
type Result = report.Document

// Anomaly is one finding of a Result.
type Anomaly = report.Finding

// Edge is one dependency of an anomaly's cycle.
type Edge = report.Edge

// OpRef is one operation at issue of an anomaly (Anomaly.Ops): its
// transaction's id as in the input and its index in the transaction.
type OpRef = report.OpRef

// Check checks h against the level in o. It returns an error for an
// unknown level or checker, or when no algorithm can decide this history
// at this level; a context that ends gives outcome "unknown". Strict
// serializability of a history whose transactions lack begin and end
// instants is checked at serializability (Result.CheckedAt): a violation
// there is a violation, with Result.Note saying so; otherwise the outcome
// is "unknown", Result.Reason saying why.
func Check(ctx context.Context, h *History, o Options) (*Result, error) {
	name := o.Level
	if name == "" {
		name = "ser"
	}
	l, err := level.Lookup(name)
	if err != nil {
		return nil, err
	}
	co := check.Options{Checker: o.Checker, Holds: o.WeakerLevels, Modules: o.Modules, InnoDB: o.InnoDBRepeatableRead, Tuning: o.Tuning}
	switch o.OwnReads {
	case "":
	case "infer":
		co.InferOwnReads = true
	default:
		var ok bool
		if co.OwnReads, ok = history.ParseOwnReads(o.OwnReads); !ok {
			return nil, fmt.Errorf("unknown OwnReads %q (known: own, external, either, infer)", o.OwnReads)
		}
	}
	start := time.Now()
	res, err := check.Run(ctx, h.h, l, co)
	if err != nil {
		return nil, err
	}
	return report.NewDocument(&report.Checked{History: h.h, Result: res, Elapsed: time.Since(start)}, false), nil
}
