package cluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkClient connects to node i through its client proxy (that server
// only) and waits for a session.
func zkClient(t *testing.T, c *Cluster, i int) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{c.Nodes[i].client.addr()}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no ZooKeeper session through %s's client proxy", c.Nodes[i].Name)
		}
	}
}

// zkWrites says whether a write through conn is acknowledged within two
// seconds.
func zkWrites(conn *zk.Conn) bool {
	done := make(chan error, 1)
	go func() {
		_, err := conn.Create("/isoscope-test-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(2 * time.Second):
		return false
	}
}

// serverSockets lists the established TCP connections of process pid:
// the local and the remote port of each.
func serverSockets(t *testing.T, pid int) [][2]int {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if ino, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var out [][2]int
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			// sl local remote st … inode: st 01 is ESTABLISHED.
			if len(fs) < 10 || fs[3] != "01" || !inodes[fs[9]] {
				continue
			}
			port := func(a string) int {
				v, _ := strconv.ParseInt(a[strings.LastIndexByte(a, ':')+1:], 16, 32)
				return int(v)
			}
			out = append(out, [2]int{port(fs[1]), port(fs[2])})
		}
	}
	return out
}

// TestZookeeper stands up three ZooKeeper servers: they listen on
// 127.0.0.1 only; every connection between them goes through a proxy
// (quorum and election, the election's connections back included), so
// that a server cut off from the others takes no write while the other
// two do, and takes writes again once healed; a killed server is
// started again on its data; a paused one does not answer.
func TestZookeeper(t *testing.T) {
	t.Parallel() // it stands up its own servers, on ports of its own
	c := up(t, "zookeeper:3")
	if got := c.DSNs()[0]; got != "zookeeper://"+c.Nodes[0].client.addr() {
		t.Errorf("n1's address is %s", got)
	}
	// Each pair of servers holds one election connection, opened (or
	// opened back) through the proxy of the server it reaches.
	election := 0
	for _, n := range c.Nodes {
		election += int(n.more[0].accepted.Load())
	}
	if election < 3 {
		t.Errorf("%d election connections went through the election proxies, want 3 or more", election)
	}
	// Whichever server leads, the two that follow opened their quorum
	// connections through its peer proxy.
	quorum := 0
	for _, n := range c.Nodes {
		quorum += int(n.peer.accepted.Load())
	}
	if quorum < 2 {
		t.Errorf("%d quorum connections went through the peer proxies, want 2 or more", quorum)
	}
	// No server holds a connection to another server's own port: each of
	// its connections is one it accepted on a port of its own, or one
	// it opened to a proxy.
	proxies := map[int]bool{}
	for _, n := range c.Nodes {
		for _, p := range append(n.peers(), n.client) {
			proxies[p.port()] = true
		}
	}
	for _, n := range c.Nodes {
		own := map[int]bool{}
		for _, p := range append(n.peers(), n.client) {
			own[targetPort(p)] = true
		}
		for _, s := range serverSockets(t, n.proc.pid()) {
			if !own[s[0]] && !proxies[s[1]] {
				t.Errorf("%s holds a connection from port %d to port %d, which is no proxy", n.Name, s[0], s[1])
			}
		}
	}

	w := zkClient(t, c, 1)
	if !waitFor(30*time.Second, func() bool { return zkWrites(w) }) {
		t.Fatal("the ensemble takes no write")
	}
	cut := zkClient(t, c, 0)
	if err := c.Isolate(0); err != nil {
		t.Fatal(err)
	}
	if !waitFor(20*time.Second, func() bool { return !zkWrites(cut) }) {
		t.Error("n1, cut off from the others, still commits writes")
		for _, n := range c.Nodes {
			t.Logf("%s's log:\n%s", n.Name, logTail(n.Log, 25))
		}
	}
	if !waitFor(30*time.Second, func() bool { return zkWrites(w) || zkWrites(zkClient(t, c, 2)) }) {
		t.Error("n2 and n3 take no write while n1 is cut off")
	}
	c.Heal()
	if !waitFor(60*time.Second, func() bool { return zkWrites(zkClient(t, c, 0)) }) {
		t.Error("n1 takes no write after the partition healed")
	}
	if err := c.Kill(2); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context(), 2); err != nil {
		t.Fatalf("n3 after a kill: %v", err)
	}
	paused := zkClient(t, c, 2)
	if !zkWrites(paused) {
		t.Error("n3 takes no write after it was killed and started again")
	}
	if err := c.Pause(2); err != nil {
		t.Fatal(err)
	}
	if zkWrites(paused) {
		t.Error("n3, paused, answered")
	}
	if err := c.Resume(2); err != nil {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool { return zkWrites(zkClient(t, c, 2)) }) {
		t.Error("n3 takes no write after it was resumed")
	}
}

// targetPort is the port a proxy forwards to.
func targetPort(p *proxy) int {
	v, _ := strconv.Atoi(p.target[strings.LastIndexByte(p.target, ':')+1:])
	return v
}
