package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pgAutoCtl is Debian's pg_autoctl (package pg-auto-failover-cli; the
// monitor's extension is in postgresql-15-auto-failover).
const pgAutoCtl = "/usr/bin/pg_autoctl"

// pgafListen is the loopback address the pg-auto-failover nodes'
// PostgreSQL servers listen on. A node registers its host and port with
// the monitor, which hands them to the other nodes (replication) and
// dials them itself (health checks); pg_autoctl makes PostgreSQL listen
// on that same port. So the node's peer proxy takes the port on
// 127.0.0.1, the address the node registers, and forwards to the server
// on the same port of 127.0.0.2, still the loopback interface: every
// other node's and the monitor's connection to a node passes its proxy.
const pgafListen = "127.0.0.2"

// The pg-auto-failover timeouts, shortened from pg_auto_failover's
// defaults (20 s each) so that a failover fits in a short run; the
// monitor's and the keeper's stay equal, as the defaults are.
const (
	// pgafUnhealthyMS is the monitor's
	// pgautofailover.node_considered_unhealthy_timeout: a node whose
	// health checks failed this long is unhealthy (a primary: failed
	// over).
	pgafUnhealthyMS = 6000
	// pgafPartitionS is the keeper's timeout.network_partition_timeout:
	// a primary that reaches neither the monitor nor any standby this
	// long demotes itself.
	pgafPartitionS = 6
)

// MovingPrimary says whether a kind's primary moves (a failover), so that
// Primary finds it and the faults of the primary apply.
func MovingPrimary(k Kind) bool { return k == PGAutoFailover || k == PGAutoFailoverAsync }

// upPGAutoFailover stands up a pg_auto_failover monitor and spec.Nodes
// PostgreSQL nodes (n1 the first primary; the others secondaries, made
// by pg_autoctl from the primary), each run by its own `pg_autoctl run`
// as the postgres user (PostgreSQL refuses root), each in its own
// directory (data, pg_autoctl's configuration and state, log) on its own
// ports. With async no secondary takes part in the replication quorum
// (replication-quorum false: synchronous_standby_names is empty); else
// every one does, and a commit waits for one of them (pg_auto_failover's
// default, number_sync_standbys 0: "ANY 1").
//
// The monitor is the last node, "monitor", role "monitor" (its peer
// proxy only holds its port). Each data node has a peer proxy (the
// address it registers, see pgafListen), a client proxy, and a proxy of
// its own to the monitor (its keeper's link). Isolate cuts all three kinds of link of a node: nobody reaches
// its peer proxy, its keeper does not reach the monitor, its WAL
// receiver does not reach the primary; the clients still reach it.
// Isolating the monitor cuts every keeper's link and the health checks.
// Clients are given every node's client proxy, their own first, with
// target_session_attrs=read-write: a session follows the primary.
func upPGAutoFailover(ctx context.Context, c *Cluster, async bool, say func(string)) error {
	for _, f := range []string{pgAutoCtl, filepath.Join(pgBin, "pg_ctl"), filepath.Join(pgBin, "postgres")} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("pg-auto-failover needs %s (Debian: pg-auto-failover-cli, postgresql-15-auto-failover): %v", f, err)
		}
	}
	if out, err := exec.Command(filepath.Join(pgBin, "pg_config"), "--sharedir").Output(); err == nil {
		ext := filepath.Join(strings.TrimSpace(string(out)), "extension", "pgautofailover.control")
		if _, err := os.Stat(ext); err != nil {
			return fmt.Errorf("pg-auto-failover's monitor needs the pgautofailover extension (Debian: postgresql-15-auto-failover): %v", err)
		}
	}
	pgUser, err := lookupAccount("postgres")
	if err != nil {
		return err
	}
	n := c.Spec.Nodes
	// The nodes' peer proxies name the node behind a connection by any
	// process of its tree (WAL receivers are PostgreSQL's children).
	whoIs := func(port int) string {
		c.mu.Lock()
		pids := map[int]string{}
		for _, node := range c.Nodes {
			if node.proc != nil && !node.proc.exited() {
				for _, pid := range tree(node.proc.pid()) {
					pids[pid] = node.Name
				}
			}
		}
		c.mu.Unlock()
		return sockOwner(port, pids)
	}
	monitor := &Node{Name: "monitor", Role: "monitor"}
	monDir := filepath.Join(c.Dir, "monitor")
	monitor.Dir, monitor.Log = filepath.Join(monDir, "data"), filepath.Join(monDir, "pg_autoctl.log")
	if monitor.peer, err = newMirrorProxy("monitor-peer", pgafListen, whoIs); err != nil {
		return err
	}
	monPort := monitor.peer.port()
	if monitor.client, err = newProxy("monitor-client", pgafListen+":"+strconv.Itoa(monPort), nil); err != nil {
		return err
	}
	dirs := []string{monDir}
	var nodes []*Node
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		dir := filepath.Join(c.Dir, name)
		node := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "pg_autoctl.log")}
		if node.peer, err = newMirrorProxy(name+"-peer", pgafListen, whoIs); err != nil {
			return err
		}
		if node.client, err = newProxy(name+"-client", pgafListen+":"+strconv.Itoa(node.peer.port()), nil); err != nil {
			return err
		}
		link, err := newProxy(name+"-monitor", pgafListen+":"+strconv.Itoa(monPort), nil)
		if err != nil {
			return err
		}
		node.links = []*proxy{link}
		nodes = append(nodes, node)
		dirs = append(dirs, dir)
	}
	c.Nodes = append(nodes, monitor)
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := chown(d, pgUser); err != nil {
			return err
		}
	}
	env := func(dir string) []string {
		return []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_DATA_HOME=" + filepath.Join(dir, "share"),
			"XDG_RUNTIME_DIR=" + filepath.Join(dir, "run"), "PATH=" + pgBin + ":/usr/bin:/bin", "PGCONNECT_TIMEOUT=2"}
	}
	ctl := func(args ...string) []string { return append([]string{pgAutoCtl}, args...) }
	monURI := func(node *Node) string {
		return "postgres://autoctl_node@" + node.links[0].addr() + "/pg_auto_failover?sslmode=disable"
	}
	monitorDSN := "postgres://postgres@" + monitor.client.addr() + "/pg_auto_failover?sslmode=disable&connect_timeout=3"

	// The monitor: created, its health checks quickened, then run.
	say("pg-auto-failover: creating the monitor")
	if err := runEnv("pg_autoctl create monitor", filepath.Join(monDir, "create.log"), pgUser, env(monDir), 3*time.Minute,
		ctl("create", "monitor", "--pgdata", monitor.Dir, "--pgport", strconv.Itoa(monPort), "--listen", pgafListen,
			"--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl")...); err != nil {
		return err
	}
	monConf := fmt.Sprintf(`
# isoscope: health checks and failover quickened for short runs
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = %d
fsync = off
full_page_writes = off
`, pgafUnhealthyMS)
	if err := appendFile(filepath.Join(monitor.Dir, "postgresql.conf"), monConf); err != nil {
		return err
	}
	monArgs := ctl("run", "--pgdata", monitor.Dir)
	monitor.launch = func() (*proc, error) {
		p, err := startProc(monitor.Name, monitor.Log, pgUser, env(monDir), monArgs...)
		if p != nil {
			p.quit = syscall.SIGINT // pg_autoctl's fast shutdown
		}
		return p, err
	}
	monIndex := len(c.Nodes) - 1
	c.dsn = func(i int) string {
		if i == monIndex {
			return monitorDSN
		}
		hosts := []string{c.Nodes[i].client.addr()}
		for j, o := range c.Nodes[:monIndex] {
			if j != i {
				hosts = append(hosts, o.client.addr())
			}
		}
		return "postgres://postgres@" + strings.Join(hosts, ",") + "/test?sslmode=disable&connect_timeout=3&target_session_attrs=read-write"
	}
	c.ready = func(ctx context.Context, i int) error {
		if i == monIndex {
			return pgafMonitorReady(ctx, c, i, monitorDSN)
		}
		return pgafNodeReady(ctx, c, i, monitorDSN)
	}
	c.isolate = func(i int) {
		if i == monIndex {
			// The keepers' links, and the health checks.
			for _, node := range c.Nodes[:monIndex] {
				node.links[0].block("*")
				node.peer.block(monitor.Name)
			}
			return
		}
		node := c.Nodes[i]
		node.peer.block("*")
		node.links[0].block("*")
		for _, o := range c.Nodes[:monIndex] {
			if o != node {
				o.peer.block(node.Name)
			}
		}
	}
	c.primary = func(ctx context.Context) (int, error) { return pgafPrimary(ctx, c, monitorDSN) }
	say("pg-auto-failover: starting the monitor")
	if err := c.Start(ctx, monIndex); err != nil {
		return fmt.Errorf("pg-auto-failover: the monitor: %v", err)
	}

	// The data nodes, one at a time: n1 becomes the primary (single,
	// then primary once a secondary follows), each other a secondary.
	for i, node := range c.Nodes[:monIndex] {
		dir := filepath.Dir(node.Dir)
		create := ctl("create", "postgres", "--pgdata", node.Dir, "--pgport", strconv.Itoa(node.peer.port()),
			"--listen", pgafListen, "--pghost", pgafListen, "--hostname", "127.0.0.1", "--name", node.Name,
			"--username", "postgres", "--dbname", "test", "--monitor", monURI(node), "--auth", "trust", "--no-ssl",
			"--replication-quorum", strconv.FormatBool(!async))
		runArgs := ctl("run", "--pgdata", node.Dir)
		node.launch = func() (*proc, error) {
			p, err := startProc(node.Name, node.Log, pgUser, env(dir), runArgs...)
			if p != nil {
				p.quit = syscall.SIGINT
			}
			return p, err
		}
		if i > 1 {
			// A standby joins a settled group: the primary in state
			// primary, the others secondaries (a create that meets the
			// group still moving can give up).
			if err := pgafSettled(ctx, c, monitorDSN, i, c.ReadyTimeout); err != nil {
				return fmt.Errorf("pg-auto-failover: before creating %s: %v", node.Name, err)
			}
		}
		say("pg-auto-failover: creating " + node.Name)
		if err := runEnv("pg_autoctl create postgres", node.Log, pgUser, env(dir), 3*time.Minute, create...); err != nil {
			// A create that registered the node and wrote its
			// configuration but stopped short (a timeout of its own on a
			// loaded machine) is completed by pg_autoctl run ("the
			// `pg_autoctl create` did not complete, completing now").
			cfg := filepath.Join(dir, "config", "pg_autoctl", strings.TrimPrefix(node.Dir, "/"), "pg_autoctl.cfg")
			if _, serr := os.Stat(cfg); serr != nil {
				return fmt.Errorf("pg-auto-failover: %s: pg_autoctl create: %v; %s", node.Name, err, logExcerpt(node.Log))
			}
			say(fmt.Sprintf("pg-auto-failover: %s: pg_autoctl create ended early (%v); pg_autoctl run completes it", node.Name, err))
		}
		// The keeper reads its timeouts when it starts.
		if err := runEnv("pg_autoctl config set", filepath.Join(dir, "config.log"), pgUser, env(dir), time.Minute,
			ctl("config", "set", "--pgdata", node.Dir, "timeout.network_partition_timeout", strconv.Itoa(pgafPartitionS))...); err != nil {
			return err
		}
		say("pg-auto-failover: starting " + node.Name)
		if err := c.Start(ctx, i); err != nil {
			return fmt.Errorf("pg-auto-failover: %s: %v", node.Name, err)
		}
		if i == 0 {
			// pg_autoctl's pg_basebackup asks for a spread checkpoint
			// (minutes at the defaults): checkpoints are made at once.
			// The secondaries copy these settings with the data.
			if err := postgresExec(ctx, "postgres://postgres@"+node.client.addr()+"/postgres?sslmode=disable",
				"ALTER SYSTEM SET checkpoint_completion_target = 0", "ALTER SYSTEM SET fsync = off",
				"ALTER SYSTEM SET full_page_writes = off", "SELECT pg_reload_conf()"); err != nil {
				return fmt.Errorf("pg-auto-failover: %s: %v", node.Name, err)
			}
		}
	}
	if err := pgafSettled(ctx, c, monitorDSN, n, c.ReadyTimeout); err != nil {
		return err
	}
	return nil
}

// appendFile appends text to file.
func appendFile(file, text string) error {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pgafMonitorReady waits until the monitor answers.
func pgafMonitorReady(ctx context.Context, c *Cluster, i int, dsn string) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		_, err := pgafStates(ctx, dsn)
		return err
	})
}

// pgafState is a node's states as the monitor has them.
type pgafState struct {
	name, reported, goal string
}

// pgafStates reads the monitor's table of nodes.
func pgafStates(ctx context.Context, dsn string) ([]pgafState, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node ORDER BY nodeid")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pgafState
	for rows.Next() {
		var s pgafState
		if err := rows.Scan(&s.name, &s.reported, &s.goal); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// pgafStable says whether a node in state s serves: it reached its goal,
// and the goal is to serve as a primary or a secondary.
func pgafStable(s pgafState) bool {
	return s.reported == s.goal && slices.Contains([]string{"single", "primary", "wait_primary", "secondary"}, s.reported)
}

// pgafNodeReady waits until data node i answers SQL through its client
// proxy and the monitor has it in a stable state: single, primary,
// wait_primary or secondary, its goal reached.
func pgafNodeReady(ctx context.Context, c *Cluster, i int, monitorDSN string) error {
	node := c.Nodes[i]
	return poll(ctx, 500*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		db, err := sql.Open("pgx", "postgres://postgres@"+node.client.addr()+"/postgres?sslmode=disable&connect_timeout=3")
		if err != nil {
			return err
		}
		err = db.PingContext(ctx)
		_ = db.Close()
		if err != nil {
			return err
		}
		states, err := pgafStates(ctx, monitorDSN)
		if err != nil {
			return fmt.Errorf("the monitor: %v", err)
		}
		for _, s := range states {
			if s.name == node.Name {
				if !pgafStable(s) {
					return fmt.Errorf("%s is %s, its goal %s", s.name, s.reported, s.goal)
				}
				return nil
			}
		}
		return fmt.Errorf("the monitor does not know %s yet", node.Name)
	})
}

// pgafSettled waits (at most limit) until the monitor knows n data nodes,
// each in a stable state, one of them the primary.
func pgafSettled(ctx context.Context, c *Cluster, dsn string, n int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return poll(ctx, 300*time.Millisecond, func(ctx context.Context) error {
		states, err := pgafStates(ctx, dsn)
		if err != nil {
			return err
		}
		if len(states) != n {
			return fmt.Errorf("the monitor knows %d nodes of %d", len(states), n)
		}
		var bad []string
		primaries := 0
		for _, s := range states {
			if !pgafStable(s) || (s.reported != "secondary" && s.reported != "primary") {
				bad = append(bad, s.name+" "+s.reported+"→"+s.goal)
			}
			if s.reported == "primary" {
				primaries++
			}
		}
		if len(bad) > 0 || primaries != 1 {
			return fmt.Errorf("not settled: %s", strings.Join(bad, ", "))
		}
		return nil
	})
}

// pgafPrimary asks the monitor which node is the primary now.
func pgafPrimary(ctx context.Context, c *Cluster, dsn string) (int, error) {
	states, err := pgafStates(ctx, dsn)
	if err != nil {
		return 0, fmt.Errorf("the monitor: %v", err)
	}
	var found []string
	for _, s := range states {
		switch s.reported {
		case "single", "primary", "wait_primary":
			if s.goal == s.reported {
				found = append(found, s.name)
			}
		}
	}
	if len(found) != 1 {
		var all []string
		for _, s := range states {
			all = append(all, s.name+" "+s.reported+"→"+s.goal)
		}
		return 0, fmt.Errorf("no one primary now (%s)", strings.Join(all, ", "))
	}
	for i, n := range c.Nodes {
		if n.Name == found[0] {
			return i, nil
		}
	}
	return 0, errors.New("the monitor's primary " + found[0] + " is no node of the cluster")
}
