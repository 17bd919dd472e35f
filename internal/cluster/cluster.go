package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is a kind of cluster isoscope can stand up.
type Kind string

// The kinds of clusters.
const (
	// Galera is MariaDB with the Galera 4 provider: n multi-master nodes.
	Galera Kind = "galera"
	// PostgresStandby is a PostgreSQL primary with n-1 hot standbys
	// (streaming replication); sessions write on the primary and read on
	// a standby.
	PostgresStandby Kind = "postgres-standby"
	// Etcd is n etcd members.
	Etcd Kind = "etcd"
	// Dqlite is n dqlite nodes (Debian's dqlite-demo), at most three of
	// them voters; transactions go to the leader.
	Dqlite Kind = "dqlite"
	// TiDB is one tidb-server on its unistore engine, in pessimistic
	// transaction mode (TiDB's default); opt-in, built by `make tidb`.
	TiDB Kind = "tidb"
	// TiDBOptimistic is TiDB in optimistic transaction mode: write
	// conflicts are found at COMMIT (error 9007).
	TiDBOptimistic Kind = "tidb-optimistic"
	// Dolt is one `dolt sql-server`; opt-in, built by `make dolt`.
	Dolt Kind = "dolt"
	// NatsKV is n nats-server processes (Debian's nats-server) as one
	// JetStream cluster, serving a key-value bucket of min(n, 3) replicas.
	NatsKV Kind = "nats-kv"
	// NatsKVLeader is NatsKV whose bucket's reads are all answered by the
	// stream's leader (direct gets off), rather than by any replica.
	NatsKVLeader Kind = "nats-kv-leader"
	// Zookeeper is n ZooKeeper servers (Debian's zookeeper) as one
	// ensemble.
	Zookeeper Kind = "zookeeper"
	// ZookeeperSync is Zookeeper whose clients sync a znode before each
	// read of it (the adapter's reads=sync).
	ZookeeperSync Kind = "zookeeper-sync"
	// Redis is n redis-server processes (Debian's redis-server), a
	// primary and n-1 replicas, with three sentinels (redis-sentinel)
	// that fail the primary over; clients find the primary through the
	// sentinels.
	Redis Kind = "redis"
	// RedisWait is Redis whose clients follow every write with WAIT for
	// RedisWaitReplicas(n) replicas.
	RedisWait Kind = "redis-wait"
	// RedisReplicaReads is Redis whose transactions that only read run
	// on a replica.
	RedisReplicaReads Kind = "redis-replica-reads"
	// PGAutoFailover is pg_auto_failover (Debian's
	// postgresql-15-auto-failover): a monitor and n PostgreSQL 15 nodes,
	// one primary and n-1 secondaries in synchronous replication (every
	// secondary in the replication quorum: a commit waits for one of
	// them); the monitor promotes a secondary when the primary fails.
	PGAutoFailover Kind = "pg-auto-failover"
	// PGAutoFailoverAsync is PGAutoFailover with asynchronous replication
	// (no secondary in the replication quorum: a commit waits for none).
	PGAutoFailoverAsync Kind = "pg-auto-failover-async"
)

// Kinds lists the kinds in the order the help shows them.
var Kinds = []Kind{Galera, PostgresStandby, Etcd, Dqlite, NatsKV, NatsKVLeader, Zookeeper, ZookeeperSync, Redis, RedisWait, RedisReplicaReads, PGAutoFailover, PGAutoFailoverAsync, TiDB, TiDBOptimistic, Dolt}

// Spec says what to stand up: the kind and the number of nodes.
type Spec struct {
	Kind  Kind
	Nodes int
}

// String is the spec as ParseSpec reads it ("galera:3").
func (s Spec) String() string { return string(s.Kind) + ":" + strconv.Itoa(s.Nodes) }

// ParseSpec reads KIND[:NODES]: galera:3, postgres-standby:2 (also pg,
// postgres), etcd:3, dqlite:3, nats-kv:3, nats-kv-leader:3, zookeeper:3
// (also zk), zookeeper-sync:3, pg-auto-failover:3 (also pgaf),
// pg-auto-failover-async:3; without NODES the kind's default (3 for
// galera, etcd, dqlite, nats-kv, zookeeper and pg-auto-failover, 2 for
// postgres-standby; redis:N, redis-wait:N and redis-replica-reads:N are
// N data nodes, default 3, beside three sentinels). tidb (also
// tidb-pessimistic), tidb-optimistic and dolt are one server each: their
// only size is 1.
func ParseSpec(s string) (Spec, error) {
	name, n, hasN := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	var sp Spec
	switch name {
	case "galera", "mariadb-galera":
		sp = Spec{Kind: Galera, Nodes: 3}
	case "postgres-standby", "postgres", "pg", "postgresql":
		sp = Spec{Kind: PostgresStandby, Nodes: 2}
	case "etcd":
		sp = Spec{Kind: Etcd, Nodes: 3}
	case "dqlite":
		sp = Spec{Kind: Dqlite, Nodes: 3}
	case "nats-kv", "nats", "natskv", "jetstream":
		sp = Spec{Kind: NatsKV, Nodes: 3}
	case "nats-kv-leader":
		sp = Spec{Kind: NatsKVLeader, Nodes: 3}
	case "zookeeper", "zk":
		sp = Spec{Kind: Zookeeper, Nodes: 3}
	case "zookeeper-sync", "zk-sync":
		sp = Spec{Kind: ZookeeperSync, Nodes: 3}
	case "redis", "redis-sentinel":
		sp = Spec{Kind: Redis, Nodes: 3}
	case "redis-wait":
		sp = Spec{Kind: RedisWait, Nodes: 3}
	case "redis-replica-reads":
		sp = Spec{Kind: RedisReplicaReads, Nodes: 3}
	case "pg-auto-failover", "pg_auto_failover", "pgaf", "pg-auto-failover-sync":
		sp = Spec{Kind: PGAutoFailover, Nodes: 3}
	case "pg-auto-failover-async", "pgaf-async":
		sp = Spec{Kind: PGAutoFailoverAsync, Nodes: 3}
	case "tidb", "tidb-pessimistic":
		sp = Spec{Kind: TiDB, Nodes: 1}
	case "tidb-optimistic":
		sp = Spec{Kind: TiDBOptimistic, Nodes: 1}
	case "dolt":
		sp = Spec{Kind: Dolt, Nodes: 1}
	default:
		return Spec{}, fmt.Errorf("cluster %q: unknown kind %q (galera[:N], postgres-standby[:N], etcd[:N], dqlite[:N], nats-kv[:N], nats-kv-leader[:N], zookeeper[:N], zookeeper-sync[:N], redis[:N], redis-wait[:N], redis-replica-reads[:N], pg-auto-failover[:N], pg-auto-failover-async[:N], tidb, tidb-optimistic or dolt)", s, name)
	}
	if hasN {
		k, err := strconv.Atoi(n)
		if err != nil {
			return Spec{}, fmt.Errorf("cluster %q: the number of nodes %q is not a number", s, n)
		}
		sp.Nodes = k
	}
	lo, hi := 1, 9
	if sp.Kind == PostgresStandby {
		lo = 2
	}
	if (sp.Kind == RedisWait || sp.Kind == RedisReplicaReads) && sp.Nodes < 2 {
		return Spec{}, fmt.Errorf("cluster %q: %s needs a replica: 2 to %d nodes", s, sp.Kind, hi)
	}
	if sp.Kind == PGAutoFailover || sp.Kind == PGAutoFailoverAsync {
		lo = 2 // a primary and at least one secondary to fail over to
	}
	if sp.Kind == Dqlite && sp.Nodes == 2 {
		// go-dqlite's app keeps a joining node a spare until the cluster
		// has three: two nodes would be one voter and a spare.
		return Spec{}, fmt.Errorf("cluster %q: dqlite takes 1 or 3 to %d nodes (a second node stays a spare until a third joins)", s, hi)
	}
	if single(sp.Kind) && sp.Nodes != 1 {
		return Spec{}, fmt.Errorf("cluster %q: %s is stood up as one server, not a replicated cluster: %s or %s:1", s, sp.Kind, sp.Kind, sp.Kind)
	}
	if sp.Nodes < lo || sp.Nodes > hi {
		return Spec{}, fmt.Errorf("cluster %q: %s takes %d to %d nodes", s, sp.Kind, lo, hi)
	}
	return sp, nil
}

// Node is one server of a cluster.
type Node struct {
	// Name is the node's name in the cluster and in fault records
	// ("n1", "n2", …).
	Name string
	// Dir is the node's data directory; Log its log file.
	Dir, Log string
	// Role is "primary", "standby" or "" (a multi-master node).
	Role string

	proc *proc
	// client forwards the clients' connections to the node's SQL port;
	// peer forwards the other nodes' connections to the node's peer port.
	client, peer *proxy
	// more are further peer proxies, blocked and healed with peer
	// (ZooKeeper's election port).
	more []*proxy
	// links are further proxies of the node's, closed with the others
	// (pg-auto-failover: its keeper's link to the monitor).
	links []*proxy
	// launch starts the node's server once more (on its existing data).
	launch func() (*proc, error)
	paused bool
	// clock is the node's libfaketime control file ("" when it runs
	// without libfaketime).
	clock string
}

// Cluster is a running cluster: its nodes, their processes and proxies.
type Cluster struct {
	Spec Spec
	// Dir holds the nodes' directories and the state file; Stop removes
	// it.
	Dir   string
	Nodes []*Node
	// aux are the cluster's processes that serve it but are no nodes the
	// faults break (Redis's sentinels): stopped with it, named to the
	// proxies, recorded in the state file.
	aux []*Node
	// ReadyTimeout bounds how long Start and Restart wait for a node.
	ReadyTimeout time.Duration
	// ownDir says Dir was made by Up and is removed by Stop.
	ownDir bool
	mu     sync.Mutex
	// ready waits for node i to answer clients.
	ready func(ctx context.Context, i int) error
	// dsn is node i's address for clients, through its proxy.
	dsn func(i int) string
	// isolate, when set, cuts node i off in the kind's own way.
	isolate func(i int)
	// primary, when set, finds the node that is the primary now.
	primary func(ctx context.Context) (int, error)
	stopped bool
	// clocks starts every node under libfaketime (WithClocks).
	clocks bool
}

// Up stands up a cluster of spec's kind under dir (a fresh directory in
// the system's temporary directory when dir is ""), and returns when every
// node answers clients. On failure it stops what it started and removes
// the directory it made. The log says what it is doing (nil: nothing).
func Up(ctx context.Context, spec Spec, dir string, log func(string), opts ...Option) (*Cluster, error) {
	if log == nil {
		log = func(string) {}
	}
	if err := Built(spec.Kind); err != nil {
		return nil, err
	}
	c := &Cluster{Spec: spec, ReadyTimeout: 90 * time.Second}
	for _, o := range opts {
		o(c)
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "isoscope-cluster-")
		if err != nil {
			return nil, err
		}
		dir, c.ownDir = d, true
	} else {
		// The servers are given paths under it from their own working
		// directories (PostgreSQL's socket lock, Galera's state files):
		// a relative name would not find them.
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		dir = abs
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return nil, fmt.Errorf("cluster directory %s is not empty (isoscope cluster down %s stops and removes an old cluster)", dir, dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		c.ownDir = true
	}
	// The servers run as their own users, which must reach their
	// directories.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	c.Dir = dir
	if err := reachable(dir); err != nil {
		c.Stop()
		return nil, err
	}
	if c.clocks {
		if err := ClockSkew(spec.Kind); err != nil {
			c.Stop()
			return nil, err
		}
	}
	var err error
	switch spec.Kind {
	case Galera:
		err = upGalera(ctx, c, log)
	case PostgresStandby:
		err = upPostgres(ctx, c, log)
	case Etcd:
		err = upEtcd(ctx, c, log)
	case Dqlite:
		err = upDqlite(ctx, c, log)
	case NatsKV, NatsKVLeader:
		err = upNatsKV(ctx, c, spec.Kind == NatsKVLeader, log)
	case Zookeeper, ZookeeperSync:
		err = upZookeeper(ctx, c, spec.Kind == ZookeeperSync, log)
	case Redis, RedisWait, RedisReplicaReads:
		wait := 0
		if spec.Kind == RedisWait {
			wait = RedisWaitReplicas(spec.Nodes)
		}
		err = upRedis(ctx, c, wait, spec.Kind == RedisReplicaReads, log)
	case PGAutoFailover, PGAutoFailoverAsync:
		err = upPGAutoFailover(ctx, c, spec.Kind == PGAutoFailoverAsync, log)
	case TiDB, TiDBOptimistic:
		err = upTiDB(ctx, c, spec.Kind == TiDBOptimistic, log)
	case Dolt:
		err = upDolt(ctx, c, log)
	default:
		err = fmt.Errorf("unknown cluster kind %q", spec.Kind)
	}
	if err == nil {
		err = c.writeState()
	}
	if err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// proxiedNodes adds a node to c for each pair of ports: node i is n(i+1),
// with its directory under c.Dir (its data in data, its log logName), a
// client proxy to ports[2i] and a peer proxy to ports[2i+1], which knows
// the nodes that dial it.
func proxiedNodes(c *Cluster, ports []int, logName string) error {
	for i := range len(ports) / 2 {
		name := "n" + strconv.Itoa(i+1)
		dir := filepath.Join(c.Dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		node := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, logName)}
		var err error
		if node.client, err = newProxy(name+"-client", "127.0.0.1:"+strconv.Itoa(ports[2*i]), nil); err != nil {
			return err
		}
		if node.peer, err = newProxy(name+"-peer", "127.0.0.1:"+strconv.Itoa(ports[2*i+1]), c.whoIs); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	return nil
}

// startTogether launches every node's server, then waits (each at most
// ReadyTimeout) until each is ready: for the kinds whose nodes are ready
// only once a quorum of them runs. name prefixes what it says and its
// errors.
func startTogether(ctx context.Context, c *Cluster, name string, say func(string)) error {
	for _, node := range c.Nodes {
		say(name + ": starting " + node.Name)
		p, err := node.launch()
		if err != nil {
			return err
		}
		c.mu.Lock()
		node.proc = p
		c.mu.Unlock()
	}
	for i, node := range c.Nodes {
		rctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
		err := c.ready(rctx, i)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %s: %v; %s", name, node.Name, err, logExcerpt(node.Log))
		}
	}
	return nil
}

// DSNs are the clients' addresses of the nodes, in node order, each
// through the node's client proxy.
func (c *Cluster) DSNs() []string {
	out := make([]string, len(c.Nodes))
	for i := range c.Nodes {
		out[i] = c.dsn(i)
	}
	return out
}

// node returns node i, or an error naming the range.
func (c *Cluster) node(i int) (*Node, error) {
	if i < 0 || i >= len(c.Nodes) {
		return nil, fmt.Errorf("no node %d (the cluster has %d)", i, len(c.Nodes))
	}
	return c.Nodes[i], nil
}

// Isolate cuts node i off from every other node: its peer proxy refuses
// and drops the others' connections, and theirs refuse and drop its. The
// clients still reach it.
func (c *Cluster) Isolate(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(i)
	if err != nil {
		return err
	}
	if c.isolate != nil {
		c.isolate(i)
		return nil
	}
	for _, p := range n.peers() {
		p.block("*")
	}
	for _, o := range c.Nodes {
		if o != n {
			for _, p := range o.peers() {
				p.block(n.Name)
			}
		}
	}
	return nil
}

// Primary returns the index of the node that is the primary now, for the
// kinds whose primary moves (pg-auto-failover: as its monitor has it),
// or an error: for the other kinds, or when there is no one primary.
func (c *Cluster) Primary(ctx context.Context) (int, error) {
	if c.primary == nil {
		return 0, fmt.Errorf("%s has no primary that moves", c.Spec.Kind)
	}
	return c.primary(ctx)
}

// Heal lets every node reach every other again.
func (c *Cluster) Heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.Nodes {
		for _, p := range n.peers() {
			p.unblock()
		}
		for _, l := range n.links {
			l.unblock()
		}
	}
}

// peers are the node's peer proxies.
func (n *Node) peers() []*proxy {
	if n.peer == nil {
		return n.more
	}
	return append([]*proxy{n.peer}, n.more...)
}

// Kill sends SIGKILL to node i's server (its whole process group).
func (c *Cluster) Kill(i int) error {
	p, err := c.running(i)
	if err != nil {
		return err
	}
	p.kill()
	return nil
}

// StopNode stops node i's server gracefully (SIGTERM; SIGKILL after a
// grace period).
func (c *Cluster) StopNode(i int) error {
	p, err := c.running(i)
	if err != nil {
		return err
	}
	p.stop(30 * time.Second)
	return nil
}

// running returns node i's server process, if it runs. The lock is not
// held while a caller waits for the process: the proxies ask whoIs,
// which takes it.
func (c *Cluster) running(i int) (*proc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(i)
	if err != nil {
		return nil, err
	}
	if n.proc == nil || n.proc.exited() {
		return nil, fmt.Errorf("%s is not running", n.Name)
	}
	n.paused = false
	return n.proc, nil
}

// Start starts node i's server again on its data, if it is not running,
// and waits until it answers clients (at most ReadyTimeout).
func (c *Cluster) Start(ctx context.Context, i int) error {
	c.mu.Lock()
	n, err := c.node(i)
	if err != nil || c.stopped {
		c.mu.Unlock()
		if err == nil {
			err = errors.New("the cluster is stopped")
		}
		return err
	}
	if n.proc != nil && !n.proc.exited() {
		c.mu.Unlock()
		return nil
	}
	p, err := n.launch()
	if err != nil {
		c.mu.Unlock()
		return err
	}
	n.proc = p
	c.mu.Unlock()
	_ = c.writeState()
	rctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
	defer cancel()
	if err := c.ready(rctx, i); err != nil {
		return fmt.Errorf("%w; %s", err, logExcerpt(n.Log))
	}
	return nil
}

// logExcerpt is what a failed start's error shows of the node's log: the
// last lines that report an error or a failure (the cause is often well
// before the shutdown lines at the end), then the end of the log.
func logExcerpt(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "its log: (" + err.Error() + ")"
	}
	var bad []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if failureLine.MatchString(l) {
			bad = append(bad, l)
		}
	}
	out := ""
	if len(bad) > 0 {
		bad = bad[max(0, len(bad)-12):]
		out = "its errors:\n  " + strings.Join(bad, "\n  ") + "\n"
	}
	return out + "the end of its log:\n" + logTail(file, 8)
}

// failureLine matches a log line that reports an error or a failure.
var failureLine = regexp.MustCompile(`(?i)\[error\]|\bfatal\b|\bfailed\b|\babort`)

// logTail returns the last lines of a log file, indented.
func logTail(file string, lines int) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	ls = ls[max(0, len(ls)-lines):]
	return "  " + strings.Join(ls, "\n  ")
}

// Pause stops node i's server with SIGSTOP; Resume continues it.
func (c *Cluster) Pause(i int) error { return c.pause(i, true) }

// Resume continues node i's server with SIGCONT.
func (c *Cluster) Resume(i int) error { return c.pause(i, false) }

func (c *Cluster) pause(i int, stop bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.node(i)
	if err != nil {
		return err
	}
	if n.proc == nil {
		return fmt.Errorf("%s is not running", n.Name)
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := n.proc.signalTree(sig); err != nil {
		return err
	}
	n.paused = stop
	return nil
}

// CutClients drops every client connection to node i, and says how many
// it dropped.
func (c *Cluster) CutClients(i int) (int, error) {
	n, err := c.node(i)
	if err != nil {
		return 0, err
	}
	return n.client.cut(), nil
}

// stopGrace is how long Stop lets a server stop cleanly before SIGKILL:
// the data is removed anyway, and etcd's last member, without a quorum,
// takes about ten seconds to leave.
const stopGrace = 5 * time.Second

// Stop stops every node's server (SIGCONT, SIGTERM, then SIGKILL after
// stopGrace), closes the proxies and removes the directory Up made.
// It may be called more than once.
func (c *Cluster) Stop() {
	// The lock is not held while waiting: the proxies ask whoIs, which
	// takes it.
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range c.all() {
		if n.proc != nil {
			wg.Go(func() { n.proc.stop(stopGrace) })
		}
	}
	wg.Wait()
	for _, n := range c.all() {
		for _, p := range append(append([]*proxy{n.client}, n.peers()...), n.links...) {
			if p != nil {
				p.close()
			}
		}
	}
	if c.ownDir && c.Dir != "" {
		_ = os.RemoveAll(c.Dir)
	}
}

// all is the nodes and then the auxiliary processes.
func (c *Cluster) all() []*Node {
	return append(c.Nodes[:len(c.Nodes):len(c.Nodes)], c.aux...)
}

// pids maps the running servers' process ids to their nodes' names.
func (c *Cluster) pids() map[int]string {
	out := map[int]string{}
	for _, n := range c.all() {
		if n.proc != nil && !n.proc.exited() {
			out[n.proc.pid()] = n.Name
		}
	}
	return out
}

// whoIs names the node whose server opened the connection from port.
func (c *Cluster) whoIs(port int) string {
	c.mu.Lock()
	pids := c.pids()
	c.mu.Unlock()
	return sockOwner(port, pids)
}

// lookupAccount finds a system user.
func lookupAccount(name string) (*account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the %s user is needed to run its server: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// chown gives dir (recursively) to a, when isoscope runs as root.
func chown(dir string, a *account) error {
	if os.Geteuid() != 0 || a == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(a.uid), int(a.gid))
	})
}

// freePorts returns n distinct free ports.
func freePorts(n int) ([]int, error) {
	out := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for range n {
		ln, err := listenFree(true)
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// poll calls try every interval until it succeeds or ctx ends, and then
// returns its last error; or at once when try says the node's server
// exited (exitedError), which waiting longer cannot mend.
func poll(ctx context.Context, interval time.Duration, try func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := try(actx)
		cancel()
		if err == nil {
			return nil
		}
		var exited *exitedError
		if errors.As(err, &exited) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}

// NodeNames names the nodes, in order.
func (c *Cluster) NodeNames() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Name
	}
	return out
}

// reachable says which directory above dir other users cannot enter:
// the servers run as their own users (mysql, postgres).
func reachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("cluster directory %s: the servers run as their own users, who cannot enter %s (mode %v): choose a directory they can reach", dir, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// runningNow says whether node i's server is running: an exitedError
// naming its log when it exited.
func (c *Cluster) runningNow(i int) error {
	c.mu.Lock()
	p := c.Nodes[i].proc
	c.mu.Unlock()
	if p == nil || p.exited() {
		return &exitedError{name: c.Nodes[i].Name, log: c.Nodes[i].Log}
	}
	return nil
}

// exitedError is a node whose server exited while it was waited for.
type exitedError struct{ name, log string }

// Error names the node and its log.
func (e *exitedError) Error() string { return fmt.Sprintf("%s exited (log: %s)", e.name, e.log) }
