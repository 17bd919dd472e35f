package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/testservice"
)

// TestRunMariaDBInnoDBRepeatableRead runs contended mini-transactions whose
// read-modify-writes lock what they read (--lock-rmw) on MariaDB at
// REPEATABLE READ and checks them against InnoDB's own repeatable read
// (--module innodb-rr, whose default level is rr): it holds, and the
// history records its locking reads.
func TestRunMariaDBInnoDBRepeatableRead(t *testing.T) {
	addr := testservice.MySQL(t)
	table := testservice.Table()
	dropAfter(t, addr, table)
	out := filepath.Join(t.TempDir(), "innodb.jsonl")
	code, stdout, errs := runRun(t, context.Background(), "--db", addr, "--table", table, "--isolation", "repeatable-read",
		"--workload", "mt", "--lock-rmw", "--module", "innodb-rr", "--sessions", "16", "--keys", "4", "--dist", "uniform",
		"--txns", "500", "--seed", "1", "-o", out)
	if code != ExitHolds || !strings.Contains(stdout, "repeatable-read holds") || !strings.Contains(stdout, "modules: innodb-rr") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, errs)
	}
	h := readHistoryFile(t, out)
	locked := 0
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Lock {
				locked++
			}
		}
	}
	if locked == 0 {
		t.Fatal("the history records no locking read")
	}
	// Whether a run also violates textbook SI depends on its interleaving
	// (most do: docs/databases.md, 10/10 in the evidence runs); the
	// difference between the two models is pinned down deterministically
	// by internal/check/innodb's hand-built cases. Here it is only logged.
	res, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("at textbook snapshot isolation: %s (%d locking reads)", res.Outcome, locked)
}
