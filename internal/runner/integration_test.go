package runner

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/workload"
)

// The integration tests run workloads against the machine's PostgreSQL 15
// and MariaDB 10.11 (docs/services.md) and assert what those
// databases promise — and, where they promise less than serializability,
// that the checkers find the difference within a bounded number of runs.
// Each run takes a second or two; the whole file about 30 s.

// maxRuns bounds the runs a test may need to expose an anomaly.
const maxRuns = 5

// contended is a mini-transaction workload on few keys with many
// sessions: write skews on PostgreSQL's REPEATABLE READ, lost updates on
// InnoDB's.
var contended = workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 1000, Keys: 4, Dist: workload.Uniform}

// runOn runs plan config pc once on a fresh table of the database at addr
// and returns the history, which it checks is complete and valid.
func runOn(t *testing.T, addr string, iso db.Isolation, pc workload.PlanConfig, seed uint64) (*history.History, Summary) {
	t.Helper()
	d := testservice.Open(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, h := runRecorded(t, ctx, Config{DB: d, Isolation: iso, Plan: newPlan(t, pc, seed)})
	if s := res.Summary; s.Done != s.Planned || len(s.Errors) > 0 || s.Unknown > 0 {
		t.Fatalf("run ended badly: %+v", s)
	}
	return h, res.Summary
}

// holds runs and asserts that every level holds.
func holds(t *testing.T, addr string, iso db.Isolation, pc workload.PlanConfig, levels ...string) {
	t.Helper()
	h, s := runOn(t, addr, iso, pc, 1)
	t.Logf("%d committed, %.0f%% aborted", s.Committed, 100*s.AbortRate())
	for _, l := range levels {
		if r := verdict(t, h, l); r.Outcome != check.Satisfied {
			t.Errorf("%s at %s: %s (checker %s):\n%s\nthe history: %s", l, iso, r.Outcome, r.Checker, describe(h, r), keep(t, h))
		}
	}
}

// keep writes a history whose verdict failed a test where it outlives the
// test, for investigation, and returns its path.
func keep(t *testing.T, h *history.History) string {
	f, err := os.CreateTemp("", "isoscope-failed-*.jsonl")
	if err != nil {
		return "not kept: " + err.Error()
	}
	defer f.Close()
	if err := native.Write(f, h); err != nil {
		return "not kept: " + err.Error()
	}
	return f.Name()
}

// violatedWithin runs up to maxRuns times until level is violated, and
// asserts every run satisfies the levels in still.
func violatedWithin(t *testing.T, addr string, iso db.Isolation, pc workload.PlanConfig, level string, still ...string) {
	t.Helper()
	for run := 1; run <= maxRuns; run++ {
		h, _ := runOn(t, addr, iso, pc, uint64(run))
		for _, l := range still {
			if r := verdict(t, h, l); r.Outcome != check.Satisfied {
				t.Errorf("run %d: %s at %s: %s:\n%s", run, l, iso, r.Outcome, describe(h, r))
			}
		}
		if r := verdict(t, h, level); r.Outcome == check.Violated {
			t.Logf("run %d: %s violated: %s", run, level, describe(h, r))
			return
		}
	}
	t.Errorf("%s at %s: no violation of %s in %d runs", pc.Workload, iso, level, maxRuns)
}

// describe renders a result's anomalies by kind with one example chain.
func describe(h *history.History, r check.Result) string {
	var b strings.Builder
	for kind, n := range r.Kinds() {
		b.WriteString(kind.String() + " ×" + strconv.Itoa(n) + " ")
	}
	for _, a := range r.Anomalies {
		if a.IsCycle() {
			b.WriteString("e.g. " + report.Chain(h, a.Cycle))
			break
		}
	}
	return b.String()
}

func TestPostgresSerializable(t *testing.T) {
	addr := testservice.Postgres(t)
	t.Run("mt", func(t *testing.T) {
		holds(t, addr, db.Serializable, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 2000, Keys: 20, Dist: workload.Zipfian}, "ser", "si")
	})
	t.Run("general", func(t *testing.T) {
		holds(t, addr, db.Serializable, workload.PlanConfig{Workload: workload.General, Sessions: 8, Txns: 400, Keys: 200, Dist: workload.Uniform}, "ser")
	})
	t.Run("list-append", func(t *testing.T) {
		siHoldsSERRace(t, addr, workload.PlanConfig{Workload: workload.ListAppend, Sessions: 8, Txns: 1000, Keys: 10, Dist: workload.Zipfian})
	})
}

// siHoldsSERRace runs pc once on PostgreSQL's SERIALIZABLE and asserts
// that snapshot isolation holds. Serializability is checked too, but a
// violation is logged with its cycle and the kept history, not failed:
// PostgreSQL 15's SSI commits a dangerous structure when the transaction
// that commits first is still inside its COMMIT (visible to new
// snapshots, not yet marked committed for SSI) while the pivot commits —
// docs/databases.md, "PostgreSQL SERIALIZABLE: a commit race in SSI", and
// internal/db's TestPostgresSerializableCommitRace, which replays it. The
// contended list-append workload meets that window in a few runs in a
// hundred on a 2-core machine (3 of 80). Snapshot isolation still holds
// then, so every such cycle has two consecutive anti-dependencies, as the
// race's have.
func siHoldsSERRace(t *testing.T, addr string, pc workload.PlanConfig) {
	t.Helper()
	h, s := runOn(t, addr, db.Serializable, pc, 1)
	t.Logf("%d committed, %.0f%% aborted", s.Committed, 100*s.AbortRate())
	if r := verdict(t, h, "si"); r.Outcome != check.Satisfied {
		t.Errorf("si at serializable: %s (checker %s):\n%s\nthe history: %s", r.Outcome, r.Checker, describe(h, r), keep(t, h))
	}
	switch r := verdict(t, h, "ser"); r.Outcome {
	case check.Satisfied:
	case check.Violated:
		t.Logf("ser at serializable VIOLATED, the SSI commit race of docs/databases.md: %s\nthe history: %s", describe(h, r), keep(t, h))
	default:
		t.Errorf("ser at serializable: %s (checker %s)", r.Outcome, r.Checker)
	}
}

func TestPostgresRepeatableRead(t *testing.T) {
	violatedWithin(t, testservice.Postgres(t), db.RepeatableRead, contended, "ser", "si")
}

func TestMariaDBSerializable(t *testing.T) {
	addr := testservice.MySQL(t)
	t.Run("mt", func(t *testing.T) {
		// 6 sessions: with 14 or 16 on this 2-core machine InnoDB's
		// SERIALIZABLE (shared read locks upgraded by the writes) falls,
		// some runs, into a deadlock livelock — 98% of the attempts
		// deadlock and 4 transactions a second commit — and the run
		// cannot finish in its minute (docs/databases.md).
		holds(t, addr, db.Serializable, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 6, Txns: 2000, Keys: 20, Dist: workload.Zipfian}, "ser", "si")
	})
	t.Run("general", func(t *testing.T) {
		holds(t, addr, db.Serializable, workload.PlanConfig{Workload: workload.General, Sessions: 8, Txns: 400, Keys: 200, Dist: workload.Uniform}, "ser")
	})
}

func TestMariaDBRepeatableRead(t *testing.T) {
	violatedWithin(t, testservice.MySQL(t), db.RepeatableRead, contended, "si", "rc")
}

func TestReadCommitted(t *testing.T) {
	pc := workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 1000, Keys: 10, Dist: workload.Zipfian}
	t.Run("postgres", func(t *testing.T) { holds(t, testservice.Postgres(t), db.ReadCommitted, pc, "rc") })
	t.Run("mariadb", func(t *testing.T) { holds(t, testservice.MySQL(t), db.ReadCommitted, pc, "rc") })
}

// TestPostgresTerminatedBackends terminates every session's backend in
// the middle of a run (pg_terminate_backend from another connection): the
// sessions reconnect under new labels, transactions in flight are
// recorded aborted or unknown, and the history is still serializable.
func TestPostgresTerminatedBackends(t *testing.T) {
	app := testservice.Table()
	u, err := url.Parse(testservice.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	d := testservice.Open(t, u.String())
	admin, err := sql.Open("pgx", testservice.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var terminated atomic.Int64
	hook := func(n int) {
		if n == 500 || n == 1500 {
			var k int64
			err := admin.QueryRow("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&k)
			if err != nil {
				t.Error(err)
			}
			terminated.Add(k)
		}
	}
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 8, Txns: 3000, Keys: 50, Dist: workload.Zipfian}, 7)
	res, h := runRecorded(t, context.Background(), Config{DB: d, Isolation: db.Serializable, Plan: p, Hook: hook})
	s := res.Summary
	t.Logf("terminated %d backends; %+v", terminated.Load(), s)
	if terminated.Load() < 8 || s.Reconnects < 8 || len(s.Errors) > 0 || s.Done != s.Planned {
		t.Fatalf("terminated %d backends: summary %+v", terminated.Load(), s)
	}
	if len(h.Sessions) < 9 {
		t.Errorf("%d session labels: the reconnected sessions should have new ones", len(h.Sessions))
	}
	if r := verdict(t, h, "ser"); r.Outcome != check.Satisfied {
		t.Errorf("ser: %s: %s", r.Outcome, describe(h, r))
	}
}
