package cli

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunPGAutoFailoverFaults: a pg_auto_failover monitor and three
// PostgreSQL nodes in synchronous replication; list-append transactions
// at SERIALIZABLE while the primary is cut off from the monitor and the
// other nodes, which forces a failover (the sessions follow the new
// primary); no statement timeout, so that no commit waiting for a standby
// is cancelled (a cancelled wait leaves the commit local, reported as
// committed). Serializability must hold across the failover, and the
// history must record the fault and an outage the sessions rode through.
// Also: the faults of the primary are refused on a cluster whose primary
// does not move.
func TestRunPGAutoFailoverFaults(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "pg-auto-failover", "--faults", "partition-primary",
		"--fault-interval", "10s", "--workload", "list-append", "--duration", "24s", "--sessions", "4", "--keys", "10",
		"--isolation", "serializable", "--level", "ser", "--seed", "3", "--stmt-timeout", "0")
	checkFaultHistory(t, errs, file, "partition-primary")
	if !strings.Contains(errs, "lost the database") {
		t.Errorf("the sessions never lost the primary: no failover")
	}
	if code != ExitHolds || !strings.HasPrefix(out, "serializable holds") {
		t.Errorf("exit %d: want serializability to hold across the failover", code)
	}
	code, _, errs = runRunWith(t, ctx, &runCommand{}, "--cluster", "etcd:3", "--faults", "partition-primary", "--txns", "10")
	if code != ExitBadInput || !strings.Contains(errs, "no primary that moves") {
		t.Errorf("partition-primary on etcd: exit %d, %q; want %d, refused", code, errs, ExitBadInput)
	}
}
