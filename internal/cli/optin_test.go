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
	optinFaultRun(t, "tidb", "1s", "6000", "repeatable-read", "--module", "innodb-rr")
}

// optinFaultRun runs mini-transactions at repeatable read on the opt-in
// server kind (skipping unless it is built), killed, paused, restarted and
// its clients cut every interval, checks the run (at the level want
// names, with the flags extra) and returns what it wrote to standard error.
func optinFaultRun(t *testing.T, kind, interval, txns, want string, extra ...string) string {
	t.Helper()
	needBuilt(t, kind)
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kinds := []string{"kill", "pause", "restart", "cut"}
	args := append([]string{"--faults", strings.Join(kinds, ","), "--fault-interval", interval,
		"--txns", txns, "--sessions", "6", "--keys", "20", "--isolation", "repeatable-read", "--seed", "3"}, extra...)
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, kind, args...)
	checkFaultRun(t, code, out, errs, file, want, kinds...)
	return errs
}

// TestRunTiDBOptimisticFaults: the same in optimistic mode, whose write
// conflicts abort at COMMIT (9007).
func TestRunTiDBOptimisticFaults(t *testing.T) {
	errs := optinFaultRun(t, "tidb-optimistic", "1s", "6000", "snapshot-isolation", "--level", "si")
	if !strings.Contains(errs, "write conflict (9007)") {
		t.Errorf("no transaction aborted with a write conflict (9007)")
	}
}

// TestRunDoltFaults: dolt sql-server (opt-in), killed, paused, restarted
// and its clients cut, at repeatable read (the level Dolt implements).
func TestRunDoltFaults(t *testing.T) {
	optinFaultRun(t, "dolt", "2s", "2000", "snapshot-isolation", "--level", "si")
}
