package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/cluster"
)

// TestRunOptInRefused: an opt-in kind whose binary is not built, and a
// partition asked of a one-node cluster, are bad input (exit 2) naming
// what to do.
func TestRunOptInRefused(t *testing.T) {
	t.Setenv(cluster.BinEnv, t.TempDir())
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "tidb"}, "make tidb"},
		{[]string{"--cluster", "tidb-optimistic", "--faults", "kill"}, "make tidb"},
		{[]string{"--cluster", "dolt"}, "make dolt"},
		{[]string{"--cluster", "dolt", "--faults", "kill,partition"}, "no other node"},
		{[]string{"--cluster", "tidb:2"}, "one server"},
	} {
		args := append(tc.args, "-o", filepath.Join(t.TempDir(), "h.jsonl"), "--txns", "10")
		code, _, errs := runRunWith(t, ctx, &runCommand{}, args...)
		if code != ExitBadInput || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d naming %q", tc.args, code, errs, ExitBadInput, tc.want)
		}
	}
}

// needBuilt skips a test unless the opt-in kind's binary is built.
func needBuilt(t *testing.T, spec string) {
	t.Helper()
	sp, err := cluster.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Built(sp.Kind); err != nil {
		t.Skipf("opt-in: %v", err)
	}
}

// TestRunTiDBFaults: TiDB on unistore in pessimistic mode (opt-in),
// killed, paused, restarted and its clients cut while mini-transactions
// run at repeatable read. TiDB calls its repeatable read snapshot
// isolation, but documents that in pessimistic mode (its default) writes
// read and lock the latest committed version, as MySQL's do: lost updates
// are its documented behaviour (docs/databases.md), and what holds is
// InnoDB's repeatable read (--module innodb-rr).
func TestRunTiDBFaults(t *testing.T) {
	needBuilt(t, "tidb")
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kinds := []string{"kill", "pause", "restart", "cut"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "tidb", "--faults", strings.Join(kinds, ","), "--fault-interval", "1s",
		"--txns", "6000", "--sessions", "6", "--keys", "20", "--isolation", "repeatable-read", "--module", "innodb-rr", "--seed", "3")
	checkFaultRun(t, code, out, errs, file, "repeatable-read", kinds...)
}

// TestRunTiDBOptimisticFaults: the same in optimistic mode, whose write
// conflicts abort at COMMIT (9007).
func TestRunTiDBOptimisticFaults(t *testing.T) {
	needBuilt(t, "tidb-optimistic")
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kinds := []string{"kill", "pause", "restart", "cut"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "tidb-optimistic", "--faults", strings.Join(kinds, ","), "--fault-interval", "1s",
		"--txns", "6000", "--sessions", "6", "--keys", "20", "--isolation", "repeatable-read", "--level", "si", "--seed", "3")
	checkFaultRun(t, code, out, errs, file, "snapshot-isolation", kinds...)
	if !strings.Contains(errs, "write conflict (9007)") {
		t.Errorf("no transaction aborted with a write conflict (9007)")
	}
}

// TestRunDoltFaults: dolt sql-server (opt-in), killed, paused, restarted
// and its clients cut, at repeatable read (the level Dolt implements).
func TestRunDoltFaults(t *testing.T) {
	needBuilt(t, "dolt")
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kinds := []string{"kill", "pause", "restart", "cut"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "dolt", "--faults", strings.Join(kinds, ","), "--fault-interval", "2s",
		"--txns", "2000", "--sessions", "6", "--keys", "20", "--isolation", "repeatable-read", "--level", "si", "--seed", "3")
	checkFaultRun(t, code, out, errs, file, "snapshot-isolation", kinds...)
}
