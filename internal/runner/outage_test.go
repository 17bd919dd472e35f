package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/txnend"
	"github.com/isoscope/isoscope/internal/workload"
)

// errNoAnswer is a COMMIT's failure that is no answer from the server: a
// driver's error after the request was sent.
var errNoAnswer = errors.New("injected: the answer to COMMIT was lost")

// lostAnswerDB commits every n-th COMMIT and then fails it with
// errNoAnswer, which it does not count as the server's answer.
type lostAnswerDB struct {
	db.Database
	n       int64
	commits atomic.Int64
}

func (d *lostAnswerDB) Answered(err error) bool {
	return !errors.Is(err, errNoAnswer) && d.Database.(db.Answerer).Answered(err)
}

func (d *lostAnswerDB) Connect(ctx context.Context) (db.Conn, error) {
	c, err := d.Database.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &lostAnswerConn{Conn: c, d: d}, nil
}

type lostAnswerConn struct {
	db.Conn
	d *lostAnswerDB
}

func (c *lostAnswerConn) Commit(ctx context.Context) error {
	if err := c.Conn.Commit(ctx); err != nil {
		return err
	}
	if c.d.commits.Add(1)%c.d.n == 0 {
		return errNoAnswer
	}
	return nil
}

// TestCommitWithoutAnswerIsUnknown fails COMMITs that did commit with an
// error that is not the server's answer: each is recorded unknown, never
// aborted (others read what it wrote: an aborted one would be an aborted
// read the database never made), the session takes its connection for
// lost and reconnects, and the history is serializable.
func TestCommitWithoutAnswerIsUnknown(t *testing.T) {
	d := &lostAnswerDB{Database: sqlite(t), n: 40}
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 4, Txns: 800, Keys: 8, Dist: workload.Zipfian}, 9)
	res, h := runRecorded(t, context.Background(), Config{DB: d, Isolation: db.Serializable, Plan: p})
	s, st := res.Summary, h.Stats()
	if st.Unknown == 0 || st.Unknown != s.Unknown || s.Reconnects != s.Unknown || st.Aborted != 0 || s.Done != s.Planned {
		t.Fatalf("summary %+v, history %+v", s, st)
	}
	if n := s.Reasons["connection lost: "+errNoAnswer.Error()]; n != s.Unknown {
		t.Errorf("reasons %v", s.Reasons)
	}
	if r := verdict(t, h, "ser"); r.Outcome != check.Satisfied {
		t.Errorf("ser: %s: %s", r.Outcome, describe(h, r))
	}
}

// TestStalledCommitBecomesUnknown makes one connection's COMMIT get no
// answer: after 1.5 times the statement timeout (1 s: SQLite's busy
// handler sleeps up to 100 ms at a time, so shorter waits would also
// catch transactions merely waiting for its lock) the session gives up on
// it, records the transaction unknown (class NoAnswer), reconnects, and
// the run finishes its plan with the gap in its summary.
func TestStalledCommitBecomesUnknown(t *testing.T) {
	f := &faultDB{Database: sqlite(t), blockCommit: 0, blockWrite: -1}
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 3, Txns: 600, Keys: 20, ReadRatio: 0.01}, 10)
	hook := func(n int) {
		if n == 100 {
			f.block.Store(true)
		}
	}
	start := time.Now()
	res, h := runRecorded(t, context.Background(), Config{DB: f, Isolation: db.Serializable, Plan: p, Hook: hook, StmtTimeout: time.Second})
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("the run took %v", el)
	}
	s := res.Summary
	if s.Unknown != 1 || s.Reasons["no answer within 1.5s"] != 1 || s.Done != s.Planned || s.Reconnects != 1 || len(s.Errors) != 0 {
		t.Fatalf("summary %+v", s)
	}
	noAnswer := 0
	for _, o := range res.Outcomes {
		if o.Abort == txnend.NoAnswer {
			noAnswer++
			if o.Status != history.Unknown || time.Duration(o.End-o.Begin) < 1500*time.Millisecond {
				t.Errorf("outcome %+v", o)
			}
		}
	}
	if noAnswer != 1 {
		t.Errorf("%d outcomes without an answer", noAnswer)
	}
	if len(s.Outages) != 1 || !s.Outages[0].Recovered || s.Outages[0].Sessions != 1 || s.Outages[0].Duration() < 1500*time.Millisecond {
		t.Errorf("outages %+v", s.Outages)
	}
	if r := verdict(t, h, "ser"); r.Outcome != check.Satisfied {
		t.Errorf("ser: %s: %s", r.Outcome, describe(h, r))
	}
}

// TestMergeGaps merges the sessions' overlapping gaps into outages.
func TestMergeGaps(t *testing.T) {
	const base = 1000
	ms := func(n int64) int64 { return base + n*int64(time.Millisecond) }
	got := mergeGaps([]gap{
		{since: ms(500), until: ms(900), recovered: true, session: 2},
		{since: ms(100), until: ms(300), recovered: true, session: 0},
		{since: ms(200), until: ms(400), recovered: true, session: 1},
		{since: ms(250), until: ms(280), recovered: true, session: 0},
		{since: ms(600), until: ms(1000), recovered: false, session: 3},
	}, base)
	want := []Outage{
		{Start: 100 * time.Millisecond, End: 400 * time.Millisecond, Sessions: 2, Recovered: true},
		{Start: 500 * time.Millisecond, End: time.Second, Sessions: 2, Recovered: false},
	}
	if len(got) != len(want) {
		t.Fatalf("outages %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("outage %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[1].Duration() != 500*time.Millisecond {
		t.Errorf("duration %v", got[1].Duration())
	}
}
