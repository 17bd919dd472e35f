package cluster

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// pgafWrites says whether an insert through dsn commits within limit.
func pgafWrites(dsn string, v int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "INSERT INTO t VALUES ($1)", v)
	return err
}

// TestPGAutoFailover stands up a monitor and three nodes: the
// secondaries are synchronous (a commit waits for one); the first node is
// the primary; cut off from the others, it commits nothing, the monitor
// promotes a secondary, and clients that follow the primary write on it;
// healed, the old primary comes back as a secondary that has the new
// primary's writes; the primary killed fails over too, and the killed
// node started again rejoins.
func TestPGAutoFailover(t *testing.T) {
	t.Parallel() // it stands up its own servers, on ports of its own
	c := up(t, "pg-auto-failover:3")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if len(c.Nodes) != 4 || c.Nodes[3].Role != "monitor" {
		t.Fatalf("nodes %v: want n1, n2, n3 and the monitor", c.NodeNames())
	}
	for _, n := range c.Nodes[:3] {
		if n.peer.accepted.Load() == 0 || n.links[0].accepted.Load() == 0 {
			t.Errorf("no connection went through %s's peer proxy or its link to the monitor", n.Name)
		}
	}
	if p, err := c.Primary(ctx); err != nil || p != 0 {
		t.Fatalf("primary %d, %v; want n1", p, err)
	}
	dsns := c.DSNs()
	if !strings.Contains(dsns[0], "target_session_attrs=read-write") || strings.Count(dsns[0], ",") != 2 {
		t.Fatalf("n1's address %s: want the three nodes, read-write", dsns[0])
	}
	db, err := sql.Open("pgx", "postgres://postgres@"+c.Nodes[0].client.addr()+"/test?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sync string
	if err := db.QueryRowContext(ctx, "SHOW synchronous_standby_names").Scan(&sync); err != nil || !strings.HasPrefix(sync, "ANY 1 (") {
		t.Fatalf("synchronous_standby_names %q, %v: want ANY 1 (…)", sync, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (v int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if err := pgafWrites(dsns[1], 1, 10*time.Second); err != nil {
		t.Fatalf("a client of n2's that follows the primary: %v", err)
	}

	if err := c.Isolate(0); err != nil {
		t.Fatal(err)
	}
	// The old primary, alone, cannot commit: no standby acknowledges.
	direct := "postgres://postgres@" + c.Nodes[0].client.addr() + "/test?sslmode=disable"
	if err := pgafWrites(direct, 2, 3*time.Second); err == nil {
		t.Error("n1, cut off from its synchronous standbys, committed a write")
	}
	var promoted int
	if !waitFor(60*time.Second, func() bool {
		p, err := c.Primary(ctx)
		promoted = p
		return err == nil && p != 0
	}) {
		t.Fatalf("no failover within 60 s of cutting off the primary n1; n1's log:\n%s", logTail(c.Nodes[0].Log, 30))
	}
	t.Logf("%s promoted", c.Nodes[promoted].Name)
	if !waitFor(30*time.Second, func() bool { return pgafWrites(dsns[promoted], 3, 5*time.Second) == nil }) {
		t.Fatal("no write on the new primary")
	}
	c.Heal()
	if err := pgafSettled(ctx, c, c.DSNs()[3], 3, 150*time.Second); err != nil {
		t.Fatalf("after healing: %v; n1's log:\n%s", err, logTail(c.Nodes[0].Log, 30))
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE v IN (1, 3)").Scan(&n); err != nil || n != 2 {
		t.Errorf("n1, back as a secondary, has %d of the 2 committed rows (%v)", n, err)
	}

	// The primary killed: a failover, and the node rejoins once started.
	if err := c.Kill(promoted); err != nil {
		t.Fatal(err)
	}
	if !waitFor(60*time.Second, func() bool {
		p, err := c.Primary(ctx)
		return err == nil && p != promoted
	}) {
		t.Fatal("no failover within 60 s of killing the primary")
	}
	if err := c.Start(ctx, promoted); err != nil {
		t.Fatalf("%s started again: %v", c.Nodes[promoted].Name, err)
	}
	if err := pgafSettled(ctx, c, c.DSNs()[3], 3, 150*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := pgafWrites(dsns[0], 4, 10*time.Second); err != nil {
		t.Errorf("no write after the killed primary rejoined: %v", err)
	}
}

// TestPGAutoFailoverAsync: with asynchronous replication the primary
// cut off from every other node still commits (what a failover then
// loses), and synchronous_standby_names is empty.
func TestPGAutoFailoverAsync(t *testing.T) {
	t.Parallel()
	c := up(t, "pg-auto-failover-async:2")
	ctx := context.Background()
	direct := "postgres://postgres@" + c.Nodes[0].client.addr() + "/test?sslmode=disable"
	db, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sync string
	if err := db.QueryRowContext(ctx, "SHOW synchronous_standby_names").Scan(&sync); err != nil || sync != "" {
		t.Fatalf("synchronous_standby_names %q, %v: want none", sync, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (v int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Isolate(0); err != nil {
		t.Fatal(err)
	}
	if err := pgafWrites(direct, 1, 3*time.Second); err != nil {
		t.Errorf("n1, cut off, asynchronous: %v; want a commit", err)
	}
}
