package db_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/testservice"
)

// openTable opens addr with table, closed when the test ends.
func openTable(t *testing.T, addr, table string) db.Database {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := db.Open(ctx, addr, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// lockWithin locks d's table, failing the test unless the answer (a
// lock or a refusal) comes within a second.
func lockWithin(t *testing.T, d db.Database) (*db.TableLock, error) {
	t.Helper()
	start := time.Now()
	l, err := d.Lock(context.Background())
	if took := time.Since(start); took > time.Second {
		t.Errorf("Lock answered after %s, want within a second", took)
	}
	return l, err
}

// wantInUse checks that err refuses table, naming it, a holder that
// mentions holder, and how to choose another.
func wantInUse(t *testing.T, err error, table, holder, another string) {
	t.Helper()
	var inUse *db.InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("got %v, want an *InUseError", err)
	}
	msg := err.Error()
	for _, want := range []string{table, holder, another} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
}

// checkExclusive takes the lock of table at addr, sees a second database
// handle refused within a second with the holder named, another table
// locked beside it, and the table locked again once released.
func checkExclusive(t *testing.T, addr, table, other, holder, another string) {
	first := openTable(t, addr, table)
	l, err := lockWithin(t, first)
	if err != nil {
		t.Fatal(err)
	}
	second := openTable(t, addr, table)
	_, err = lockWithin(t, second)
	wantInUse(t, err, table, holder, another)
	if other != "" {
		o, err := lockWithin(t, openTable(t, addr, other))
		if err != nil {
			t.Fatalf("another table: %v", err)
		}
		defer o.Release()
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := lockWithin(t, second)
	if err != nil {
		t.Fatalf("after the first lock's release: %v", err)
	}
	if err := l2.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestTableLockIsExclusive holds a table on PostgreSQL (advisory lock),
// MariaDB (GET_LOCK), a SQLite file (a file lock beside it) and a Badger
// directory (a file lock beside it, taken as it opens): a second run on
// the table is refused within a second, naming the table, the holder and
// how to choose another; another table is free; a released table can be
// taken again.
func TestTableLockIsExclusive(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	t.Run("postgres", func(t *testing.T) {
		checkExclusive(t, testservice.Postgres(t), testservice.Table(), testservice.Table(), "application_name \"isoscope pid "+pid, "--table")
	})
	t.Run("mariadb", func(t *testing.T) {
		checkExclusive(t, testservice.MySQL(t), testservice.Table(), testservice.Table(), "server connection ", "--table")
	})
	t.Run("postgres, several hosts", func(t *testing.T) {
		// A failover cluster's address: a replicated lease row, not an
		// advisory lock, which a failover would end.
		u, err := url.Parse(testservice.Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		u.Host += "," + u.Host
		checkExclusive(t, u.String(), testservice.Table(), testservice.Table(), "isoscope pid "+pid, "--table")
	})
	t.Run("sqlite", func(t *testing.T) {
		addr := "sqlite://" + filepath.Join(t.TempDir(), "run.db")
		checkExclusive(t, addr, testservice.Table(), testservice.Table(), "isoscope pid "+pid, "--table")
	})
	t.Run("sqlite in memory", func(t *testing.T) {
		// Every in-memory database is the run's own.
		table := testservice.Table()
		a, err := lockWithin(t, openTable(t, db.DefaultAddress, table))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release()
		b, err := lockWithin(t, openTable(t, db.DefaultAddress, table))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
	})
	t.Run("badger", func(t *testing.T) {
		addr := "badger://" + filepath.Join(t.TempDir(), "kv")
		table := testservice.Table()
		first := openTable(t, addr, table)
		if _, err := lockWithin(t, first); err != nil {
			t.Fatal(err)
		}
		_, err := db.Open(context.Background(), addr, table)
		wantInUse(t, err, table, "isoscope pid "+pid, "another directory")
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		again := openTable(t, addr, table)
		if _, err := lockWithin(t, again); err != nil {
			t.Fatal(err)
		}
	})
}

// lockHolderEnv tells the test binary, started again by
// holdLockInChild, to hold a table lock: the address and the table,
// separated by a space.
const lockHolderEnv = "ISOSCOPE_TEST_LOCK_HOLDER"

// TestLockHolderProcess is the child of holdLockInChild: it locks the
// table, says "locked" and waits to be killed. It does nothing in an
// ordinary test run.
func TestLockHolderProcess(t *testing.T) {
	spec := os.Getenv(lockHolderEnv)
	if spec == "" {
		return
	}
	addr, table, _ := strings.Cut(spec, " ")
	d, err := db.Open(context.Background(), addr, table)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := d.Lock(context.Background()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(5 * time.Minute)
	os.Exit(1)
}

// holdLockInChild starts a process that holds the table's lock, and
// returns it once it does.
func holdLockInChild(t *testing.T, addr, table string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+addr+" "+table)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("the lock holder said %q (%v)", line, err)
	}
	return cmd
}

// checkCrashReleases has a child process hold the table, sees this
// process refused with the child named, kills the child (SIGKILL: no
// chance to release anything), and takes the table within bound.
// holderOf says what the refusal names for a holder of that pid.
func checkCrashReleases(t *testing.T, addr string, holderOf func(pid int) string, bound time.Duration) {
	table := testservice.Table()
	child := holdLockInChild(t, addr, table)
	d := openTable(t, addr, table)
	_, err := lockWithin(t, d)
	wantInUse(t, err, table, holderOf(child.Process.Pid), "--table")
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed := time.Now()
	for {
		l, err := d.Lock(context.Background())
		if err == nil {
			t.Logf("locked %s after the holder was killed", time.Since(killed).Round(time.Millisecond))
			_ = l.Release()
			return
		}
		var inUse *db.InUseError
		if !errors.As(err, &inUse) || time.Since(killed) > bound {
			t.Fatalf("%s after the holder was killed: %v", time.Since(killed).Round(time.Millisecond), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isoscopePid is the holder text format with the holder's pid.
func isoscopePid(format string) func(int) string {
	return func(pid int) string { return fmt.Sprintf(format, pid) }
}

// TestTableLockGoesWithCrashedHolder kills a process that holds a table
// and sees the lock go with it: at once with the session (PostgreSQL,
// MariaDB) or the process (a SQLite file).
func TestTableLockGoesWithCrashedHolder(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		checkCrashReleases(t, testservice.Postgres(t), isoscopePid("application_name \"isoscope pid %d"), 5*time.Second)
	})
	t.Run("mariadb", func(t *testing.T) {
		checkCrashReleases(t, testservice.MySQL(t), func(int) string { return "server connection " }, 5*time.Second)
	})
	t.Run("sqlite", func(t *testing.T) {
		checkCrashReleases(t, "sqlite://"+filepath.Join(t.TempDir(), "run.db"), isoscopePid("isoscope pid %d"), time.Second)
	})
}

// TestTableLockOnClusters does the same on etcd (a key on a lease) and
// dqlite (a lease row), each a node of its own (Debian's etcd-server and
// go-dqlite's dqlite-demo): a second lock is refused, a released one
// taken again, and a killed holder's lease runs out.
func TestTableLockOnClusters(t *testing.T) {
	for _, kind := range []cluster.Kind{cluster.Etcd, cluster.Dqlite} {
		t.Run(string(kind), func(t *testing.T) {
			if err := cluster.Built(kind); err != nil {
				testservice.Unavailable(t, err.Error())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cl, err := cluster.Up(ctx, cluster.Spec{Kind: kind, Nodes: 1}, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Stop()
			addr := cl.DSNs()[0]
			checkExclusive(t, addr, testservice.Table(), testservice.Table(), "isoscope pid "+strconv.Itoa(os.Getpid()), "--table")
			checkCrashReleases(t, addr, isoscopePid("isoscope pid %d"), 15*time.Second)
		})
	}
}
