package online

import (
	"context"
	"errors"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Config sets up a Checker.
type Config struct {
	// Level is the level checked: serializable, snapshot isolation or
	// read committed (New refuses any other, naming it).
	Level level.Level
	// MemoryBytes bounds the checker's estimate of what it holds, in
	// bytes; 0 for no bound. Past half of it the settled state of idle
	// keys is dropped (counted in Stats.DroppedKeys; a later read of one
	// leaves the verdict Undecided). When the held transactions alone
	// pass it (no fences, orders not settled), the checker keeps them and
	// says so in Stats.Warning and in the Result's Caveat.
	MemoryBytes int64
	// FenceKey names the fence key (the history header's "fence_key"),
	// nil for none: without fences a transaction is forgotten only where
	// the lists' visible orders settle it.
	FenceKey *history.Value
}

// Finding is one violation the checker is certain of: no later arrival
// retracts it. Anomaly names transactions and keys of History, a small
// history holding the transactions involved (ids, sessions, operations),
// so that internal/report explains it as it explains an offline
// finding.
type Finding struct {
	Anomaly anomaly.Anomaly
	History *history.History
	// Arrived is how many transactions had arrived when the finding
	// became certain (the latency of a finding is measured from the
	// arrival of its last transaction to this count).
	Arrived uint64
	// Chosen says the cycle rests on an order of appends no read had
	// shown when it was reported (the solver's choice): the violation is
	// certain, and this cycle one that shows it; later reads may show
	// the appends in another order, and the offline checker then names
	// another cycle.
	Chosen bool
}

// Result is the final verdict Drain gives.
type Result struct {
	// Outcome is check.Satisfied, check.Violated or check.Undecided.
	Outcome check.Outcome
	// Findings are every finding, those Add returned first, in the order
	// they became certain, then those Drain found.
	Findings []Finding
	// Reason says why the outcome is Undecided.
	Reason string
	// Caveat says what the bound on memory cost, when it could not be
	// kept (see Stats.Warning), and, for a violation, that others may be
	// missing where transactions could not be judged (Unjudged).
	Caveat string
	// Unjudged says why some transactions could not be judged, whatever
	// the outcome (empty when every one was): the outcome is then
	// Undecided, or Violated by findings that are certain with others
	// possibly missing.
	Unjudged string
	Stats    Stats
}

// Stats counts what a Checker holds and has done.
type Stats struct {
	// Arrived counts the transactions Add took; Held those in memory;
	// Forgotten those garbage-collected.
	Arrived, Held, Forgotten uint64
	// Bytes is the checker's estimate of what it holds; Bound the bound
	// it is kept under (Config.MemoryBytes, or lower after SetBound; 0:
	// none).
	Bytes, Bound int64
	// Rounds counts the garbage-collection rounds run.
	Rounds uint64
	// Findings counts the findings so far.
	Findings int
	// DroppedKeys counts the keys whose settled state was dropped under
	// the memory bound (keys no held transaction touched, least recently
	// touched first): a later transaction that touches one makes the
	// verdict Undecided.
	DroppedKeys uint64
	// DroppedTouched counts the transactions that touched a key after its
	// settled state was dropped: they are not judged on it.
	DroppedTouched int
	// Warning, when set, says why memory is not bounded as asked.
	Warning string
}

// ErrDrained is Add's and Drain's error after Drain.
var ErrDrained = errors.New("online checker: the stream was already drained")

// Checker checks a stream of transactions online. It is not safe for
// concurrent use: one goroutine owns it.
type Checker struct {
	cfg     Config
	drained bool
	st      state
}

// New returns a checker for cfg, or an error naming a level it does not
// check.
func New(cfg Config) (*Checker, error) {
	switch cfg.Level.ID {
	case level.Serializable, level.SnapshotIsolation, level.ReadCommitted:
	default:
		return nil, fmt.Errorf("online checking decides serializable, snapshot-isolation and read-committed, not %s", cfg.Level.Name)
	}
	if cfg.MemoryBytes < 0 {
		return nil, fmt.Errorf("online checking: memory bound %d bytes is negative", cfg.MemoryBytes)
	}
	c := &Checker{cfg: cfg}
	c.st.init(cfg)
	return c, nil
}

// Add takes one batch of src's transactions (src gives their keys' and
// sessions' names), in arrival order: within a session, arrival order is
// session order. It returns the findings that became certain with the
// batch; none is retracted later. A batch with bad input is refused
// whole, with an error naming the transaction, and the checker goes on.
func (c *Checker) Add(src *history.History, batch []history.Txn) ([]Finding, error) {
	if c.drained {
		return nil, ErrDrained
	}
	return c.st.add(src, batch)
}

// Drain ends the stream and returns the final verdict, the one the
// offline checker gives on the whole history.
func (c *Checker) Drain(ctx context.Context) (Result, error) {
	if c.drained {
		return Result{}, ErrDrained
	}
	c.drained = true
	return c.st.drain(ctx)
}

// SetBound sets the bound the checker keeps its estimate under to b
// bytes, at most Config.MemoryBytes (a checker without a bound keeps
// none) and at least 1; past half of it the settled state of idle keys is dropped at once, as
// after a round, down to a quarter. A service lowers it when the
// process's heap holds more than the estimates say (the estimate counts
// what the checker keeps, not what Go keeps beside it), and raises it
// again when the heap has room.
func (c *Checker) SetBound(b int64) {
	if !c.drained {
		c.st.setBound(b)
	}
}

// Stats says what the checker holds and has done.
func (c *Checker) Stats() Stats { return c.st.stats() }
