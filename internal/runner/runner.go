package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// Config says what to run where.
type Config struct {
	// DB is the database; its table must exist (Reset it first).
	DB db.Database
	// Isolation is the level every transaction asks for.
	Isolation db.Isolation
	// Plan is the workload: one list of transactions per session.
	Plan *workload.Plan
	// NoTrace switches recording off: the sessions run the same
	// transactions but build no history (to measure tracing's overhead).
	NoTrace bool
	// Out, when set, receives the history as it is recorded: the header,
	// then one line per transaction as it finishes, flushed whenever the
	// recorder catches up (at least every FlushEvery).
	Out io.Writer
	// Source is the header's "source": what produced the history.
	Source string
	// MaxRetries is how many times a session retries a planned
	// transaction that the database aborted; each retry is a new
	// transaction with fresh values. 0 means DefaultMaxRetries; negative,
	// no retries.
	MaxRetries int
	// Progress, when set, is updated as transactions finish.
	Progress *Progress
	// Hook, when set, is called by the recorder after each transaction it
	// records, with the number recorded so far (tests inject faults here).
	Hook func(recorded int)
}

// DefaultMaxRetries is how often an aborted planned transaction is
// retried unless Config says otherwise.
const DefaultMaxRetries = 10

// FlushEvery bounds how long a recorded transaction waits in the
// recorder's buffer before it reaches Out.
const FlushEvery = 200 * time.Millisecond

// Progress counts finished transactions while a run goes on; every field
// may be read at any time.
type Progress struct {
	Committed, Aborted, Unknown atomic.Int64
	// Done counts planned transactions that are finished: committed,
	// unknown, or given up after their retries.
	Done atomic.Int64
}

// Summary is what a run did, beyond its history.
type Summary struct {
	// Planned is the number of planned transactions; Done how many of
	// them finished (committed, unknown, or given up).
	Planned, Done int
	// Committed, Aborted and Unknown count transactions, retries included.
	Committed, Aborted, Unknown int
	// GaveUp counts planned transactions abandoned after their retries.
	GaveUp int
	// Reasons counts why transactions aborted or ended unknown
	// ("serialization failure (40001)", "connection lost", …): the history
	// format keeps no reason, so they are kept here.
	Reasons map[string]int
	// Reconnects counts sessions that lost their connection and went on
	// with a new one (and a new session label).
	Reconnects int
	// Elapsed is the run's duration.
	Elapsed time.Duration
	// Interrupted says the context ended before the plan did.
	Interrupted bool
	// Errors holds why sessions stopped before their plan ended (a
	// database that went away), and any error writing the history.
	Errors []error
}

// Throughput returns committed transactions per second.
func (s *Summary) Throughput() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Committed) / s.Elapsed.Seconds()
}

// AbortRate returns the share of transactions that aborted.
func (s *Summary) AbortRate() float64 {
	n := s.Committed + s.Aborted + s.Unknown
	if n == 0 {
		return 0
	}
	return float64(s.Aborted) / float64(n)
}

// Result is a run's history and summary.
type Result struct {
	// History holds every recorded transaction in file order (nil with
	// NoTrace).
	History *history.History
	Summary Summary
	// Start is the instant the sessions started, on the clock of the
	// history and the outcomes.
	Start int64
	// Outcomes says how every transaction ended, in the order they ended
	// (kept with NoTrace too).
	Outcomes []Outcome
}

// run is one run's shared state.
type run struct {
	c       Config
	retries int
	clock   clock
	// nextLabel is the next session label for a session that reconnects.
	nextLabel atomic.Int64
	progress  *Progress
}

// Run executes the plan: one session per plan entry, each on its own
// connection, concurrently; with recording on, every transaction is
// traced (operations and results, status, begin and end instants) and
// written to Out as it finishes. A context that ends stops the sessions:
// a transaction whose COMMIT was in flight is recorded unknown, one not
// yet committing aborted, and the history stays complete and valid. Run
// returns an error, and no result, only when a session cannot connect at
// all; sessions that lose the database later are reported in the
// summary's Errors.
func Run(ctx context.Context, c Config) (*Result, error) {
	if c.DB == nil || c.Plan == nil {
		return nil, errors.New("runner: a database and a plan are required")
	}
	if err := c.DB.Supports(c.Isolation); err != nil {
		return nil, err
	}
	r := &run{c: c, retries: c.MaxRetries, progress: c.Progress}
	switch {
	case r.retries == 0:
		r.retries = DefaultMaxRetries
	case r.retries < 0:
		r.retries = 0
	}
	if r.progress == nil {
		r.progress = &Progress{}
	}
	n := len(c.Plan.Sessions)
	r.nextLabel.Store(int64(n))
	sessions := make([]*session, n)
	for i := range sessions {
		conn, err := c.DB.Connect(ctx)
		if err != nil {
			for _, s := range sessions[:i] {
				_ = s.conn.Close()
			}
			return nil, fmt.Errorf("connecting session %d: %v", i, err)
		}
		sessions[i] = newSession(r, i, conn)
	}

	// The recorder cancels the run if it cannot write the history.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rec *recorder
	var records chan *record
	recorded := make(chan error, 1)
	if !c.NoTrace {
		records = make(chan *record, 4*n+64)
		rec = newRecorder(c, n)
		go func() {
			err := rec.drain(records, cancel)
			recorded <- err
		}()
	}

	r.clock = newClock()
	var wg sync.WaitGroup
	for _, s := range sessions {
		s.out = records
		wg.Go(func() { s.run(runCtx) })
	}
	wg.Wait()
	elapsed := r.clock.since()

	res := &Result{Start: r.clock.baseNS}
	sum := &res.Summary
	sum.Planned = c.Plan.Len()
	sum.Reasons = map[string]int{}
	sum.Elapsed = elapsed
	for _, s := range sessions {
		sum.Done += s.done
		sum.Committed += s.committed
		sum.Aborted += s.aborted
		sum.Unknown += s.unknown
		sum.GaveUp += s.gaveUp
		sum.Reconnects += s.reconnects
		res.Outcomes = append(res.Outcomes, s.outcomes...)
		for why, k := range s.reasons {
			sum.Reasons[why] += k
		}
		if s.err != nil {
			sum.Errors = append(sum.Errors, s.err)
		}
		if s.conn != nil {
			_ = s.conn.Close()
		}
	}
	slices.SortStableFunc(res.Outcomes, func(a, b Outcome) int { return cmp.Compare(a.End, b.End) })
	sum.Interrupted = ctx.Err() != nil && sum.Done < sum.Planned
	if rec != nil {
		close(records)
		if err := <-recorded; err != nil {
			sum.Errors = append(sum.Errors, fmt.Errorf("writing the history: %w", err))
		}
		res.History = rec.h
	}
	return res, nil
}

// clock gives instants in nanoseconds since the Unix epoch from one
// monotonic clock: a wall-clock base plus the monotonic time elapsed, so
// that instants never go backwards even if the wall clock is set.
type clock struct {
	base   time.Time
	baseNS int64
}

func newClock() clock {
	b := time.Now()
	return clock{base: b, baseNS: b.UnixNano()}
}

func (c clock) now() int64 { return c.baseNS + int64(time.Since(c.base)) }

func (c clock) since() time.Duration { return time.Since(c.base) }
