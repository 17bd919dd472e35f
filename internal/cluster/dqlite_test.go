package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	dqclient "github.com/canonical/go-dqlite/client"
	"github.com/canonical/go-dqlite/driver"
)

// dqliteDrivers numbers the drivers the tests register.
var dqliteDrivers atomic.Int64

// openDqlite opens database "test" through the nodes at addrs (client
// proxies): every connection goes to the leader they name.
func openDqlite(t *testing.T, addrs ...string) *sql.DB {
	t.Helper()
	store := dqclient.NewInmemNodeStore()
	var infos []dqclient.NodeInfo
	for _, a := range addrs {
		infos = append(infos, dqclient.NodeInfo{Address: a})
	}
	if err := store.Set(context.Background(), infos); err != nil {
		t.Fatal(err)
	}
	drv, err := driver.New(store, driver.WithRetryLimit(3), driver.WithAttemptTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("dqlite-test-%d", dqliteDrivers.Add(1))
	sql.Register(name, drv)
	db, err := sql.Open(name, "test")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0)
	t.Cleanup(func() { db.Close() })
	return db
}

// leaderOf returns the index of the node that node i names as leader
// (-1: none, or it does not answer).
func leaderOf(c *Cluster, i int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addr, err := dqliteLeader(ctx, c.Nodes[i].client.addr())
	if err != nil {
		return -1
	}
	for j, n := range c.Nodes {
		if n.client.addr() == addr {
			return j
		}
	}
	return -1
}

// waitFor polls cond every 100 ms for at most d.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestDqlite stands up three dqlite voters: a write through any node
// goes to the leader; the leader cut off from the others loses its
// leadership and takes no write, while the other two elect a new leader
// and take writes — so the Raft traffic goes through the proxies, whose
// rewriting of the addresses the nodes gossip keeps it there; healed, the
// old leader follows the new one; a node killed and started again, and a
// leader paused, are ridden through.
func TestDqlite(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	c := up(t, "dqlite:3")
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.client.addr())
	}
	db := openDqlite(t, addrs...)
	mustExec(t, db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)", "INSERT INTO t VALUES (1, 1)")

	old := leaderOf(c, 0)
	if old < 0 {
		t.Fatal("n1 names no leader")
	}
	for i := range c.Nodes {
		if l := leaderOf(c, i); l != old {
			t.Fatalf("%s names leader %d, n1 names %d", c.Nodes[i].Name, l, old)
		}
	}
	if err := c.Isolate(old); err != nil {
		t.Fatal(err)
	}
	others := []int{}
	var otherAddrs []string
	for i := range c.Nodes {
		if i != old {
			others = append(others, i)
			otherAddrs = append(otherAddrs, addrs[i])
		}
	}
	if !waitFor(30*time.Second, func() bool {
		l := leaderOf(c, others[0])
		return l >= 0 && l != old && leaderOf(c, others[1]) == l
	}) {
		t.Fatalf("%s cut off: the others elected no new leader", c.Nodes[old].Name)
	}
	mustExec(t, openDqlite(t, otherAddrs...), "UPDATE t SET v = 2 WHERE k = 1")
	// The old leader, alone, steps down and commits nothing.
	if !waitFor(30*time.Second, func() bool { return leaderOf(c, old) != old }) {
		t.Fatalf("%s cut off still calls itself the leader", c.Nodes[old].Name)
	}
	alone := openDqlite(t, addrs[old])
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, err := alone.ExecContext(ctx, "UPDATE t SET v = 100 WHERE k = 1")
	cancel()
	if err == nil {
		t.Fatalf("%s cut off committed a write", c.Nodes[old].Name)
	}
	c.Heal()
	if !waitFor(30*time.Second, func() bool { l := leaderOf(c, old); return l >= 0 && l != old }) {
		t.Fatalf("%s healed does not follow the new leader", c.Nodes[old].Name)
	}
	if v := valueOf(db, "SELECT v FROM t WHERE k = 1"); v != 2 {
		t.Fatalf("read %d after healing, want 2", v)
	}

	// A follower killed and started again; the leader paused.
	leader := leaderOf(c, 0)
	follower := (leader + 1) % len(c.Nodes)
	if err := c.Kill(follower); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "UPDATE t SET v = 3 WHERE k = 1")
	if err := c.Start(context.Background(), follower); err != nil {
		t.Fatalf("%s after kill: %v", c.Nodes[follower].Name, err)
	}
	if err := c.Pause(leader); err != nil {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool { l := leaderOf(c, follower); return l >= 0 && l != leader }) {
		t.Fatalf("the leader %s paused: no new leader", c.Nodes[leader].Name)
	}
	mustExec(t, db, "UPDATE t SET v = 4 WHERE k = 1")
	if err := c.Resume(leader); err != nil {
		t.Fatal(err)
	}
	if v := valueOf(db, "SELECT v FROM t WHERE k = 1"); v != 4 {
		t.Fatalf("read %d, want 4", v)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	now := leaderOf(c, 0)
	if n, err := c.CutClients(now); err != nil || n == 0 {
		t.Fatalf("cut %d connections to the leader, %v; want at least 1", n, err)
	}
	// The driver has no ping: a query shows the link is gone.
	if _, err := conn.ExecContext(context.Background(), "SELECT 1"); err == nil {
		t.Error("a connection whose proxy link was cut still answers")
	}
}
