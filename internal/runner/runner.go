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
	"github.com/isoscope/isoscope/internal/txnend"
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
	// Endless, when set, is an endless plan (Plan is its Plan): the
	// sessions take their transactions from it, which draws more as they
	// go; Duration ends the run.
	Endless *workload.Endless
	// Duration, when positive, bounds the run in time: once it has passed
	// since the sessions started, no session starts another planned
	// transaction (the one under way ends as usual). With a plan that
	// has an end, the run ends at whichever comes first.
	Duration time.Duration
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
	// StmtTimeout is how long a statement may take: the database is told
	// to cancel one that runs longer (db.Target's StmtTimeout, set by
	// whoever opened it), and a session gives up on an answer — to a
	// statement, a COMMIT or a connection attempt — after half as long
	// again, so that the server's cancellation, which leaves the
	// connection usable, comes first when the server is alive. A session
	// that gets no answer takes its connection for lost: the transaction
	// is aborted, or unknown if its COMMIT was sent, and the session
	// reconnects. 0 means DefaultStmtTimeout; negative, no limit.
	StmtTimeout time.Duration
	// Nemesis, when set, runs beside the sessions from the moment they
	// start until they end (its context is then cancelled, and the run
	// waits for it to return, having healed what it broke). It calls
	// record for each fault it applied, once healed, with instants taken
	// from now, the clock of the history's transactions. The faults go
	// into the history (History.Faults, and Out as fault records) in the
	// order recorded, and into Result.Faults.
	Nemesis func(ctx context.Context, now func() int64, record func(history.Fault))
	// ReconnectFor bounds how long a session that lost its connection
	// keeps trying to connect again, with exponential back-off and
	// jitter, from the moment it noticed the loss until the database
	// answers again. When it runs out the session gives up and the run
	// stops (a *LostError in the summary's Errors). 0 means
	// DefaultReconnectFor; negative, one attempt at once.
	ReconnectFor time.Duration
	// Forget keeps no transaction once it is written to Out: the
	// Result's History holds the header, keys, sessions and faults but no
	// transactions, and its Outcomes are empty (no plots), so that a run
	// of any length (run --online) holds memory flat; an endless plan
	// lets go of the transactions it handed out (Endless.Forget).
	Forget bool
}

// DefaultMaxRetries is how often an aborted planned transaction is
// retried unless Config says otherwise.
const DefaultMaxRetries = 10

// DefaultStmtTimeout and DefaultReconnectFor are the statement timeout
// and the reconnection bound unless Config says otherwise.
const (
	DefaultStmtTimeout  = 10 * time.Second
	DefaultReconnectFor = 30 * time.Second
)

// The back-off between attempts to reconnect: the first wait, the
// longest, and how much each is randomized (±50%), so that sessions that
// lost the database together do not knock on it together.
const (
	reconnectFirst  = 50 * time.Millisecond
	reconnectMax    = time.Second
	reconnectJitter = 0.5
	// minAttempt is the least time one connection attempt is given.
	minAttempt = 250 * time.Millisecond
)

// AnswerWait is how long a session waits for an answer when statements
// may take d (Config.StmtTimeout): half as long again.
func AnswerWait(d time.Duration) time.Duration { return d + d/2 }

// LostError says why a run stopped: a session lost the database and could
// not get an answer from it again within the run's ReconnectFor.
type LostError struct {
	// Session is the session's place in the plan.
	Session int
	// Reason is how the connection was lost ("connection lost: …", "no
	// answer within 15s").
	Reason string
	// For is the bound that ran out.
	For time.Duration
	// Err is the last connection attempt's error (nil if a connection was
	// made but gave no answer).
	Err error
}

// Error says what was lost and for how long it was sought.
func (e *LostError) Error() string {
	last := "no answer on a new connection"
	if e.Err != nil {
		last = e.Err.Error()
	}
	return fmt.Sprintf("session %d: %s; could not reconnect within %s: %s", e.Session, e.Reason, e.For, last)
}

// Unwrap returns the last connection attempt's error.
func (e *LostError) Unwrap() error { return e.Err }

// FlushEvery bounds how long a recorded transaction waits in the
// recorder's buffer before it reaches Out.
const FlushEvery = 200 * time.Millisecond

// Progress counts finished transactions while a run goes on; every field
// may be read at any time.
type Progress struct {
	// Committed counts planned transactions that committed, each once
	// and after Done counts it (read it before Done, and it never exceeds
	// Done); Aborted and Unknown count attempts as they end.
	Committed, Aborted, Unknown atomic.Int64
	// Done counts planned transactions that are finished: committed,
	// unknown, or given up after their retries.
	Done atomic.Int64
	// Reconnecting counts sessions that lost the database and have had no
	// answer from it since: reconnecting, or reconnected and waiting for
	// their first answer.
	Reconnecting atomic.Int64
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
	// Outages are the times sessions had no answer from the database, in
	// order: each from the last answer before a loss to the first answer
	// after it, the overlapping losses of several sessions as one.
	Outages []Outage
	// Elapsed is the run's duration.
	Elapsed time.Duration
	// Interrupted says the context ended before the plan did.
	Interrupted bool
	// Errors holds why sessions stopped before their plan ended (a
	// database that went away), and any error writing the history.
	Errors []error
	// Foreign counts the reads of values that none of the run's
	// transactions wrote: something outside the run wrote to its table
	// (none counted with NoTrace, which records no reads).
	Foreign Foreign
}

// Outage is a time during which sessions lost the database: from the
// last answer any of them had before it to the first answer after it, the
// instants relative to the start of the run.
type Outage struct {
	Start, End time.Duration
	// Sessions counts the sessions that lost their connection in it.
	Sessions int
	// Recovered says every one of them had an answer again; if not, End
	// is the end of the run.
	Recovered bool
}

// Duration is how long the outage lasted.
func (o Outage) Duration() time.Duration { return o.End - o.Start }

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
	// Recorded counts the transactions recorded (with Config.Forget, the
	// History holds none of them).
	Recorded int
	Summary  Summary
	// Start is the instant the sessions started, on the clock of the
	// history and the outcomes.
	Start int64
	// Outcomes says how every transaction ended, in the order they ended
	// (kept with NoTrace too).
	Outcomes []txnend.Record
	// Faults are the faults the nemesis applied, in the order it recorded
	// them (kept with NoTrace too).
	Faults []history.Fault
}

// run is one run's shared state.
type run struct {
	c       Config
	retries int
	clock   clock
	// nextLabel is the next session label for a session that reconnects.
	nextLabel atomic.Int64
	progress  *Progress
	// wait is how long a session waits for an answer (0: for ever), and
	// reconnectFor how long it seeks the database after losing it.
	wait, reconnectFor time.Duration
	// answerer tells the server's answers from failures to get one (nil
	// when the database does not).
	answerer db.Answerer
	// stop ends the run, with the reason.
	stop context.CancelCauseFunc
	// deadline is when the sessions stop starting transactions (zero:
	// when the plan ends).
	deadline time.Time
}

// answered reports whether err is the database's answer (see
// db.Answerer); for a database that does not tell, whether it aborted or
// failed the statement rather than losing the connection or the context.
func (r *run) answered(err error) bool {
	if r.answerer != nil {
		return r.answerer.Answered(err)
	}
	class, _ := r.c.DB.Classify(err)
	return class == db.Failed || class == db.Aborted
}

// connect opens a connection, waiting at most the answer wait, and no
// longer than until deadline (but at least minAttempt) when it is set.
func (r *run) connect(ctx context.Context, deadline time.Time) (db.Conn, error) {
	t := r.wait
	if !deadline.IsZero() {
		left := max(time.Until(deadline), minAttempt)
		if t <= 0 || left < t {
			t = left
		}
	}
	if t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	return r.c.DB.Connect(ctx)
}

// stopReason says why a transaction ended when the run's context did: the
// run stopped because the database was lost, or it was interrupted.
func stopReason(ctx context.Context) string {
	var lost *LostError
	if errors.As(context.Cause(ctx), &lost) {
		return "run stopped: the database was lost"
	}
	return "interrupted"
}

// Run executes the plan: one session per plan entry, each on its own
// connection, concurrently; with recording on, every transaction is
// traced (operations and results, status, begin and end instants) and
// written to Out as it finishes. A context that ends stops the sessions:
// a transaction whose COMMIT was in flight is recorded unknown, one not
// yet committing aborted (it never sent COMMIT, so it cannot commit), and
// the history stays complete and valid. Every request waits at most
// AnswerWait(StmtTimeout) for its answer. A session that loses the
// database reconnects with exponential back-off and jitter for up to
// ReconnectFor; if the database does not answer again by then, the run
// stops as if interrupted, with a *LostError in the summary's Errors.
// Run returns an error, and no result, only when a session cannot
// connect at all at the start.
func Run(ctx context.Context, c Config) (*Result, error) {
	if c.DB == nil || c.Plan == nil {
		return nil, errors.New("runner: a database and a plan are required")
	}
	if err := c.DB.Supports(c.Isolation); err != nil {
		return nil, err
	}
	if c.Forget && c.Endless != nil {
		c.Endless.Forget()
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
	switch {
	case c.StmtTimeout == 0:
		r.wait = AnswerWait(DefaultStmtTimeout)
	case c.StmtTimeout > 0:
		r.wait = AnswerWait(c.StmtTimeout)
	}
	switch {
	case c.ReconnectFor == 0:
		r.reconnectFor = DefaultReconnectFor
	case c.ReconnectFor > 0:
		r.reconnectFor = c.ReconnectFor
	}
	r.answerer, _ = c.DB.(db.Answerer)
	n := len(c.Plan.Sessions)
	r.nextLabel.Store(int64(n))
	sessions := make([]*session, n)
	for i := range sessions {
		conn, err := r.connect(ctx, time.Time{})
		if err != nil {
			for _, s := range sessions[:i] {
				_ = s.conn.Close()
			}
			return nil, fmt.Errorf("connecting session %d: %v", i, err)
		}
		sessions[i] = newSession(r, i, conn)
	}

	// A session that cannot get the database back stops the run, and the
	// recorder stops it if it cannot write the history.
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.stop = cancel
	var rec *recorder
	var records chan *record
	recorded := make(chan error, 1)
	if !c.NoTrace {
		records = make(chan *record, 4*n+64)
		rec = newRecorder(c, n)
		go func() {
			err := rec.drain(records, func() { cancel(errHistory) })
			recorded <- err
		}()
	}

	r.clock = newClock()
	if c.Duration > 0 {
		r.deadline = time.Now().Add(c.Duration)
	}
	var wg sync.WaitGroup
	for _, s := range sessions {
		s.lastAnswer = r.clock.baseNS
		s.out = records
		wg.Go(func() { s.run(runCtx) })
	}
	var faults []history.Fault
	nemesisDone := make(chan struct{})
	nemesisCtx, stopNemesis := context.WithCancel(runCtx)
	if c.Nemesis != nil {
		var mu sync.Mutex
		go func() {
			defer close(nemesisDone)
			c.Nemesis(nemesisCtx, r.clock.now, func(f history.Fault) {
				mu.Lock()
				faults = append(faults, f)
				mu.Unlock()
				if records != nil {
					records <- &record{fault: &f}
				}
			})
		}()
	} else {
		close(nemesisDone)
	}
	wg.Wait()
	stopNemesis()
	<-nemesisDone
	elapsed := r.clock.since()

	end := r.clock.now()
	res := &Result{Start: r.clock.baseNS, Faults: faults}
	sum := &res.Summary
	sum.Planned = c.Plan.Len()
	if c.Endless != nil && c.Forget {
		sum.Planned = c.Endless.Drawn()
	}
	sum.Reasons = map[string]int{}
	sum.Elapsed = elapsed
	var gaps []gap
	for _, s := range sessions {
		sum.Done += s.done
		sum.Committed += s.committed
		sum.Aborted += s.aborted
		sum.Unknown += s.unknown
		sum.GaveUp += s.gaveUp
		sum.Reconnects += s.reconnects
		res.Outcomes = append(res.Outcomes, s.outcomes...)
		if !s.lost.IsZero() {
			s.gaps = append(s.gaps, gap{since: s.lostSince, until: end})
		}
		for _, g := range s.gaps {
			g.session = s.idx
			gaps = append(gaps, g)
		}
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
	slices.SortStableFunc(res.Outcomes, func(a, b txnend.Record) int { return cmp.Compare(a.End, b.End) })
	sum.Outages = mergeGaps(gaps, r.clock.baseNS)
	sum.Interrupted = ctx.Err() != nil && sum.Done < sum.Planned
	if rec != nil {
		close(records)
		if err := <-recorded; err != nil {
			sum.Errors = append(sum.Errors, fmt.Errorf("writing the history: %w", err))
		}
		res.History, res.Recorded = rec.h, rec.n
		sum.Foreign = ForeignReads(rec.h)
	}
	return res, nil
}

// errHistory is why the recorder stops a run.
var errHistory = errors.New("the history cannot be written")

// gap is one session's time without an answer from the database: from
// its last answer before it lost the connection until its first answer
// after (until the end of the run, if none came), in clock instants.
type gap struct {
	since, until int64
	recovered    bool
	session      int
}

// mergeGaps merges the sessions' gaps that overlap into outages, relative
// to base.
func mergeGaps(gaps []gap, base int64) []Outage {
	slices.SortFunc(gaps, func(a, b gap) int { return cmp.Compare(a.since, b.since) })
	var out []Outage
	var seen map[int]bool
	var until int64
	for _, g := range gaps {
		if len(out) == 0 || g.since > until {
			out = append(out, Outage{Start: time.Duration(g.since - base), Recovered: true})
			seen, until = map[int]bool{}, g.until
		}
		o := &out[len(out)-1]
		until = max(until, g.until)
		o.End = time.Duration(until - base)
		o.Recovered = o.Recovered && g.recovered
		if !seen[g.session] {
			seen[g.session] = true
			o.Sessions++
		}
	}
	return out
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
