package cluster

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// pgOffset is how far the clock of the server behind conn is from this
// machine's, asked with clock_timestamp() on that connection (its
// backend), independently of Cluster.ClockOffset.
func pgOffset(t *testing.T, conn *sql.Conn) time.Duration {
	t.Helper()
	before := time.Now()
	var s float64
	if err := conn.QueryRowContext(context.Background(), "SELECT extract(epoch FROM clock_timestamp())::float8").Scan(&s); err != nil {
		t.Fatal(err)
	}
	mid := before.Add(time.Since(before) / 2)
	return time.Unix(0, int64(s*1e9)).Sub(mid)
}

// near says whether d is within half a second of want.
func near(d, want time.Duration) bool {
	return math.Abs(float64(d-want)) < float64(500*time.Millisecond)
}

// TestClockSkewPostgres stands up a primary and a standby under
// libfaketime and skews the standby's clock 90 s back: a backend that
// was connected before the skew sees its clock go back (clock_timestamp()
// on that same connection), the primary's does not, replication goes on,
// and the standby's own measure of its replay lag (now() minus the
// primary's commit time of the last transaction replayed) is off by the
// skew; then the clock comes back. Skewing a cluster stood up without
// clocks, or etcd's, is refused.
func TestClockSkewPostgres(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	c := upWith(t, Spec{Kind: PostgresStandby, Nodes: 2}, WithClocks())
	ctx := context.Background()
	primary, standby := openPG(t, c.DSNs()[0]), openPG(t, c.DSNs()[1])
	mustExec(t, primary, "CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 1)")
	waitValue(t, standby, 1, 10*time.Second)
	pconn, err := primary.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close()
	sconn, err := standby.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sconn.Close()
	if d := pgOffset(t, sconn); !near(d, 0) {
		t.Fatalf("before any skew the standby's clock is %s off", d)
	}

	seen, err := c.SkewClock(ctx, 1, -90*time.Second)
	if err != nil || !near(seen, -90*time.Second) {
		t.Fatalf("skewing the standby 90 s back: it showed %s, %v", seen, err)
	}
	if d := pgOffset(t, sconn); !near(d, -90*time.Second) {
		t.Errorf("a backend connected before the skew reads its clock %s off, want -1m30s", d)
	}
	if d := pgOffset(t, pconn); !near(d, 0) {
		t.Errorf("the primary's clock is %s off, want 0: only the standby was skewed", d)
	}
	mustExec(t, primary, "UPDATE t SET v = 2")
	waitValue(t, standby, 2, 10*time.Second)
	var lag float64
	if err := sconn.QueryRowContext(ctx, "SELECT extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8").Scan(&lag); err != nil {
		t.Fatal(err)
	}
	if lag > -85 || lag < -95 {
		t.Errorf("the standby's replay lag by its own clock is %.1f s, want about -90 (the skew)", lag)
	}

	if seen, err := c.SkewClock(ctx, 1, 0); err != nil || !near(seen, 0) {
		t.Fatalf("restoring the standby's clock: it showed %s, %v", seen, err)
	}
	if d := pgOffset(t, sconn); !near(d, 0) {
		t.Errorf("after restoring, the standby's clock is %s off", d)
	}
	if os.Getenv("ISOSCOPE_CLOCK_MEASURE") != "" {
		measurePrimarySkew(t, c, primary, standby)
	}

	if err := ClockSkew(Etcd); err == nil || !strings.Contains(err.Error(), "vDSO") {
		t.Errorf("etcd: %v, want a refusal that says why", err)
	}
}

// measurePrimarySkew (ISOSCOPE_CLOCK_MEASURE=1) skews the primary forward
// and back and logs what replication did, for docs/clusters.md.
func measurePrimarySkew(t *testing.T, c *Cluster, primary, standby *sql.DB) {
	ctx := context.Background()
	for _, off := range []time.Duration{5 * time.Minute, -5 * time.Minute, 0} {
		start := time.Now()
		seen, err := c.SkewClock(ctx, 0, off)
		t.Logf("primary skewed %s: showed %s (%v) after %s", off, seen.Round(time.Millisecond), err, time.Since(start).Round(time.Millisecond))
		time.Sleep(3 * time.Second)
		mustExec(t, primary, "UPDATE t SET v = v + 1")
		want := valueOf(primary, "SELECT v FROM t WHERE k = 1")
		start = time.Now()
		for value(standby) != want && time.Since(start) < 30*time.Second {
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("  a write reached the standby after %s (value %d, want %d)", time.Since(start).Round(time.Millisecond), value(standby), want)
	}
	// statement_timeout across a jump of the clock: B waits for A's row
	// lock with a 10 s statement timeout; the primary's clock jumps
	// forward by a minute, or back.
	for _, off := range []time.Duration{0, time.Minute, -time.Minute} {
		a, err := primary.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := primary.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		if _, err := a.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE k = 1"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ExecContext(ctx, "SET statement_timeout = '10s'"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res := make(chan error, 1)
		go func() {
			_, err := b.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE k = 1")
			res <- err
		}()
		time.Sleep(300 * time.Millisecond)
		if _, err := c.SkewClock(ctx, 0, off); err != nil {
			t.Fatal(err)
		}
		var berr error
		select {
		case berr = <-res:
		case <-time.After(20 * time.Second):
			berr = errors.New("still waiting after 20 s")
		}
		t.Logf("statement_timeout 10s, the primary's clock jumped %s while a statement waited for a lock: it ended after %s: %v", off, time.Since(start).Round(10*time.Millisecond), berr)
		_, _ = a.ExecContext(ctx, "ROLLBACK")
		if berr != nil && strings.Contains(berr.Error(), "still waiting") {
			<-res
		}
		a.Close()
		b.Close()
		if _, err := c.SkewClock(ctx, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	// recovery_min_apply_delay: the standby holds each commit until its
	// own clock passes the primary's commit time plus the delay.
	mustExec(t, standby, "ALTER SYSTEM SET recovery_min_apply_delay = '5s'", "SELECT pg_reload_conf()")
	time.Sleep(time.Second)
	for _, off := range []time.Duration{0, -30 * time.Second, 30 * time.Second} {
		// From the right time each: a jump of 60 s or more ends the
		// walreceiver (wal_receiver_timeout).
		if _, err := c.SkewClock(ctx, 1, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(6 * time.Second)
		if _, err := c.SkewClock(ctx, 1, off); err != nil {
			t.Fatal(err)
		}
		mustExec(t, primary, "UPDATE t SET v = v + 1")
		want := valueOf(primary, "SELECT v FROM t WHERE k = 1")
		start := time.Now()
		for value(standby) != want && time.Since(start) < 60*time.Second {
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("recovery_min_apply_delay 5s, standby skewed %s: a write reached the standby after %s (value %d, want %d)", off, time.Since(start).Round(time.Millisecond), value(standby), want)
	}
	if _, err := c.SkewClock(ctx, 1, 0); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		b, _ := os.ReadFile(n.Log)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "timeout") || strings.Contains(l, "terminat") || strings.Contains(l, "FATAL") || strings.Contains(l, "replication") {
				t.Logf("%s log: %s", n.Name, l)
			}
		}
	}
}

// TestClockSkewRefused: a cluster stood up without clocks refuses a
// skew, saying why.
func TestClockSkewRefused(t *testing.T) {
	c := &Cluster{Spec: Spec{Kind: PostgresStandby, Nodes: 2}, Nodes: []*Node{{Name: "n1"}, {Name: "n2"}}}
	if _, err := c.SkewClock(context.Background(), 1, time.Minute); err == nil || !strings.Contains(err.Error(), "libfaketime") {
		t.Errorf("got %v, want a refusal naming libfaketime", err)
	}
	if _, err := Up(context.Background(), Spec{Kind: Etcd, Nodes: 3}, "", nil, WithClocks()); err == nil || !strings.Contains(err.Error(), "etcd") {
		t.Errorf("etcd with clocks: %v, want a refusal", err)
	}
}
