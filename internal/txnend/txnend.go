// Package txnend is how the transactions of a workload run ended, as
// their sessions saw them: each one's instants, its status and, when it
// did not commit, the class of the error that ended it. The runner
// records them (internal/runner); the run plots draw them
// (internal/report/runplot). The package is plain data: it neither
// records nor renders, so that both can import it.
package txnend

import "github.com/isoscope/isoscope/internal/history"

// Record is how one transaction of a run ended, as its session saw it:
// the figures behind a run's plots (throughput and latency over time,
// abort reasons). Records are kept with tracing off too.
type Record struct {
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
