package db_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/testservice"
)

// TestPostgresSerializableCommitRace replays, with isoscope's own
// list-append SQL on three connections, the serializability violation
// that TestPostgresSerializable/list-append ran into on PostgreSQL 15.20
// (docs/databases.md, "PostgreSQL SERIALIZABLE: a commit race in SSI"):
//
//	B (the pivot) reads key 0; A appends to key 0 (B -rw-> A);
//	B appends to key 1; A commits;
//	C appends to key 0 after A (A -ww-> C); B commits;
//	C reads key 1 without B's append (C -rw-> B); C commits.
//
// In the ordinary interleaving SSI sees the dangerous structure
// C -rw-> B -rw-> A with A committed first and aborts C. When A's backend
// is held inside its COMMIT after its commit became visible
// (ProcArrayEndTransaction) and before SSI marks it committed
// (ReleasePredicateLocks) while C starts and B commits, all three commit:
// B's commit no longer records that its rw-antidependency points to a
// transaction that committed first, A's then drops that antidependency,
// and nothing is left to catch C. The held commit is what load does now
// and then on a machine with few cores; here gdb holds it (a breakpoint on
// ReleasePredicateLocks in A's backend), so the test skips that part where
// gdb is missing or may not attach to the server's processes.
func TestPostgresSerializableCommitRace(t *testing.T) {
	addr := testservice.Postgres(t)
	t.Run("ordinary", func(t *testing.T) {
		r := newCommitRace(t, addr)
		r.first(t)
		mustRace(t, r.a.Commit(r.ctx))
		r.second(t)
		mustRace(t, r.b.Commit(r.ctx))
		l, err := r.c.ReadList(r.ctx, 1)
		if err == nil {
			err = r.c.Commit(r.ctx)
		}
		if class, why := r.d.Classify(err); class != db.Aborted || !strings.Contains(why, "40001") {
			t.Fatalf("C read key 1 = %v and committed with %v (%s); PostgreSQL's SSI aborts C with a serialization failure", l, err, why)
		}
		_ = r.c.Rollback(r.ctx)
	})
	t.Run("held-commit", func(t *testing.T) {
		gdb, err := exec.LookPath("gdb")
		if err != nil {
			testservice.Unavailable(t, "gdb is not installed (Debian package gdb; .ci/run installs it): it holds a backend inside its COMMIT")
		}
		r := newCommitRace(t, addr)
		r.first(t)
		pid := r.pidA(t)
		release := holdBeforeReleasePredicateLocks(t, gdb, pid, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = r.a.Rollback(ctx)
		})
		aDone := make(chan error, 1)
		go func() { aDone <- r.a.Commit(r.ctx) }()
		release.held(t)
		// A's commit is visible, and SSI does not know it yet.
		r.second(t)
		mustRace(t, r.b.Commit(r.ctx))
		release.done(t)
		mustRace(t, <-aDone)
		cRead, err := r.c.ReadList(r.ctx, 1)
		mustRace(t, err)
		if err := r.c.Commit(r.ctx); err != nil {
			t.Fatalf("C's commit failed (%v): SSI caught the dangerous structure; PostgreSQL 15.20 commits it", err)
		}
		mustRace(t, r.b.Begin(r.ctx, db.Serializable))
		final0, err := r.b.ReadList(r.ctx, 0)
		mustRace(t, err)
		final1, err := r.b.ReadList(r.ctx, 1)
		mustRace(t, err)
		mustRace(t, r.b.Commit(r.ctx))
		if !reflect.DeepEqual(r.bRead, []int64{1}) || !reflect.DeepEqual(cRead, []int64{2}) ||
			!reflect.DeepEqual(final0, []int64{1, 10, 30}) || !reflect.DeepEqual(final1, []int64{2, 20}) {
			t.Fatalf("B read key 0 = %v, C read key 1 = %v, finally key 0 = %v and key 1 = %v; want [1], [2], [1 10 30], [2 20]",
				r.bRead, cRead, final0, final1)
		}
		// What the clients saw, as isoscope records it: no serial order.
		h := fmt.Sprintf(`{"format":"isoscope-history","version":1,"unique_values":true}
{"id":"init","session":9,"ops":[["append",0,1],["append",1,2]]}
{"id":"A","session":0,"ops":[["append",0,10]]}
{"id":"B","session":1,"ops":[["r",0,%s],["append",1,20]]}
{"id":"C","session":2,"ops":[["append",0,30],["r",1,%s]]}
{"id":"final","session":9,"ops":[["r",0,%s],["r",1,%s]]}
`, raceList(r.bRead), raceList(cRead), raceList(final0), raceList(final1))
		if got := raceVerdict(t, h, "ser"); got.Outcome != check.Violated {
			t.Errorf("ser: %s, want a violation (the cycle A -ww-> C -rw-> B -rw-> A)", got.Outcome)
		}
		if got := raceVerdict(t, h, "si"); got.Outcome != check.Satisfied {
			t.Errorf("si: %s, want it to hold", got.Outcome)
		}
	})
}

// commitRace is the three transactions of TestPostgresSerializableCommitRace
// on a fresh table holding key 0 = [1] and key 1 = [2]. A's connection
// has an application name of its own, so that its backend can be found.
type commitRace struct {
	ctx     context.Context
	d       db.Database
	a, b, c db.Conn
	admin   *sql.DB
	app     string
	bRead   []int64
}

func newCommitRace(t *testing.T, addr string) *commitRace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	r := &commitRace{ctx: ctx, d: testservice.Open(t, addr), app: testservice.Table()}
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", r.app)
	u.RawQuery = q.Encode()
	dA, err := db.Open(ctx, u.String(), r.d.Table())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dA.Close() })
	if r.admin, err = sql.Open("pgx", addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.admin.Close() })
	for _, c := range []*db.Conn{&r.a, &r.b, &r.c} {
		from := r.d
		if c == &r.a {
			from = dA
		}
		if *c, err = from.Connect(ctx); err != nil {
			t.Fatal(err)
		}
		conn := *c
		t.Cleanup(func() { _ = conn.Close() })
	}
	mustRace(t, r.b.Begin(ctx, db.Serializable))
	mustRace(t, r.b.Append(ctx, 0, 1))
	mustRace(t, r.b.Append(ctx, 1, 2))
	mustRace(t, r.b.Commit(ctx))
	return r
}

// first runs the steps before A's COMMIT: B reads key 0, A appends 10 to
// it, B appends 20 to key 1.
func (r *commitRace) first(t *testing.T) {
	t.Helper()
	mustRace(t, r.b.Begin(r.ctx, db.Serializable))
	var err error
	r.bRead, err = r.b.ReadList(r.ctx, 0)
	mustRace(t, err)
	mustRace(t, r.a.Begin(r.ctx, db.Serializable))
	mustRace(t, r.a.Append(r.ctx, 0, 10))
	mustRace(t, r.b.Append(r.ctx, 1, 20))
}

// second starts C after A's commit is visible: C appends 30 to key 0.
func (r *commitRace) second(t *testing.T) {
	t.Helper()
	mustRace(t, r.c.Begin(r.ctx, db.Serializable))
	mustRace(t, r.c.Append(r.ctx, 0, 30))
}

// pidA returns the process id of A's backend.
func (r *commitRace) pidA(t *testing.T) int {
	t.Helper()
	var pid int
	err := r.admin.QueryRowContext(r.ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", r.app).Scan(&pid)
	if err != nil {
		t.Fatalf("finding A's backend: %v", err)
	}
	return pid
}

// hold is a backend that gdb stops on its way through COMMIT.
type hold struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser
	// exited is closed when gdb has exited, err its exit status.
	exited chan struct{}
	err    error
}

// holdBeforeReleasePredicateLocks attaches gdb to the backend pid and sets
// a breakpoint on ReleasePredicateLocks, which a committing transaction
// reaches after ProcArrayEndTransaction has made its commit visible and
// before SSI marks it committed. It skips the test if gdb cannot attach.
// end ends the backend's transaction, if the test fails before it does.
func holdBeforeReleasePredicateLocks(t *testing.T, gdb string, pid int, end func()) *hold {
	t.Helper()
	// Not CommandContext: gdb must never be killed while its breakpoint
	// is in the backend, which would then die of SIGTRAP and take the
	// server through crash recovery. It detaches (see the cleanup).
	cmd := exec.Command(gdb, "-q", "-nx", "-batch", "-p", strconv.Itoa(pid),
		"-ex", "set debuginfod enabled off",
		"-ex", "break ReleasePredicateLocks",
		"-ex", "shell echo ATTACHED",
		"-ex", "continue",
		// The backend is stopped at the breakpoint: say so, and wait for a
		// line on standard input before letting it go on.
		"-ex", "shell echo HELD; read go",
		"-ex", "detach",
		"-ex", "quit")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		testservice.Unavailable(t, fmt.Sprintf("gdb does not start: %v", err))
	}
	h := &hold{cmd: cmd, lines: make(chan string, 16), stdin: stdin, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
		h.err = cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		// A test that failed half-way leaves gdb holding the backend or
		// waiting for it to reach the breakpoint. The end of gdb's input
		// lets a held backend go; ending its transaction brings a running
		// one to the breakpoint. Either way gdb then detaches, removing
		// its breakpoint, and quits.
		_ = stdin.Close()
		go end()
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("gdb does not quit; backend %d may still be stopped", pid)
		}
	})
	if !h.await("ATTACHED") {
		<-h.exited
		testservice.Unavailable(t, fmt.Sprintf("gdb cannot attach to the backend %d (root or CAP_SYS_PTRACE is needed): %v %s", pid, h.err, stderr.String()))
	}
	return h
}

// await reads gdb's output until a line says what; false if gdb ends first.
func (h *hold) await(what string) bool {
	for l := range h.lines {
		if strings.TrimSpace(l) == what {
			return true
		}
	}
	return false
}

// held waits until the backend is stopped at the breakpoint.
func (h *hold) held(t *testing.T) {
	t.Helper()
	if !h.await("HELD") {
		<-h.exited
		t.Fatalf("gdb ended before the backend reached ReleasePredicateLocks: %v", h.err)
	}
}

// done lets the backend go on and waits for gdb to detach.
func (h *hold) done(t *testing.T) {
	t.Helper()
	if _, err := h.stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	for range h.lines {
	}
	<-h.exited
	if h.err != nil {
		t.Fatalf("gdb: %v", h.err)
	}
}

func mustRace(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// raceList renders a list read as the history format has it.
func raceList(l []int64) string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = strconv.FormatInt(e, 10)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// raceVerdict checks the history text h at level name.
func raceVerdict(t *testing.T, h, name string) check.Result {
	t.Helper()
	hist, err := native.Read(strings.NewReader(h), "race")
	if err != nil {
		t.Fatal(err)
	}
	l, err := level.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := check.Run(ctx, hist, l, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
