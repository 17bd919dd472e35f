package cli

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/pipeline"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// The cluster tests stand real clusters up on 127.0.0.1 (Debian's
// MariaDB with galera-4 and rsync, PostgreSQL 15), break them while a
// short workload runs, and check what every such run must show: the
// history reads back with the faults in it, the runner rode through them
// (no session gave up), the verdict holds at the level the database keeps
// under faults (read committed), and nothing is left behind.

// clusterRun runs `isoscope run --cluster spec` with faults and returns
// the exit status, the output and the history; it checks that the
// cluster's directory, processes and listeners are gone afterwards.
func clusterRun(t *testing.T, ctx context.Context, c *runCommand, spec string, args ...string) (int, string, string, string) {
	t.Helper()
	// The servers run as their own users, who must reach the directory.
	parent, err := os.MkdirTemp("", "isoscope-cluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "cluster")
	file := filepath.Join(t.TempDir(), "run.jsonl")
	var st *cluster.State
	hook := c.hooks.Recorded
	c.hooks.Recorded = func(n int) {
		if st == nil {
			st, _ = cluster.ReadState(dir)
		}
		if hook != nil {
			hook(n)
		}
	}
	args = append([]string{"--cluster", spec, "--cluster-dir", dir, "-o", file, "--stmt-timeout", "2s", "--reconnect-for", "60s"}, args...)
	code, out, errs := runRunWith(t, ctx, c, args...)
	t.Logf("exit %d\n%s%s", code, errs, out)
	if st == nil {
		t.Fatalf("no transaction was recorded while the cluster was up%s", testservice.HowToInstall(errs))
	}
	checkNothingLeft(t, dir, st)
	return code, out, errs, file
}

// checkNothingLeft fails unless dir is gone, no node's process is alive
// and nothing listens at the nodes' client addresses.
func checkNothingLeft(t *testing.T, dir string, st *cluster.State) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster's directory %s is still there (%v)", dir, err)
	}
	for _, n := range st.Nodes {
		if n.PID > 0 && syscall.Kill(n.PID, 0) == nil {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
				t.Errorf("%s (pid %d) is still running", n.Name, n.PID)
			}
		}
		host := n.Addr
		if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
			conn.Close()
			t.Errorf("something still listens at %s, %s's address", host, n.Name)
		}
	}
}

// checkFaultRun checks a fault run: read committed holds, no session gave
// up, the history reads back with faults of the kinds asked for, and the
// summary lists them.
func checkFaultRun(t *testing.T, code int, out, errs, file, level string, kinds ...string) {
	t.Helper()
	if code != ExitHolds || !strings.HasPrefix(out, level+" holds") {
		t.Errorf("exit %d, want %s to hold", code, level)
	}
	checkFaultHistory(t, errs, file, kinds...)
}

// checkFaultHistory fails unless the runner rode through the faults, at
// least 100 transactions committed, and the history and the summary
// hold the faults, each one of kinds on a node, within the run, healed.
func checkFaultHistory(t *testing.T, errs, file string, kinds ...string) {
	t.Helper()
	if strings.Contains(errs, "the run stopped") || strings.Contains(errs, "interrupted") {
		t.Errorf("the runner did not ride through the faults")
	}
	h := readHistoryFile(t, file)
	if len(h.Faults) == 0 {
		t.Fatalf("the history holds no fault")
	}
	committed := 0
	for _, tx := range h.Txns {
		if tx.Status == 0 {
			committed++
		}
	}
	if committed < 100 {
		t.Errorf("only %d transactions committed", committed)
	}
	for _, f := range h.Faults {
		if !slices.Contains(kinds, f.Kind) || f.Node == "" || f.End < f.Begin || f.Begin < h.Txns[0].Begin {
			t.Errorf("fault %+v: want one of %v on a node, within the run", f, kinds)
		}
		if strings.Contains(f.Info, "failed") {
			t.Errorf("fault %+v was not healed", f)
		}
	}
	if !strings.Contains(errs, "  "+textfmt.Count(len(h.Faults), "fault")+":\n") || !strings.Contains(errs, h.Faults[0].Kind+" "+h.Faults[0].Node) {
		t.Errorf("the summary does not list the faults")
	}
}

// TestRunGaleraFaults: three Galera nodes, a partition, a kill -9 and a
// pause while mini-transactions run at read committed across the nodes.
func TestRunGaleraFaults(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kinds := []string{"partition", "kill", "pause", "cut"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "galera:3", "--faults", strings.Join(kinds, ","), "--fault-interval", "2s",
		"--txns", "5000", "--sessions", "6", "--keys", "50", "--isolation", "read-committed", "--seed", "5")
	checkFaultRun(t, code, out, errs, file, "read-committed", kinds...)
}

// TestRunPostgresStandbyFaults: a primary and a hot standby, read-only
// transactions on the standby, every fault.
func TestRunPostgresStandbyFaults(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kinds := []string{"partition", "kill", "pause", "restart", "cut", "clock"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "postgres-standby", "--faults", "all", "--fault-interval", "1s",
		"--txns", "6000", "--sessions", "6", "--keys", "50", "--isolation", "serializable", "--level", "rc", "--seed", "7")
	checkFaultRun(t, code, out, errs, file, "read-committed", kinds...)
}

// TestRunEtcdFaults: three etcd members, every fault, transactions
// committed by Txns that validate what they read: strict serializability
// holds, as etcd documents for its transactions and linearizable reads.
func TestRunEtcdFaults(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kinds := []string{"partition", "kill", "pause", "restart", "cut"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "etcd", "--faults", "all", "--fault-interval", "1s",
		"--txns", "2000", "--sessions", "6", "--keys", "20", "--isolation", "serializable", "--level", "sser", "--seed", "11")
	checkFaultRun(t, code, out, errs, file, "strict-serializable", kinds...)
}

// TestRunClusterInterrupted interrupts a run on a cluster (as SIGINT
// does, by its context) once it is under way: the run ends undecided,
// and no process, listener or directory of the cluster is left.
func TestRunClusterInterrupted(t *testing.T) {
	for _, spec := range []string{"postgres-standby", "dqlite"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel() // each stands up its own cluster, on ports of its own
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &runCommand{hooks: pipeline.Hooks{Recorded: func(n int) {
				if n == 300 {
					cancel()
				}
			}}}
			code, _, errs, file := clusterRun(t, ctx, c, spec, "--faults", "pause", "--fault-interval", "1s",
				"--txns", "1000000", "--sessions", "4", "--isolation", "serializable", "--level", "rc")
			if code != ExitUnknown || !strings.Contains(errs, "interrupted") {
				t.Errorf("exit %d, want %d for a run interrupted", code, ExitUnknown)
			}
			if h := readHistoryFile(t, file); len(h.Txns) < 300 {
				t.Errorf("the history holds %d transactions, want at least 300", len(h.Txns))
			}
		})
	}
}

// TestRunClusterFlags: bad combinations are refused before anything
// starts.
func TestRunClusterFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--faults", "partition"},
		{"--cluster", "cockroach:3"},
		{"--cluster", "galera", "--faults", "meteor"},
		{"--cluster", "galera", "--db", "mysql://root@127.0.0.1:3306/test"},
		{"--cluster", "galera", "--faults", "kill", "--fault-interval", "0s"},
		{"--read-db", "postgres://postgres@127.0.0.1:5432/test"},
		{"--cluster", "etcd", "--faults", "kill,clock"},
	} {
		code, _, errs := runRunWith(t, context.Background(), &runCommand{}, args...)
		if code != ExitBadInput || !strings.Contains(errs, "isoscope: ") {
			t.Errorf("%v: exit %d, want %d with the reason\n%s", args, code, ExitBadInput, errs)
		}
		if slices.Contains(args, "kill,clock") && !strings.Contains(errs, "vDSO") {
			t.Errorf("clock faults on etcd refused without saying why: %s", errs)
		}
	}
}

// checkClockFaults checks a run's clock faults: at least one, each with
// an offset of seconds to minutes, and the node's clock seen at that
// offset and then right again (the nemesis asks the node itself for its
// clock, SELECT clock_timestamp() or SYSDATE(6), and the record says what
// it showed).
func checkClockFaults(t *testing.T, file string) {
	t.Helper()
	h := readHistoryFile(t, file)
	n := 0
	for _, f := range h.Faults {
		if f.Kind != "clock" {
			continue
		}
		n++
		off := time.Duration(f.Offset)
		if off.Abs() < 2*time.Second || off.Abs() > 10*time.Minute {
			t.Errorf("clock fault %+v: offset %s", f, off)
			continue
		}
		var seen, back time.Duration
		_, rest, ok1 := strings.Cut(f.Info, "(the node showed ")
		s1, rest, ok2 := strings.Cut(rest, ")")
		_, rest, ok3 := strings.Cut(rest, "(showed ")
		s2, _, ok4 := strings.Cut(rest, ")")
		var err1, err2 error
		seen, err1 = time.ParseDuration(s1)
		back, err2 = time.ParseDuration(s2)
		if !ok1 || !ok2 || !ok3 || !ok4 || err1 != nil || err2 != nil {
			t.Errorf("clock fault %+v: the record does not say what the node showed", f)
			continue
		}
		if (seen-off).Abs() > time.Second || back.Abs() > time.Second {
			t.Errorf("clock fault %+v: %s's clock showed %s for an offset of %s, then %s", f, f.Node, seen, off, back)
		}
	}
	if n == 0 {
		t.Errorf("no clock fault in the history")
	}
}

// TestRunPostgresStandbyClock: clock skews of the primary or the standby
// for eight seconds of mini-transactions (read-only ones on the
// standby): every skew is seen on its node, and read committed holds.
func TestRunPostgresStandbyClock(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "postgres-standby", "--faults", "clock", "--fault-interval", "1s",
		"--duration", "8s", "--sessions", "6", "--keys", "50", "--isolation", "serializable", "--level", "rc", "--seed", "7")
	checkFaultRun(t, code, out, errs, file, "read-committed", "clock")
	checkClockFaults(t, file)
}

// TestRunGaleraClock: clock skews of Galera nodes while mini-transactions
// run at read committed across the nodes: every skew is seen on its
// node, and read committed holds.
func TestRunGaleraClock(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "galera:3", "--faults", "clock,pause", "--fault-interval", "1s",
		"--duration", "10s", "--sessions", "6", "--keys", "50", "--isolation", "read-committed", "--seed", "4")
	checkFaultRun(t, code, out, errs, file, "read-committed", "clock", "pause")
	checkClockFaults(t, file)
}
