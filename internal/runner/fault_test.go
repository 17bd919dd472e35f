package runner

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/txnend"
	"github.com/isoscope/isoscope/internal/workload"
)

var (
	errLost  = errors.New("injected: connection lost")
	errAbort = errors.New("injected: serialization failure")
)

// faultDB wraps a database and injects faults into its connections.
type faultDB struct {
	db.Database
	mu sync.Mutex
	// commits and writes count calls over all connections.
	commits, writes int
	// lostAfterCommit makes every n-th COMMIT commit and then report a
	// lost connection; abortWrite makes every n-th write fail aborted.
	lostAfterCommit, abortWrite int
	// gone makes every statement and every Connect fail.
	gone atomic.Bool
	// block makes the connection numbered blockCommit block in COMMIT,
	// and blockWrite in a write, until the context ends.
	block                   atomic.Bool
	blockCommit, blockWrite int
	stalled                 atomic.Int32
	conns                   int
}

func (f *faultDB) Classify(err error) (db.ErrorClass, string) {
	switch {
	case errors.Is(err, errLost):
		return db.Disconnected, "connection lost"
	case errors.Is(err, errAbort):
		return db.Aborted, "injected abort"
	}
	return f.Database.Classify(err)
}

func (f *faultDB) Connect(ctx context.Context) (db.Conn, error) {
	if f.gone.Load() {
		return nil, errors.New("injected: connection refused")
	}
	c, err := f.Database.Connect(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conns++
	return &faultConn{Conn: c, f: f, n: f.conns - 1}, nil
}

type faultConn struct {
	db.Conn
	f *faultDB
	n int
}

func (c *faultConn) Begin(ctx context.Context, iso db.Isolation) error {
	if c.f.gone.Load() {
		return errLost
	}
	return c.Conn.Begin(ctx, iso)
}

// stall releases the transaction's locks and waits for the end of ctx.
func (c *faultConn) stall(ctx context.Context) error {
	_ = c.Conn.Rollback(context.Background())
	c.f.stalled.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

func (c *faultConn) Write(ctx context.Context, k, v int64) error {
	if c.f.gone.Load() {
		return errLost
	}
	if c.f.block.Load() && c.n == c.f.blockWrite {
		return c.stall(ctx)
	}
	c.f.mu.Lock()
	c.f.writes++
	n := c.f.writes
	c.f.mu.Unlock()
	if c.f.abortWrite > 0 && n%c.f.abortWrite == 0 {
		return errAbort
	}
	return c.Conn.Write(ctx, k, v)
}

func (c *faultConn) Commit(ctx context.Context) error {
	if c.f.gone.Load() {
		return errLost
	}
	if c.f.block.Load() && c.n == c.f.blockCommit {
		return c.stall(ctx)
	}
	c.f.mu.Lock()
	c.f.commits++
	n := c.f.commits
	c.f.mu.Unlock()
	if err := c.Conn.Commit(ctx); err != nil {
		return err
	}
	if c.f.lostAfterCommit > 0 && n%c.f.lostAfterCommit == 0 {
		return errLost
	}
	return nil
}

// TestUnknownAndRetries injects commits whose acknowledgement is lost and
// writes the database aborts: the first are recorded unknown (and, being
// committed and read by others, take effect), the sessions reconnect
// under new labels, and aborted transactions are retried with new values.
func TestUnknownAndRetries(t *testing.T) {
	f := &faultDB{Database: sqlite(t), lostAfterCommit: 50, abortWrite: 37}
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 4, Txns: 800, Keys: 8, Dist: workload.Zipfian}, 4)
	res, h := runRecorded(t, context.Background(), Config{DB: f, Isolation: db.Serializable, Plan: p})
	s := res.Summary
	st := h.Stats()
	if s.Unknown == 0 || st.Unknown != s.Unknown || s.Reconnects != s.Unknown || s.Aborted == 0 || st.Aborted != s.Aborted {
		t.Fatalf("summary %+v, history %+v", s, st)
	}
	if s.Reasons["connection lost"] != s.Unknown || s.Reasons["injected abort"] != s.Aborted {
		t.Errorf("reasons %v", s.Reasons)
	}
	if len(h.Sessions) <= 4 || len(h.Sessions) > 4+s.Reconnects {
		t.Errorf("%d sessions in the history, want more than 4 and at most 4 + %d reconnected", len(h.Sessions), s.Reconnects)
	}
	// Each unknown transaction ends its session label: the next
	// transaction of that session runs under a new one.
	last := map[int32]history.Status{}
	for i := range h.Txns {
		if st, ok := last[h.Txns[i].Session]; ok && st == history.Unknown {
			t.Fatalf("transaction %s follows an unknown one in session %s", h.Txns[i].ID, h.Sessions[h.Txns[i].Session])
		}
		last[h.Txns[i].Session] = h.Txns[i].Status
	}
	// The outcomes are the history's transactions, in the order they
	// ended, each with its abort class.
	checkOutcomes(t, res, h)
	classes := map[txnend.AbortClass]int{}
	for _, o := range res.Outcomes {
		classes[o.Abort]++
	}
	if classes[txnend.ConnectionLost] != s.Unknown || classes[txnend.OtherAbort] != s.Aborted || classes[txnend.NotAborted] != s.Committed {
		t.Errorf("abort classes %v", classes)
	}
	// The history reads back with its unique-values promise verified (so
	// retries wrote new values), and is serializable: the unknown
	// transactions that others read count as committed.
	if r := verdict(t, h, "ser"); r.Outcome != check.Satisfied {
		t.Errorf("ser: %s: %v", r.Outcome, r.Anomalies)
	}
}

// TestInterruptMarksInFlight interrupts a run while one session waits for
// its COMMIT and another for a write: the first transaction is recorded
// unknown, the second aborted, and the history is complete.
func TestInterruptMarksInFlight(t *testing.T) {
	f := &faultDB{Database: sqlite(t), blockCommit: 0, blockWrite: 1}
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 4, Txns: 100000, Keys: 50, ReadRatio: 0.01}, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hook := func(n int) {
		if n == 100 {
			f.block.Store(true)
		}
		if f.stalled.Load() == 2 {
			cancel()
		}
	}
	done := make(chan struct{})
	var res *Result
	var h *history.History
	go func() {
		defer close(done)
		res, h = runRecorded(t, ctx, Config{DB: f, Isolation: db.Serializable, Plan: p, Hook: hook})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop after the interrupt")
	}
	if !res.Summary.Interrupted || res.Summary.Done >= res.Summary.Planned {
		t.Fatalf("summary %+v", res.Summary)
	}
	order := h.SessionOrder()
	lastOf := func(label int) *history.Txn {
		for s, l := range h.Sessions {
			if l == history.IntValue(int64(label)) {
				return &h.Txns[order[s][len(order[s])-1]]
			}
		}
		t.Fatalf("no session %d", label)
		return nil
	}
	if tx := lastOf(0); tx.Status != history.Unknown {
		t.Errorf("session 0 stalled in COMMIT: its last transaction is %s", tx.Status)
	}
	tx := lastOf(1)
	if tx.Status != history.Aborted || len(tx.Ops) == 0 || tx.Ops[len(tx.Ops)-1].Kind != history.Write {
		t.Errorf("session 1 stalled in a write: its last transaction is %s with ops %v", tx.Status, tx.Ops)
	}
	// Sessions 2 and 3 run on; the interrupt may catch one of them in
	// COMMIT too (that transaction is then unknown), but only a session's
	// last transaction can be unknown.
	for s, txns := range order {
		for _, x := range txns[:len(txns)-1] {
			if h.Txns[x].Status == history.Unknown {
				t.Errorf("session %s: transaction %s is unknown but not the last", h.Sessions[s], h.Txns[x].ID)
			}
		}
	}
	if res.Summary.Reasons["interrupted"] < 2 {
		t.Errorf("reasons %v", res.Summary.Reasons)
	}
}

// TestDatabaseGoesAway makes every statement and reconnection fail in
// the middle of a run: the sessions seek the database for ReconnectFor,
// then the run stops with a clear error, and the history of what happened
// until then is complete.
func TestDatabaseGoesAway(t *testing.T) {
	f := &faultDB{Database: sqlite(t)}
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 3, Txns: 100000, Keys: 20}, 6)
	hook := func(n int) {
		if n == 200 {
			f.gone.Store(true)
		}
	}
	start := time.Now()
	const bound = 700 * time.Millisecond
	res, h := runRecorded(t, context.Background(), Config{DB: f, Isolation: db.Serializable, Plan: p, Hook: hook, ReconnectFor: bound})
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("the run took %v to notice", el)
	}
	s := res.Summary
	if len(s.Errors) == 0 || len(s.Errors) > 3 {
		t.Fatalf("%d session errors, want 1 to 3: %v", len(s.Errors), s.Errors)
	}
	for _, err := range s.Errors {
		var lost *LostError
		if !errors.As(err, &lost) || !strings.Contains(err.Error(), "connection lost; could not reconnect within 700ms: injected: connection refused") {
			t.Errorf("session error %q", err)
		}
	}
	// The sessions sought the database for the bound, and the summary
	// shows the outage, not recovered.
	if len(s.Outages) != 1 || s.Outages[0].Recovered || s.Outages[0].Duration() < bound || s.Outages[0].Sessions != 3 {
		t.Errorf("outages %+v", s.Outages)
	}
	if s.Interrupted || len(h.Txns) < 200 || s.Done >= s.Planned {
		t.Errorf("summary %+v with %d transactions", s, len(h.Txns))
	}
	if r := verdict(t, h, "ser"); r.Outcome != check.Satisfied {
		t.Errorf("ser: %s: %v", r.Outcome, r.Anomalies)
	}
}

// TestPostgresGoesAwayMidCommit makes PostgreSQL go away while COMMITs
// are in flight: a deferred constraint trigger makes every COMMIT that
// wrote sleep on the server, and a proxy between the sessions and the
// server then closes every connection and refuses new ones. The run stops
// after ReconnectFor with a clear error, the streamed history reads back complete,
// the transactions whose COMMIT was in flight are recorded unknown (each
// its session's last), and the history is still serializable.
func TestPostgresGoesAwayMidCommit(t *testing.T) {
	addr := testservice.Postgres(t)
	proxy, via := testservice.NewProxy(t, addr)
	table := testservice.Table()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := db.Open(ctx, via, table)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	slow := table + "_slow_commit"
	// The table and the function go through the admin connection (the
	// proxy is cut), before it closes.
	defer func() {
		for _, q := range []string{"DROP TABLE IF EXISTS " + table, "DROP FUNCTION IF EXISTS " + slow + "() CASCADE"} {
			if _, err := admin.Exec(q); err != nil {
				t.Errorf("cleaning up: %v", err)
			}
		}
	}()
	for _, q := range []string{
		"CREATE FUNCTION " + slow + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN NULL; END $$",
		"CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT OR UPDATE ON " + table +
			" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION " + slow + "()",
	} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	const sessions = 6
	hook := func(n int) {
		if n == 150 {
			go proxy.Cut()
		}
	}
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: sessions, Txns: 100000, Keys: 200, ReadRatio: 0.01}, 8)
	start := time.Now()
	res, h := runRecorded(t, context.Background(), Config{DB: d, Isolation: db.Serializable, Plan: p, Hook: hook, ReconnectFor: time.Second})
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("the run took %v to notice", el)
	}
	s, st := res.Summary, h.Stats()
	t.Logf("%d committed, %d aborted, %d unknown; reasons %v; first error: %v", st.Committed, st.Aborted, st.Unknown, s.Reasons, s.Errors[0])
	if len(s.Errors) == 0 || len(s.Errors) > sessions {
		t.Fatalf("%d session errors, want 1 to %d: %v", len(s.Errors), sessions, s.Errors)
	}
	for _, err := range s.Errors {
		if m := err.Error(); !strings.Contains(m, ": connection lost") || !strings.Contains(m, "; could not reconnect within 1s: ") || !strings.Contains(m, "connection refused") {
			t.Errorf("session error %q", err)
		}
	}
	lost := 0
	for why, n := range s.Reasons {
		if strings.HasPrefix(why, "connection lost") {
			lost += n
		}
	}
	if s.Interrupted || s.Done >= s.Planned || st.Committed < 50 {
		t.Errorf("summary %+v, history %+v", s, st)
	}
	if st.Unknown == 0 || st.Unknown != s.Unknown || lost == 0 {
		t.Errorf("no COMMIT in flight recorded unknown: summary %+v, history %+v", s, st)
	}
	for sess, txns := range h.SessionOrder() {
		for i, x := range txns[:len(txns)-1] {
			if h.Txns[x].Status == history.Unknown {
				t.Errorf("session %s: unknown transaction %s is number %d of %d", h.Sessions[sess], h.Txns[x].ID, i+1, len(txns))
			}
		}
	}
	if r := verdict(t, h, "ser"); r.Outcome != check.Satisfied {
		t.Errorf("ser: %s: %s", r.Outcome, describe(h, r))
	}
}
