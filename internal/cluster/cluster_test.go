package cluster

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/isoscope/isoscope/internal/testservice"
)

// up stands a cluster up for a test and stops it at the end, checking
// that nothing is left: no process, no listener, no directory.
func up(t *testing.T, spec string) *Cluster {
	t.Helper()
	sp, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return upWith(t, sp)
}

// upWith is up for a Spec, with Up's options.
func upWith(t *testing.T, sp Spec, opts ...Option) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Up(ctx, sp, "", func(s string) { t.Log(s) }, opts...)
	if err != nil {
		t.Fatalf("up %s: %v%s", sp, err, testservice.HowToInstall(err.Error()))
	}
	t.Cleanup(func() {
		var addrs []string
		var pids []int
		for _, n := range c.Nodes {
			addrs = append(addrs, n.client.addr())
			if n.proc != nil {
				pids = append(pids, n.proc.pid())
			}
		}
		c.Stop()
		assertGone(t, c.Dir, pids, addrs)
	})
	return c
}

// assertGone fails unless dir is gone, no process of pids is alive and
// nothing listens at the nodes' client addresses (host:port).
func assertGone(t *testing.T, dir string, pids []int, addrs []string) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there (%v)", dir, err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still alive", pid)
		}
	}
	for _, host := range addrs {
		if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
			c.Close()
			t.Errorf("something still listens at %s", host)
		}
	}
}

func TestParseSpec(t *testing.T) {
	for in, want := range map[string]Spec{"galera": {Galera, 3}, "galera:5": {Galera, 5}, "pg": {PostgresStandby, 2}, "postgres-standby:3": {PostgresStandby, 3}, "etcd": {Etcd, 3}, "dqlite": {Dqlite, 3}, "dqlite:5": {Dqlite, 5}, "nats-kv": {NatsKV, 3}, "nats-kv:1": {NatsKV, 1}, "nats-kv-leader:5": {NatsKVLeader, 5}, "redis": {Redis, 3}, "redis:1": {Redis, 1}, "redis-wait:5": {RedisWait, 5}, "redis-replica-reads": {RedisReplicaReads, 3}, "zookeeper": {Zookeeper, 3}, "zk:5": {Zookeeper, 5}, "zookeeper-sync:1": {ZookeeperSync, 1}} {
		if got, err := ParseSpec(in); err != nil || got != want {
			t.Errorf("%s: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"cockroach:3", "galera:x", "etcd:0", "galera:0", "pg:1", "galera:10", "dqlite:0", "dqlite:2", "dqlite:10", "nats-kv:0", "nats-kv:10", "redis:0", "redis:10", "redis-wait:1", "redis-replica-reads:1", "zookeeper:0", "zookeeper-sync:10"} {
		if _, err := ParseSpec(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: got %v, want an error naming it", bad, err)
		}
	}
}

// TestPostgresStandby stands up a primary and a standby: a write on the
// primary reaches the standby; with the standby cut off it does not, and
// after healing it does; the primary killed, restarted, paused and its
// clients cut comes back each time.
func TestPostgresStandby(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	c := up(t, "postgres-standby:2")
	ctx := context.Background()
	primary, standby := openPG(t, c.DSNs()[0]), openPG(t, c.DSNs()[1])
	mustExec(t, primary, "CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 1)")
	waitValue(t, standby, 1, 10*time.Second)

	if err := c.Isolate(1); err != nil {
		t.Fatal(err)
	}
	mustExec(t, primary, "UPDATE t SET v = 2")
	time.Sleep(1500 * time.Millisecond)
	if v := value(standby); v != 1 {
		t.Fatalf("the standby cut off from the primary read %d, want the old 1", v)
	}
	c.Heal()
	waitValue(t, standby, 2, 30*time.Second)

	for _, fault := range []string{"kill", "restart"} {
		bounce(t, c, primary, fault)
		mustExec(t, primary, "UPDATE t SET v = v + 1")
	}
	waitValue(t, standby, 4, 30*time.Second)

	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	if _, err := primary.ExecContext(pctx, "UPDATE t SET v = v + 1"); err == nil {
		t.Error("a paused primary answered")
	}
	cancel()
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	conn, err := standby.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.CutClients(1); err != nil || n == 0 {
		t.Fatalf("cut %d connections, %v; want at least 1", n, err)
	}
	if err := conn.PingContext(ctx); err == nil {
		t.Error("a connection whose proxy link was cut still answers")
	}
	conn.Close()
}

// TestGalera stands up three Galera nodes: a write on one is read on
// the others; the third, cut off from the others, leaves the primary
// component (refusing queries with 1047) while the other two go on, and
// after healing it is synced again; a node killed and started again
// rejoins.
func TestGalera(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	c := up(t, "galera:3")
	ctx := context.Background()
	var dbs []*sql.DB
	for _, d := range c.DSNs() {
		db, err := openMySQL(d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	mustExec(t, dbs[0], "CREATE TABLE test.t (k int PRIMARY KEY, v int)", "INSERT INTO test.t VALUES (1, 1)")
	mustExec(t, dbs[1], "SET SESSION wsrep_sync_wait = 1")
	if v := valueOf(dbs[1], "SELECT v FROM test.t WHERE k = 1"); v != 1 {
		t.Fatalf("n2 read %d with wsrep_sync_wait, want 1", v)
	}
	if err := c.Isolate(2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dbs[2].ExecContext(ctx, "SELECT v FROM test.t")
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1047 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n3 cut off from the others still serves: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustExec(t, dbs[0], "UPDATE test.t SET v = 2")
	c.Heal()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := galeraReady(rctx, c, 2); err != nil {
		t.Fatalf("n3 after healing: %v", err)
	}
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	mustExec(t, dbs[0], "UPDATE test.t SET v = 3")
	if err := c.Start(ctx, 1); err != nil {
		t.Fatalf("n2 after kill: %v", err)
	}
	if v := valueOf(dbs[1], "SELECT v FROM test.t WHERE k = 1"); v != 3 {
		t.Fatalf("n2 rejoined and read %d, want 3", v)
	}
}

func openPG(t *testing.T, dsn string) *sql.DB {
	db, err := sql.Open("pgx", dsn+"&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		var err error
		for range 50 { // a connection that a fault broke is retried
			if _, err = db.ExecContext(context.Background(), s); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func valueOf(db *sql.DB, q string) int {
	var v int
	if err := db.QueryRowContext(context.Background(), q).Scan(&v); err != nil {
		return -1
	}
	return v
}

func value(db *sql.DB) int { return valueOf(db, "SELECT v FROM t WHERE k = 1") }

func waitValue(t *testing.T, db *sql.DB, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for value(db) != want {
		if time.Now().After(deadline) {
			t.Fatalf("the standby reads %d, want %d", value(db), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// bounce stops node 0 of c by fault ("kill": SIGKILL, "restart": a
// graceful stop), checks that db, a connection to it, no longer
// answers, and starts it again.
func bounce(t *testing.T, c *Cluster, db *sql.DB, fault string) {
	t.Helper()
	var err error
	if fault == "kill" {
		err = c.Kill(0)
	} else {
		err = c.StopNode(0)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(context.Background()); err == nil {
		t.Fatalf("after %s node 0 still answers", fault)
	}
	if err := c.Start(context.Background(), 0); err != nil {
		t.Fatalf("starting node 0 again after %s: %v", fault, err)
	}
}

// TestReadyStopsWhenNodeExits: waiting for a node whose server exited
// ends at once with the exit, not at the readiness timeout (a Galera
// joiner that died under load kept the wait going for its 90 s).
func TestReadyStopsWhenNodeExits(t *testing.T) {
	p := &proc{name: "n1", done: make(chan struct{})}
	close(p.done)
	c := &Cluster{Nodes: []*Node{{Name: "n1", Log: "n1.log", proc: p}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := mysqlReady(ctx, c, 0, func(context.Context, *sql.DB) error { return errors.New("not yet") })
	if err == nil || !strings.Contains(err.Error(), "n1 exited (log: n1.log)") {
		t.Fatalf("waiting for an exited node: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the wait took %v after the node exited", d)
	}
	// Any other error is tried again until the deadline.
	short, cancel2 := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel2()
	tries := 0
	err = poll(short, 100*time.Millisecond, func(context.Context) error { tries++; return errors.New("not yet") })
	if !errors.Is(err, context.DeadlineExceeded) || tries < 3 {
		t.Errorf("a node not ready yet: %v after %d tries, want the deadline after several", err, tries)
	}
}

// TestSingleNode: the node of a one-server kind has its directories, its
// log, and a client proxy the DSN names, in front of the server's port.
func TestSingleNode(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	node, dir, port, err := singleNode(c, "x.log", "home", "tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, d := range []string{node.Dir, filepath.Join(dir, "home"), filepath.Join(dir, "tmp")} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if node.Name != "n1" || node.Log != filepath.Join(dir, "x.log") || len(c.Nodes) != 1 || port <= 0 {
		t.Errorf("node %+v, port %d, %d nodes", node, port, len(c.Nodes))
	}
	if dsn := c.dsn(0); dsn != "mysql://root@"+node.client.addr()+"/test" {
		t.Errorf("dsn %s", dsn)
	}
}
