package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/testservice"
)

// lostUpdates counts the committed read-modify-writes of h beyond the
// first that read one version of a key and wrote the key: acknowledged
// writes one of which overwrote another unseen.
func lostUpdates(h *history.History) int {
	type version struct {
		key history.KeyID
		v   string
	}
	writers := map[version]int{}
	for _, tx := range h.Txns {
		if tx.Status != history.Committed {
			continue
		}
		read := map[history.KeyID]string{}
		for _, op := range tx.Ops {
			switch op.Kind {
			case history.Read:
				if _, ok := read[op.Key]; !ok {
					read[op.Key] = op.Value.String()
				}
			case history.Write:
				if v, ok := read[op.Key]; ok {
					writers[version{op.Key, v}]++
					delete(read, op.Key)
				}
			}
		}
	}
	lost := 0
	for _, n := range writers {
		lost += max(n-1, 0)
	}
	return lost
}

// TestRunRedisFaults: a Redis primary, two replicas and three sentinels,
// every write followed by WAIT for one replica (redis-wait), mini-
// transactions while a node is cut off, killed or paused every second,
// so that the sentinels fail the primary over. The faults are in the
// history, healed and in the summary, nothing is left, and read
// committed holds: a failover may lose acknowledged writes (the old
// primary's last ones, and with WAIT those a replica acknowledged before
// it followed the new primary: Redis documents both), which forks the
// history, but every transaction reads and overwrites only what is on
// its own branch, so the writes and reads make no cycle. The lost
// read-modify-writes are logged.
func TestRunRedisFaults(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kinds := []string{"partition", "kill", "pause"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "redis-wait", "--faults", strings.Join(kinds, ","),
		"--fault-interval", "1s", "--workload", "mt", "--duration", "12s", "--sessions", "6", "--keys", "20",
		"--level", "read-committed", "--seed", "7")
	checkFaultHistory(t, errs, file, kinds...)
	if code != ExitHolds || !strings.HasPrefix(out, "read-committed holds") {
		t.Errorf("exit %d, want read committed to hold", code)
	}
	if !strings.Contains(errs, "Redis 7.") {
		t.Errorf("the run does not name Redis's version")
	}
	t.Logf("%d acknowledged read-modify-writes lost with WAIT 1", lostUpdates(readHistoryFile(t, file)))
}

// TestRunRedis: on a Redis primary with a replica and three sentinels,
// without faults, every workload Redis's transactions serve holds at
// strict serializability; with the transactions that only read on the
// replica (which may not have the primary's latest writes yet), each sees
// a prefix of the primary's commits, so serializability without session
// order (plain-serializable) holds; a workload of range scans is
// refused before it runs (exit 2).
func TestRunRedis(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := cluster.Up(ctx, cluster.Spec{Kind: cluster.Redis, Nodes: 2}, "", nil)
	if err != nil {
		t.Fatalf("%v%s", err, testservice.HowToInstall(err.Error()))
	}
	defer cl.Stop()
	dsn := cl.DSNs()[0]
	for _, w := range []string{"mt", "list-append", "lwt", "general", "blindw"} {
		code, out, errs := runRunWith(t, ctx, &runCommand{}, "--db", dsn, "--workload", w, "--txns", "600", "--sessions", "4",
			"--keys", "10", "--level", "sser", "--seed", "3", "-o", t.TempDir()+"/run.jsonl")
		if code != ExitHolds || !strings.HasPrefix(out, "strict-serializable holds") {
			t.Errorf("%s: exit %d\n%s%s", w, code, errs, out)
		}
	}
	code, out, errs := runRunWith(t, ctx, &runCommand{}, "--db", dsn+"?reads=replica", "--workload", "mt", "--txns", "600",
		"--sessions", "4", "--keys", "10", "--level", "plain-serializable", "--seed", "3", "-o", t.TempDir()+"/run.jsonl")
	if code != ExitHolds && code != ExitViolation {
		t.Errorf("reads=replica: exit %d\n%s%s", code, errs, out)
	}
	code, _, errs = runRunWith(t, ctx, &runCommand{}, "--db", dsn, "--workload", "range", "--txns", "50", "-o", t.TempDir()+"/run.jsonl")
	if code != ExitBadInput || !strings.Contains(errs, "use mt, general, lwt, list-append or blindw") {
		t.Errorf("range: exit %d, %q; want %d and what to run", code, errs, ExitBadInput)
	}
}
