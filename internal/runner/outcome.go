package runner

import (
	"strings"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report/runplot"
)

// Outcome is how one transaction of a run ended, as its session saw it:
// the figures behind a run's plots (throughput and latency over time,
// abort reasons). Outcomes are kept with tracing off too.
type Outcome struct {
	// Begin and End are the transaction's instants, on the clock of the
	// history (nanoseconds since the Unix epoch).
	Begin, End int64
	Status     history.Status
	// Abort says why a transaction that did not commit ended (NotAborted
	// for a committed one).
	Abort AbortClass
}

// AbortClass is the kind of error that ended a transaction that did not
// commit: the reasons a database engineer tells apart.
type AbortClass uint8

// The abort classes.
const (
	// NotAborted is a committed transaction's class.
	NotAborted AbortClass = iota
	// SerializationFailure: the database could not serialize the
	// transaction (PostgreSQL 40001; MariaDB 1020, a write conflict under
	// its snapshot isolation; Badger's ErrConflict, a key read was written
	// by a transaction committed since).
	SerializationFailure
	// Deadlock: chosen as a deadlock victim (PostgreSQL 40P01, MySQL 1213).
	Deadlock
	// LockTimeout: a lock was not granted in time (MySQL 1205,
	// PostgreSQL 55P03, SQLite's SQLITE_BUSY and SQLITE_LOCKED).
	LockTimeout
	// ConnectionLost: the connection broke.
	ConnectionLost
	// Interrupted: the run ended while the transaction was in flight.
	Interrupted
	// OtherAbort is any other error.
	OtherAbort
	// NoAnswer: a request got no answer within the statement timeout,
	// and the session gave up on the connection.
	NoAnswer
)

// AbortClasses lists the classes of transactions that did not commit, in
// the order reports show them.
var AbortClasses = []AbortClass{SerializationFailure, Deadlock, LockTimeout, ConnectionLost, NoAnswer, Interrupted, OtherAbort}

// String names the class as reports show it.
func (c AbortClass) String() string {
	switch c {
	case NotAborted:
		return "committed"
	case SerializationFailure:
		return "serialization failure"
	case Deadlock:
		return "deadlock"
	case LockTimeout:
		return "lock timeout"
	case ConnectionLost:
		return "connection lost"
	case NoAnswer:
		return "no answer"
	case Interrupted:
		return "interrupted"
	}
	return "other"
}

// ClassifyAbort sorts the error that ended a transaction, given as the
// database's classification of it (db.Database.Classify: a class and a
// reason that ends in the driver's error code in parentheses, such as
// "serialization failure (40001)" or "deadlock (1213)").
func ClassifyAbort(class db.ErrorClass, reason string) AbortClass {
	switch class {
	case db.Disconnected:
		return ConnectionLost
	case db.Interrupted:
		return Interrupted
	case db.Failed:
		return OtherAbort
	}
	code := reason
	if i := strings.LastIndexByte(reason, '('); i >= 0 && strings.HasSuffix(reason, ")") {
		code = reason[i+1 : len(reason)-1]
	}
	switch code {
	case "40001", "1020", "ErrConflict":
		return SerializationFailure
	case "40P01", "1213":
		return Deadlock
	case "1205", "55P03", "SQLITE_BUSY", "SQLITE_LOCKED":
		return LockTimeout
	}
	return OtherAbort
}

// PlotData returns the run's transactions as the run plots take them:
// instants relative to the start of the run, and the abort class of
// each transaction that did not commit as its reason. label is the plots'
// second title line.
func (r *Result) PlotData(label string) *runplot.Run {
	pr := &runplot.Run{Label: label, Elapsed: r.Summary.Elapsed, Txns: make([]runplot.Txn, len(r.Outcomes))}
	for _, c := range AbortClasses {
		pr.Reasons = append(pr.Reasons, c.String())
	}
	for i, o := range r.Outcomes {
		t := &pr.Txns[i]
		t.Begin, t.End, t.Status = time.Duration(o.Begin-r.Start), time.Duration(o.End-r.Start), o.Status
		if o.Status != history.Committed {
			t.Reason = o.Abort.String()
		}
	}
	return pr
}
