package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// zkJars is the class path a ZooKeeper server runs with: Debian's
// zookeeper.jar (whose manifest names the libraries it needs) and the
// log4j binding of slf4j, without which the server logs nothing.
var zkJars = []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"}

// zkTick is the ZooKeeper tick of a zookeeper cluster, in milliseconds:
// a follower that hears nothing from its leader for zkSyncLimit ticks
// (2 s) leaves it and looks for another; a leader that hears from no
// quorum for as long steps down.
const (
	zkTick      = 500
	zkInitLimit = 20
	zkSyncLimit = 4
)

// upZookeeper stands up spec.Nodes ZooKeeper servers (Debian's
// zookeeper, run by java directly) as one ensemble. Each server has
// three ports: clients', the quorum port (followers to the leader) and
// the election port (leader election); each is behind a proxy of its
// own: the client proxy, the peer proxy (quorum) and a second peer proxy
// (election). Each server's configuration names its own ports and the
// other servers' proxies, so that every connection between servers goes
// through a proxy. A server that opens an election connection to one of
// higher id is answered by a connection back to the address it announces
// (its own election port): the election proxies rewrite that
// announcement to the proxy's address (same length), so that the
// connection back goes through the proxy too. Dynamic reconfiguration
// is off, so that the servers never adopt one another's view. With
// syncReads, the nodes' addresses ask the adapter to sync each znode
// before reading it.
func upZookeeper(ctx context.Context, c *Cluster, syncReads bool, say func(string)) error {
	java, err := exec.LookPath("java")
	if err != nil {
		return fmt.Errorf("zookeeper needs a Java runtime (Debian: default-jre-headless): %v", err)
	}
	for _, j := range zkJars {
		if _, err := os.Stat(j); err != nil {
			return fmt.Errorf("zookeeper needs ZooKeeper's jars (Debian: zookeeper): %v", err)
		}
	}
	n := c.Spec.Nodes
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	pairs := make([]int, 0, 2*n)
	for i := range n {
		pairs = append(pairs, ports[3*i], ports[3*i+1])
	}
	if err := proxiedNodes(c, pairs, "zookeeper.log"); err != nil {
		return err
	}
	var rewrite []replacement
	for i, node := range c.Nodes {
		p, err := newProxy(node.Name+"-election", "127.0.0.1:"+strconv.Itoa(ports[3*i+2]), c.whoIs)
		if err != nil {
			return err
		}
		node.more = append(node.more, p)
		rewrite = append(rewrite, replacement{from: []byte("127.0.0.1:" + strconv.Itoa(ports[3*i+2])), to: []byte(p.addr())})
	}
	for _, node := range c.Nodes {
		node.more[0].setRewrite(rewrite)
	}
	for i, node := range c.Nodes {
		top := filepath.Dir(node.Dir)
		if err := os.MkdirAll(node.Dir, 0o755); err != nil {
			return err
		}
		var conf strings.Builder
		fmt.Fprintf(&conf, "tickTime=%d\ninitLimit=%d\nsyncLimit=%d\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n",
			zkTick, zkInitLimit, zkSyncLimit, node.Dir, ports[3*i])
		conf.WriteString("admin.enableServer=false\nreconfigEnabled=false\n4lw.commands.whitelist=srvr,stat\n")
		if n > 1 {
			// A server's own line has its ports; the others', their
			// proxies.
			conf.WriteString("standaloneEnabled=false\n")
			for j, o := range c.Nodes {
				q, e := o.peer.addr(), o.more[0].addr()
				if j == i {
					q, e = "127.0.0.1:"+strconv.Itoa(ports[3*j+1]), "127.0.0.1:"+strconv.Itoa(ports[3*j+2])
				}
				fmt.Fprintf(&conf, "server.%d=%s:%s:participant\n", j+1, q, strings.TrimPrefix(e, "127.0.0.1:"))
			}
			if err := os.WriteFile(filepath.Join(node.Dir, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
				return err
			}
		}
		cfg := filepath.Join(top, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(conf.String()), 0o644); err != nil {
			return err
		}
		l4j := filepath.Join(top, "log4j.properties")
		if err := os.WriteFile(l4j, []byte(zkLog4j), 0o644); err != nil {
			return err
		}
		tmp := filepath.Join(top, "tmp")
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return err
		}
		// A small heap and the serial collector: three servers share the
		// machine with the workload. No perf data file in /tmp, no JMX.
		// IPv4 sockets, which the proxies' sockOwner finds in
		// /proc/net/tcp (Java's are IPv6 ones otherwise, in tcp6).
		args := []string{java, "-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
			"-Djava.io.tmpdir=" + tmp, "-Dlog4j.configuration=file:" + l4j,
			"-Dzookeeper.jmx.log4j.disable=true", "-Dzookeeper.admin.enableServer=false",
			"-cp", strings.Join(zkJars, ":"), "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg}
		node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, nil, args...) }
	}
	opts := ""
	if syncReads {
		opts = "?reads=sync"
	}
	c.dsn = func(i int) string { return "zookeeper://" + c.Nodes[i].client.addr() + opts }
	c.ready = func(ctx context.Context, i int) error { return zkReady(ctx, c, i) }
	// A partition drops packets rather than resetting connections: a
	// server learns it is cut off by its own timeouts (syncLimit), as
	// across a real network, and until then a follower answers reads
	// from its own state.
	c.isolate = func(i int) {
		for _, p := range c.Nodes[i].peers() {
			p.silence("*")
		}
		for j, o := range c.Nodes {
			if j != i {
				for _, p := range o.peers() {
					p.silence(c.Nodes[i].Name)
				}
			}
		}
	}
	// A server of an ensemble serves clients only once it follows or
	// leads, which takes a quorum: the servers start together.
	return startTogether(ctx, c, "zookeeper", say)
}

// zkLog4j sends the server's log to its standard output, which startProc
// writes to the node's log file.
const zkLog4j = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} - %-5p [%t:%C{1}@%L] - %m%n
`

// zkReady waits until server i, through its client proxy, gives a client
// a session and answers a sync (which its leader answers: the ensemble
// has a quorum).
func zkReady(ctx context.Context, c *Cluster, i int) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		return zkPing(ctx, c.Nodes[i].client.addr())
	})
}

// zkPing connects to the ZooKeeper server at addr (host:port), waits
// for a session and asks for a sync of the root: nil when the server
// serves clients and its ensemble has a leader.
func zkPing(ctx context.Context, addr string) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	conn, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false), zk.WithLogger(zkQuiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		select {
		case ev := <-events:
			if ev.State != zk.StateHasSession {
				continue
			}
			done := make(chan error, 1)
			go func() { _, err := conn.Sync("/"); done <- err }()
			select {
			case err := <-done:
				return err
			case <-t.C:
				return fmt.Errorf("%s: no answer to a sync", addr)
			}
		case <-t.C:
			return fmt.Errorf("%s: no session (state %v)", addr, conn.State())
		}
	}
}

// zkQuiet is a go-zookeeper logger that says nothing.
type zkQuiet struct{}

// Printf discards the message.
func (zkQuiet) Printf(string, ...any) {}
