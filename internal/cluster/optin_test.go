package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The opt-in kinds (TiDB, Dolt) need binaries `make tidb` and `make dolt`
// build; their tests skip, naming the target, when they are not built.

// needBuilt skips the test unless kind's binary is built.
func needBuilt(t *testing.T, kind Kind) {
	t.Helper()
	if err := Built(kind); err != nil {
		t.Skipf("opt-in: %v", err)
	}
}

// TestOptInNotBuilt: without the binaries, standing an opt-in kind up
// fails with an error naming the make target, and leaves no directory.
func TestOptInNotBuilt(t *testing.T) {
	t.Setenv(BinEnv, t.TempDir())
	for kind, target := range map[string]string{"tidb": "make tidb", "tidb-optimistic": "make tidb", "dolt": "make dolt"} {
		sp, err := ParseSpec(kind)
		if err != nil {
			t.Fatal(err)
		}
		if err := Built(sp.Kind); err == nil || !strings.Contains(err.Error(), target) {
			t.Errorf("%s: Built says %v, want an error naming %s", kind, err, target)
		}
		dir := filepath.Join(t.TempDir(), "c")
		_, err = Up(context.Background(), sp, dir, nil)
		if err == nil || !strings.Contains(err.Error(), target) {
			t.Errorf("%s: Up says %v, want an error naming %s", kind, err, target)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s is left (%v)", kind, dir, err)
		}
	}
	for _, bad := range []string{"tidb:3", "dolt:2", "tidb-optimistic:0"} {
		if _, err := ParseSpec(bad); err == nil || !strings.Contains(err.Error(), "one server") {
			t.Errorf("%s: got %v, want an error saying it is one server", bad, err)
		}
	}
}

// TestTiDB stands up tidb-server on unistore in pessimistic mode: it
// listens on 127.0.0.1 only and keeps its files in its directory; a
// second writer of a row waits for the first's lock (pessimistic); a
// committed write survives kill -9; a paused server does not answer;
// cut connections break.
func TestTiDB(t *testing.T) {
	needBuilt(t, TiDB)
	t.Parallel() // each stands up its own cluster, on ports of its own
	c := up(t, "tidb")
	db := openOptIn(t, c)
	checkConfined(t, c)
	if m := valueString(t, db, "SELECT @@tidb_txn_mode"); m != "pessimistic" {
		t.Fatalf("a session's transaction mode is %q, want pessimistic", m)
	}
	a, b := conn(t, db), conn(t, db)
	mustConn(t, b, "SET SESSION innodb_lock_wait_timeout = 1")
	mustConn(t, a, "BEGIN", "UPDATE t SET v = 2 WHERE k = 1")
	mustConn(t, b, "BEGIN")
	if n := errNumber(execOn(b, "UPDATE t SET v = 3 WHERE k = 1")); n != 1205 {
		t.Errorf("a second writer of a locked row got error %d, want to wait and time out (1205)", n)
	}
	mustConn(t, b, "ROLLBACK")
	mustConn(t, a, "COMMIT")
	oneNodeFaults(t, c, db, 2)
}

// TestTiDBOptimistic stands up TiDB in optimistic mode: two writers of a
// row both proceed, and the second to commit fails at COMMIT with 9007;
// the mode survives a restart.
func TestTiDBOptimistic(t *testing.T) {
	needBuilt(t, TiDBOptimistic)
	t.Parallel() // each stands up its own cluster, on ports of its own
	c := up(t, "tidb-optimistic")
	db := openOptIn(t, c)
	conflictAtCommit(t, db, 9007)
	if err := c.StopNode(0); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if m := valueString(t, db, "SELECT @@tidb_txn_mode"); m != "optimistic" {
		t.Fatalf("after a restart a session's transaction mode is %q, want optimistic", m)
	}
	oneNodeFaults(t, c, db, 3)
}

// TestDolt stands up dolt sql-server: its configuration lives in the
// node's directory (DOLT_ROOT_PATH), not the home directory; two writers
// of a row both proceed and the second to commit fails with 1213; the
// faults of one node.
func TestDolt(t *testing.T) {
	needBuilt(t, Dolt)
	t.Parallel() // each stands up its own cluster, on ports of its own
	c := up(t, "dolt")
	if _, err := os.Stat(filepath.Join(c.Dir, "n1", "home", ".dolt", "config_global.json")); err != nil {
		t.Errorf("dolt's global configuration is not in the node's directory: %v", err)
	}
	db := openOptIn(t, c)
	checkConfined(t, c)
	conflictAtCommit(t, db, 1213)
	oneNodeFaults(t, c, db, 3)
}

// openOptIn opens the node's test database and makes table t with k=1,
// v=1.
func openOptIn(t *testing.T, c *Cluster) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.DBName = "root", "tcp", "test"
	cfg.Addr = strings.TrimSuffix(strings.TrimPrefix(c.DSNs()[0], "mysql://root@"), "/test")
	cfg.Timeout, cfg.ReadTimeout = 3*time.Second, 10*time.Second
	cn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(cn)
	t.Cleanup(func() { db.Close() })
	mustExec(t, db, "CREATE TABLE t (k int PRIMARY KEY, v int)", "INSERT INTO t VALUES (1, 1)")
	return db
}

// conflictAtCommit runs two transactions that write row 1: both writes
// proceed, the first commits, the second's COMMIT fails with code.
func conflictAtCommit(t *testing.T, db *sql.DB, code uint16) {
	t.Helper()
	a, b := conn(t, db), conn(t, db)
	mustConn(t, a, "BEGIN", "SELECT v FROM t WHERE k = 1", "UPDATE t SET v = 2 WHERE k = 1")
	mustConn(t, b, "BEGIN", "SELECT v FROM t WHERE k = 1", "UPDATE t SET v = 3 WHERE k = 1")
	mustConn(t, a, "COMMIT")
	if n := errNumber(execOn(b, "COMMIT")); n != code {
		t.Fatalf("the second writer's COMMIT got error %d, want %d", n, code)
	}
	if v := valueOf(db, "SELECT v FROM t WHERE k = 1"); v != 2 {
		t.Fatalf("read %d after the conflict, want the first writer's 2", v)
	}
}

// oneNodeFaults kills node 0 after committing v = want (the write
// survives the restart), restarts it gracefully, pauses it (it does not
// answer), and cuts its clients' connections (they break).
func oneNodeFaults(t *testing.T, c *Cluster, db *sql.DB, want int) {
	t.Helper()
	ctx := context.Background()
	mustExec(t, db, "UPDATE t SET v = "+strconv.Itoa(want)+" WHERE k = 1")
	for _, fault := range []string{"kill", "restart"} {
		bounce(t, c, db, fault)
		if v := valueOf(db, "SELECT v FROM t WHERE k = 1"); v != want {
			t.Fatalf("after %s read %d, want the committed %d", fault, v, want)
		}
	}
	if err := c.Pause(0); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	if _, err := db.ExecContext(pctx, "UPDATE t SET v = v + 1"); err == nil {
		t.Error("a paused server answered")
	}
	cancel()
	if err := c.Resume(0); err != nil {
		t.Fatal(err)
	}
	cn := conn(t, db)
	if err := cn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.CutClients(0); err != nil || n == 0 {
		t.Fatalf("cut %d connections, %v; want at least 1", n, err)
	}
	if err := cn.PingContext(ctx); err == nil {
		t.Error("a connection whose proxy link was cut still answers")
	}
}

// checkConfined checks that the node's server (with its children)
// listens on 127.0.0.1 only and that every file it holds open is in
// the cluster's directory.
func checkConfined(t *testing.T, c *Cluster) {
	t.Helper()
	inodes := map[string]bool{}
	for _, pid := range tree(c.Nodes[0].proc.pid()) {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(ino, "]")] = true
			} else if strings.HasPrefix(l, "/") && !strings.HasPrefix(l, c.Dir+"/") && !strings.HasPrefix(l, "/dev/") && !strings.HasPrefix(l, "/proc/") && !strings.HasPrefix(l, "/sys/") {
				t.Errorf("the server holds %s open, outside %s", l, c.Dir)
			}
		}
	}
	listening := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// sl local remote st … inode: st 0A is LISTEN.
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
				continue
			}
			listening++
			if local := fs[1]; local[:strings.IndexByte(local, ':')] != "0100007F" {
				t.Errorf("the server listens on %s (%s), not 127.0.0.1", local, f)
			}
		}
	}
	if listening == 0 {
		t.Error("found no socket the server listens on")
	}
}

func conn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func execOn(c *sql.Conn, q string) error {
	_, err := c.ExecContext(context.Background(), q)
	return err
}

func mustConn(t *testing.T, c *sql.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := execOn(c, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// errNumber is a MySQL error's number (0: no error, 1: another error).
func errNumber(err error) uint16 {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &me):
		return me.Number
	}
	return 1
}

func valueString(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s string
	if err := db.QueryRowContext(context.Background(), q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}
