package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/txnend"
	"github.com/isoscope/isoscope/internal/workload"
)

// session is one client: a connection that runs its plan's transactions
// one after another.
type session struct {
	r *run
	// idx is the session's place in the plan; label is its label in the
	// history, which changes when it reconnects.
	idx   int
	label int64
	conn  db.Conn
	out   chan<- *record
	// seq counts the fresh values the session handed out.
	seq int64
	// known holds, for the lwt workload, the value the session last saw
	// at each key.
	known map[int64]history.Value

	done, committed, aborted, unknown, gaveUp, reconnects int
	reasons                                               map[string]int
	// outcomes holds how each of the session's transactions ended.
	outcomes []txnend.Record
	// failures counts consecutive transactions that failed with an error
	// that is neither an abort nor a lost connection.
	failures int
	err      error

	// lastAnswer is the instant of the database's last answer (clock
	// time). lost is when the session noticed it had lost the database,
	// zero while it has it, and lostSince the last answer before that;
	// gaps are the session's past outages.
	lastAnswer int64
	lost       time.Time
	lostSince  int64
	gaps       []gap
	// timedOut says a request of the current transaction got no answer
	// in time.
	timedOut bool
	// fenced says the session committed a fence, under label fenceLabel;
	// fenceSince counts its workload transactions since (fenceDue).
	fenced     bool
	fenceLabel int64
	fenceSince int
}

// isFence says pt is the plan's fence (its operations on the fence key).
func (s *session) isFence(pt *workload.Txn) bool {
	return len(pt.Ops) > 0 && pt.Ops[0].Key == s.r.c.Plan.Config.FenceKey()
}

// maxFailures is how many transactions in a row may fail with unexpected
// errors before the session gives up: a broken schema or a missing
// privilege fails every transaction.
const maxFailures = 20

func newSession(r *run, idx int, conn db.Conn) *session {
	s := &session{r: r, idx: idx, label: int64(idx), known: map[int64]history.Value{}, reasons: map[string]int{}}
	s.conn = &timedConn{Conn: conn, s: s}
	return s
}

// answered notes an answer from the database: it ends the session's
// outage, if it had one.
func (s *session) answered() {
	now := s.r.clock.now()
	s.lastAnswer = now
	if !s.lost.IsZero() {
		s.gaps = append(s.gaps, gap{since: s.lostSince, until: now, recovered: true})
		s.lost = time.Time{}
		s.r.progress.Reconnecting.Add(-1)
	}
}

// fresh returns a value no other write of the run uses: the sessions
// interleave their counters.
func (s *session) fresh() int64 {
	s.seq++
	return s.seq*int64(len(s.r.c.Plan.Sessions)) + int64(s.idx) + 1
}

// run executes the session's plan until it ends, the context ends, or
// the database cannot be reached.
func (s *session) run(ctx context.Context) {
	next := s.r.c.Plan.Txn
	if s.r.c.Endless != nil {
		next = s.r.c.Endless.Txn
	}
	for i := 0; ; i++ {
		if !s.r.deadline.IsZero() && !time.Now().Before(s.r.deadline) {
			return
		}
		pt := next(s.idx, i)
		if pt == nil {
			return
		}
		if _, ok := s.runTxn(ctx, pt); !ok {
			return
		}
		s.fenceSince++
	}
}

// fenceDue says whether the session runs a fence before its next attempt
// at a workload transaction: with fences on, when it has committed none
// under its current label (its first transaction, and the first after a
// reconnection, which makes it a new session of the history), or has run
// FenceEvery workload transactions since its last.
func (s *session) fenceDue() bool {
	every := s.r.c.Plan.Config.FenceEvery
	return every > 0 && (!s.fenced || s.fenceLabel != s.label || s.fenceSince >= every)
}

// runFence runs a fence until one commits under the session's label or
// the run's retries run out; ok as runTxn's.
func (s *session) runFence(ctx context.Context) bool {
	fence := s.r.c.Plan.Config.Fence()
	committed, ok := s.runTxn(ctx, &fence)
	if ok && committed {
		s.fenced, s.fenceLabel, s.fenceSince = true, s.label, 0
	}
	return ok
}

// runTxn runs pt, retrying it when the database aborts it (up to the
// run's retries), and counts it done. ok is false when the session must
// stop (the context ended, the database was lost for good, or too many
// transactions failed); committed says pt committed.
func (s *session) runTxn(ctx context.Context, pt *workload.Txn) (committed, ok bool) {
	fence := s.r.c.Plan.Config.FenceEvery > 0 && s.isFence(pt)
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return false, false
		}
		if !fence && s.fenceDue() {
			if !s.runFence(ctx) {
				return false, false
			}
			if ctx.Err() != nil {
				return false, false
			}
		}
		status, class, why, err := s.attempt(ctx, pt)
		committed = status == history.Committed
		if class == db.Disconnected && ctx.Err() == nil {
			if !s.reconnect(ctx, why) {
				return false, false
			}
		}
		if class == db.Failed && status == history.Aborted {
			s.failures++
			if s.failures >= maxFailures {
				s.err = fmt.Errorf("session %d: %d transactions in a row failed; the last: %v", s.idx, s.failures, err)
				return false, false
			}
		} else {
			s.failures = 0
		}
		if status != history.Aborted {
			break
		}
		if class == db.Interrupted || ctx.Err() != nil {
			return false, false
		}
		if attempt >= s.r.retries {
			s.gaveUp++
			break
		}
	}
	s.done++
	// Done first: a progress display that reads Committed before Done
	// never shows more committed than done.
	s.r.progress.Done.Add(1)
	if committed {
		s.r.progress.Committed.Add(1)
	}
	return committed, true
}

// reconnect replaces a broken connection, lost for the reason why. The
// session goes on under a new label: its last transaction may still
// commit on the old connection after the new connection's first one
// began, so session order between them is not guaranteed. It tries at
// once, then with exponential back-off and jitter, until the run's
// ReconnectFor has passed since the session noticed the loss (a new
// connection that breaks before its first answer does not restart the
// clock); then it gives up and stops the run.
func (s *session) reconnect(ctx context.Context, why string) bool {
	_ = s.conn.Discard()
	s.conn = nil
	if s.lost.IsZero() {
		s.lost, s.lostSince = time.Now(), s.lastAnswer
		s.r.progress.Reconnecting.Add(1)
	}
	deadline := s.lost.Add(s.r.reconnectFor)
	b := backoff.ExponentialBackOff{InitialInterval: reconnectFirst, RandomizationFactor: reconnectJitter, Multiplier: 2, MaxInterval: reconnectMax}
	b.Reset()
	var err error
	for {
		var c db.Conn
		if c, err = s.r.connect(ctx, deadline); err == nil {
			s.conn = &timedConn{Conn: c, s: s}
			s.label = s.r.nextLabel.Add(1) - 1
			s.reconnects++
			return true
		}
		left := time.Until(deadline)
		if ctx.Err() != nil {
			return false
		}
		if left <= 0 {
			break
		}
		t := time.NewTimer(min(b.NextBackOff(), left))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	s.err = &LostError{Session: s.idx, Reason: why, For: s.r.reconnectFor, Err: err}
	s.r.stop(s.err)
	return false
}

// attempt runs one transaction of the plan and records it. It returns the
// transaction's status, and for a failure the error's class, why the
// connection was lost (when the class is Disconnected) and the error. A request that got no answer in time, and a COMMIT that
// failed without the server's answer, lose the connection; a COMMIT that
// lost its connection, or was in flight when the run ended, is unknown.
func (s *session) attempt(ctx context.Context, pt *workload.Txn) (history.Status, db.ErrorClass, string, error) {
	var rec *record
	if s.out != nil {
		rec = &record{session: s.label, ops: make([]history.Op, 0, len(pt.Ops)+1)}
	}
	c := s.conn
	s.timedOut = false
	if tc, ok := c.(*timedConn); ok {
		if rt, ok := tc.Conn.(db.ReadRouter); ok {
			rt.RouteReadOnly(!pt.Writes())
		}
	}
	begin := s.r.clock.now()
	err := c.Begin(ctx, s.r.c.Isolation)
	for i := 0; err == nil && i < len(pt.Ops); i++ {
		err = s.do(ctx, &pt.Ops[i], rec)
	}
	committing := false
	if err == nil {
		if err = ctx.Err(); err == nil {
			committing = true
			err = c.Commit(ctx)
		}
	}
	end := s.r.clock.now()
	status, class, why, abort := history.Committed, db.ErrorClass(0), "", txnend.NotAborted
	// lostWhy is why the connection was lost, when it was: the failed
	// statement's reason, or the failed rollback's.
	lostWhy := ""
	if err != nil {
		class, why = s.r.c.DB.Classify(err)
		switch {
		case ctx.Err() != nil && class != db.Aborted:
			class, why = db.Interrupted, stopReason(ctx)
		case s.timedOut:
			class, why = db.Disconnected, fmt.Sprintf("no answer within %s", s.r.wait)
		case committing && class == db.Failed && !s.r.answered(err):
			// The COMMIT failed, but the server did not say so: it may
			// have committed.
			class, why = db.Disconnected, "connection lost: "+why
		}
		abort = ClassifyAbort(class, why)
		if s.timedOut && class == db.Disconnected {
			abort = txnend.NoAnswer
		}
		status = history.Aborted
		if committing && (class == db.Disconnected || class == db.Interrupted) {
			status = history.Unknown
		}
		if class != db.Disconnected && !committing {
			if rbErr := s.rollback(ctx); rbErr != nil && class != db.Interrupted {
				// The connection broke after the statement failed: the
				// session reconnects, and says why with the rollback's
				// error.
				class, err = db.Disconnected, rbErr
				_, lostWhy = s.r.c.DB.Classify(rbErr)
				if s.timedOut {
					lostWhy = fmt.Sprintf("no answer within %s", s.r.wait)
				}
			}
		}
		s.reasons[why]++
		if lostWhy == "" {
			lostWhy = why
		}
	}
	switch status {
	case history.Committed:
		s.committed++ // the progress counts it once the transaction is done
	case history.Aborted:
		s.aborted++
		s.r.progress.Aborted.Add(1)
	default:
		s.unknown++
		s.r.progress.Unknown.Add(1)
	}
	if !s.r.c.Forget {
		s.outcomes = append(s.outcomes, txnend.Record{Begin: begin, End: end, Status: status, Abort: abort})
	}
	if rec != nil {
		rec.status, rec.begin, rec.end = status, begin, end
		if ts, ok := c.(db.Timestamper); ok && status == history.Committed {
			rec.startTS, rec.commitTS, rec.hasTS = ts.Timestamps()
		}
		s.out <- rec
	}
	return status, class, lostWhy, err
}

// rollback ends a failed transaction; it outlives an ended context for a
// moment so that the server is not left holding locks.
func (s *session) rollback(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return s.conn.Rollback(rctx)
}
