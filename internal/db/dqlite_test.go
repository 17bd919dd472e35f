package db

import (
	"context"
	sqldriver "database/sql/driver"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/canonical/go-dqlite/driver"

	"github.com/isoscope/isoscope/internal/cluster"
)

func TestParseDqlite(t *testing.T) {
	tg, err := ParseTarget("dqlite://127.0.0.1:9001,127.0.0.1:9002,localhost:9003/bank")
	if err != nil || tg.Kind != Dqlite || len(tg.dqlite.nodes) != 3 || tg.dqlite.nodes[2] != "localhost:9003" || tg.dqlite.database != "bank" {
		t.Fatalf("got %+v, %v", tg, err)
	}
	if tg.Display != "dqlite://127.0.0.1:9001,127.0.0.1:9002,localhost:9003/bank" {
		t.Errorf("display %q", tg.Display)
	}
	if tg, err := ParseTarget("dqlite://127.0.0.1:9001"); err != nil || tg.dqlite.database != DqliteDefaultDatabase {
		t.Fatalf("got %+v, %v", tg, err)
	}
	for _, bad := range []string{"dqlite://", "dqlite:127.0.0.1:9001", "dqlite://127.0.0.1", "dqlite://127.0.0.1:9001,/x",
		"dqlite://127.0.0.1:9001/a/b", "dqlite://u:p@127.0.0.1:9001/x", "dqlite://127.0.0.1:9001/x?timeout=1s"} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: got %v, want an error naming it", bad, err)
		}
	}
}

// TestDqliteAdapter runs the adapter against a real dqlite node
// (Debian's dqlite-demo): it names dqlite and its SQLite, offers only
// serializable, makes a second transaction wait at BEGIN for the first
// one's write lock (dqlite itself would refuse it at once with
// SQLITE_BUSY), and takes a COMMIT whose node died under it for a lost
// connection — unknown, not the server's answer.
func TestDqliteAdapter(t *testing.T) {
	t.Parallel() // it stands up its own node, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := cluster.Up(ctx, cluster.Spec{Kind: cluster.Dqlite, Nodes: 1}, "", nil)
	if err != nil {
		// Package db cannot import testservice (it imports db): its
		// HowToInstall, spelt out.
		if strings.Contains(err.Error(), "(Debian: ") {
			t.Fatalf("%v\ninstall what the tests need with: make setup (scripts/setup.sh)", err)
		}
		t.Fatal(err)
	}
	defer cl.Stop()
	d, err := Open(ctx, cl.DSNs()[0], "dqlite_adapter_test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.Version(ctx); err != nil || !strings.HasPrefix(v, "dqlite (SQLite 3.") {
		t.Errorf("version %q, %v", v, err)
	}
	if d.Supports(Serializable) != nil || d.Supports(RepeatableRead) == nil {
		t.Error("dqlite offers serializable, and only it")
	}
	if err := d.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Begin(ctx, Serializable); err != nil {
		t.Fatal(err)
	}
	if err := a.Write(ctx, 1, 10); err != nil {
		t.Fatal(err)
	}
	began := make(chan error, 1)
	go func() { began <- b.Begin(ctx, Serializable) }()
	select {
	case err := <-began:
		t.Fatalf("a second BEGIN while the first transaction holds the write lock returned %v; want it to wait", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-began; err != nil {
		t.Fatalf("the second BEGIN, once the lock was free: %v", err)
	}
	if got, err := b.Read(ctx, 1); err != nil || len(got) != 1 || got[0] != 10 {
		t.Fatalf("read %v, %v; want [10]", got, err)
	}
	if err := b.Write(ctx, 1, 11); err != nil {
		t.Fatal(err)
	}
	if err := cl.Kill(0); err != nil {
		t.Fatal(err)
	}
	err = b.Commit(ctx)
	if err == nil {
		t.Fatal("a COMMIT on a killed node succeeded")
	}
	class, why := d.Classify(err)
	if class != Disconnected || d.(Answerer).Answered(err) {
		t.Errorf("COMMIT on a killed node: %v, classified %s (%s); want disconnected and not answered", err, class, why)
	}
	_ = a.Discard()
}

// TestClassifyDqlite: dqlite's answers as the driver returns them. A busy
// lock or stale snapshot aborts; code 7 (Raft's RAFT_NOTLEADER, which
// dqlite 1.11 answers a COMMIT with when Raft refuses to replicate it)
// aborts — nothing was committed; SQLITE_IOERR (replication failed,
// leadership lost) and the driver's bad connection are no answer: a
// COMMIT that gets them is unknown.
func TestClassifyDqlite(t *testing.T) {
	d := &sqlDB{kind: Dqlite, dialect: dqliteDialect()}
	for _, tc := range []struct {
		err      error
		class    ErrorClass
		answered bool
	}{
		{driver.Error{Code: driver.ErrBusy, Message: "database is locked"}, Aborted, true},
		{driver.Error{Code: driver.ErrBusySnapshot, Message: "database is locked"}, Aborted, true},
		{driver.Error{Code: 7, Message: "no more rows available"}, Aborted, true},
		{driver.Error{Code: 10 | 41<<8, Message: "leadership lost"}, Disconnected, false},
		{driver.Error{Code: 10, Message: "disk I/O error"}, Disconnected, false},
		{driver.Error{Code: 19, Message: "UNIQUE constraint failed"}, Failed, true},
		{fmt.Errorf("exec: %w", sqldriver.ErrBadConn), Disconnected, false},
		{fmt.Errorf("failed to create dqlite connection: %w", driver.ErrNoAvailableLeader), Disconnected, false},
		{fmt.Errorf("call exec-sql (budget 2.9s): receive: header: %w", io.EOF), Disconnected, false},
	} {
		class, why := d.Classify(tc.err)
		if class != tc.class || d.Answered(tc.err) != tc.answered || why == "" {
			t.Errorf("%v: %s (%q), answered %v; want %s, answered %v", tc.err, class, why, d.Answered(tc.err), tc.class, tc.answered)
		}
	}
	if _, why := d.Classify(fmt.Errorf("call exec-sql (budget 2.9s): receive: header: %w", io.EOF)); why != "connection lost: EOF" {
		t.Errorf("a lost connection's reason %q names the request's budget", why)
	}
}
