package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunDqliteFaults: three dqlite voters (Debian's dqlite-demo), every
// fault, transactions on the leader: serializability holds, which is what
// dqlite documents ("serializable, not linearizable": a leader cut off
// that has not yet stepped down may serve a stale read). Whether strict
// serializability held too is logged, not asserted.
func TestRunDqliteFaults(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kinds := []string{"partition", "kill", "pause", "restart", "cut"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "dqlite", "--faults", "all", "--fault-interval", "1s",
		"--txns", "3000", "--sessions", "6", "--keys", "20", "--isolation", "serializable", "--level", "ser", "--seed", "13")
	checkFaultRun(t, code, out, errs, file, "serializable", kinds...)
	if !strings.Contains(out, "dqlite (SQLite ") && !strings.Contains(errs, "dqlite (SQLite ") {
		t.Errorf("the run does not name dqlite and its SQLite")
	}
	var sser, sserErr bytes.Buffer
	Main(ctx, []string{"check", "--level", "sser", file}, nil, &sser, &sserErr)
	t.Logf("checked at strict serializability: %s", strings.SplitN(sser.String(), "\n", 2)[0])
}
