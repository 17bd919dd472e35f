package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Where Debian puts MariaDB's server, its installer and the Galera 4
// provider.
const (
	mariadbd         = "/usr/sbin/mariadbd"
	mariadbInstallDB = "/usr/bin/mariadb-install-db"
	galeraProvider   = "/usr/lib/galera/libgalera_smm.so"
)

// galeraNode is what a Galera node's configuration needs.
type galeraNode struct {
	sqlPort, gcommPort, istPort, sstPort int
}

// upGalera stands up spec.Nodes Galera nodes. Node 1's data directory is
// made by mariadb-install-db and bootstrapped as a new cluster once, to
// create the test database; then it is stopped cleanly and its directory
// copied for the other nodes, so that every node starts at the same
// state and joins without a state transfer. Then node 1 bootstraps the
// cluster again and the others join it, in order, each through the
// other nodes' peer proxies.
func upGalera(ctx context.Context, c *Cluster, say func(string)) error {
	for _, f := range []string{mariadbd, mariadbInstallDB, galeraProvider, "/usr/bin/rsync"} {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("galera needs %s (Debian: mariadb-server, galera-4, rsync): %v", f, err)
		}
	}
	mysqlUser, err := lookupAccount("mysql")
	if err != nil {
		return err
	}
	n := c.Spec.Nodes
	cfgs := make([]galeraNode, n)
	for i := range cfgs {
		ports, err := freePorts(4)
		if err != nil {
			return err
		}
		cfgs[i] = galeraNode{sqlPort: ports[0], gcommPort: ports[1], istPort: ports[2], sstPort: ports[3]}
	}
	for i := range n {
		name := "n" + strconv.Itoa(i+1)
		dir := filepath.Join(c.Dir, name)
		node := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "mariadbd.log")}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if node.client, err = newProxy(name+"-client", "127.0.0.1:"+strconv.Itoa(cfgs[i].sqlPort), nil); err != nil {
			return err
		}
		if node.peer, err = newProxy(name+"-peer", "127.0.0.1:"+strconv.Itoa(cfgs[i].gcommPort), c.whoIs); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	// Galera's group communication tells each node the others' listen
	// addresses, and a node that lost a connection dials the address it
	// was told: the peer proxies rewrite every node's real address into
	// its proxy's (the same length: five-digit ports) both ways, so that
	// every reconnection goes through a proxy too.
	var peers []string
	var rewrite []replacement
	for i, node := range c.Nodes {
		peers = append(peers, node.peer.addr())
		real := "127.0.0.1:" + strconv.Itoa(cfgs[i].gcommPort)
		if len(real) != len(node.peer.addr()) {
			return fmt.Errorf("galera: the ports of %s and its proxy differ in length (%s, %s): the proxy cannot rewrite one into the other", node.Name, real, node.peer.addr())
		}
		rewrite = append(rewrite, replacement{from: []byte(real), to: []byte(node.peer.addr())})
	}
	for _, node := range c.Nodes {
		node.peer.setRewrite(rewrite)
	}
	for i, node := range c.Nodes {
		cnf := filepath.Join(filepath.Dir(node.Dir), "my.cnf")
		if err := os.WriteFile(cnf, []byte(galeraConfig(node, cfgs[i], peers)), 0o644); err != nil {
			return err
		}
		launchArgs := []string{mariadbd, "--defaults-file=" + cnf}
		node.launch = func() (*proc, error) {
			return startProc(node.Name, node.Log, nil, c.clockEnv(node), launchArgs...)
		}
	}
	c.dsn = func(i int) string {
		return "mysql://root@" + c.Nodes[i].client.addr() + "/test"
	}
	c.ready = func(ctx context.Context, i int) error { return galeraReady(ctx, c, i) }

	first := c.Nodes[0]
	cnf1 := filepath.Join(filepath.Dir(first.Dir), "my.cnf")
	say("galera: mariadb-install-db for " + first.Name)
	if err := os.MkdirAll(first.Dir, 0o755); err != nil {
		return err
	}
	if err := chown(filepath.Dir(first.Dir), mysqlUser); err != nil {
		return err
	}
	if err := run("mariadb-install-db", filepath.Join(filepath.Dir(first.Dir), "install.log"), nil, 3*time.Minute,
		mariadbInstallDB, "--defaults-file="+cnf1, "--user=mysql", "--auth-root-authentication-method=normal",
		"--skip-test-db", "--datadir="+first.Dir); err != nil {
		return err
	}
	bootstrap := func() error {
		p, err := startProc(first.Name, first.Log, nil, c.clockEnv(first), mariadbd, "--defaults-file="+cnf1, "--wsrep-new-cluster")
		if err != nil {
			return err
		}
		c.mu.Lock()
		first.proc = p
		c.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
		defer cancel()
		return galeraReady(rctx, c, 0)
	}
	say("galera: bootstrapping " + first.Name)
	if err := bootstrap(); err != nil {
		return err
	}
	if err := galeraExec(ctx, c.dsn(0), "CREATE DATABASE IF NOT EXISTS test",
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'", "GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION"); err != nil {
		return fmt.Errorf("galera: preparing %s: %v", first.Name, err)
	}
	first.proc.stop(60 * time.Second)
	for _, node := range c.Nodes[1:] {
		if out, err := exec.Command("cp", "-a", first.Dir, node.Dir).CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s's data for %s: %v: %s", first.Name, node.Name, err, out)
		}
		if err := chown(filepath.Dir(node.Dir), mysqlUser); err != nil {
			return err
		}
	}
	say("galera: bootstrapping the cluster from " + first.Name)
	if err := bootstrap(); err != nil {
		return err
	}
	// After the bootstrap node 1 starts like the others: it rejoins the
	// cluster through its peers.
	for i, node := range c.Nodes[1:] {
		say("galera: starting " + node.Name)
		if err := joinGalera(ctx, c, i+1, say); err != nil {
			return fmt.Errorf("galera: %s: %v (log: %s)", node.Name, err, node.Log)
		}
	}
	return nil
}

// galeraJoinAttempts is how many times a node is started while the
// cluster comes up before its failure to join is the cluster's.
const galeraJoinAttempts = 3

// joinGalera starts node i while the cluster comes up. A joiner that
// exits during its state transfer (Galera leaves the group and stops the
// server when the transfer cannot complete, e.g. when the donor is busy
// or a transfer port was taken in the meantime on a loaded machine) is
// started again on its data, up to galeraJoinAttempts times; a joiner
// that hangs is not, since a second wait would double the wait.
func joinGalera(ctx context.Context, c *Cluster, i int, say func(string)) error {
	var err error
	for attempt := 1; attempt <= galeraJoinAttempts; attempt++ {
		if err = c.Start(ctx, i); err == nil {
			return nil
		}
		var exited *exitedError
		if !errors.As(err, &exited) || ctx.Err() != nil {
			return err
		}
		if attempt < galeraJoinAttempts {
			say(fmt.Sprintf("galera: %s exited while joining (attempt %d of %d); starting it again", c.Nodes[i].Name, attempt, galeraJoinAttempts))
		}
	}
	return err
}

// galeraConfig is a node's my.cnf: its own data directory, socket, ports
// and log on 127.0.0.1; the provider's group communication listening on
// gcommPort, the cluster's address the peer proxies; shorter failure
// detection than the defaults, so that a partition or a paused node is
// noticed within seconds.
func galeraConfig(n *Node, g galeraNode, peers []string) string {
	base := filepath.Dir(n.Dir)
	opts := strings.Join([]string{
		"gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(g.gcommPort),
		"ist.recv_addr=127.0.0.1:" + strconv.Itoa(g.istPort),
		"gcache.size=64M",
		"evs.suspect_timeout=PT3S", "evs.inactive_timeout=PT6S", "evs.install_timeout=PT5S",
		"evs.inactive_check_period=PT0.5S", "evs.keepalive_period=PT0.5S",
		"pc.wait_prim_timeout=PT10S",
		// The proxies rewrite addresses inside the messages.
		"socket.checksum=0",
	}, ";")
	return fmt.Sprintf(`[mysqld]
user=mysql
datadir=%s
socket=%s
pid-file=%s
port=%d
bind-address=127.0.0.1
log-error=%s
skip-name-resolve=0
innodb_buffer_pool_size=32M
innodb_log_file_size=16M
innodb_flush_log_at_trx_commit=2
performance_schema=OFF
max_connections=200
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=%s
wsrep_cluster_name=isoscope
wsrep_cluster_address=gcomm://%s
wsrep_node_name=%s
wsrep_node_address=127.0.0.1:%d
wsrep_provider_options="%s"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:%d
`, n.Dir, filepath.Join(base, "mysqld.sock"), filepath.Join(base, "mysqld.pid"), g.sqlPort,
		n.Log, galeraProvider, strings.Join(peers, ","), n.Name, g.gcommPort, opts, g.sstPort)
}

// galeraReady waits until node i answers clients and has joined the
// primary component (wsrep_ready ON, state Synced).
func galeraReady(ctx context.Context, c *Cluster, i int) error {
	return mysqlReady(ctx, c, i, func(ctx context.Context, db *sql.DB) error {
		var name, state string
		if err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state); err != nil {
			return err
		}
		if state != "Synced" {
			return fmt.Errorf("%s is %s", c.Nodes[i].Name, state)
		}
		return nil
	})
}

// mysqlReady waits until node i, a MySQL-protocol server, runs and
// answers a connection on which ready then succeeds.
func mysqlReady(ctx context.Context, c *Cluster, i int, ready func(context.Context, *sql.DB) error) error {
	return poll(ctx, 250*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		db, err := openMySQL(c.dsn(i))
		if err != nil {
			return err
		}
		defer db.Close()
		return ready(ctx, db)
	})
}

// quietMySQL silences the driver's own logging of broken connections,
// which waiting for a starting node meets by design.
var quietMySQL sync.Once

// openMySQL opens a database/sql handle for a mysql:// address of ours.
func openMySQL(dsn string) (*sql.DB, error) {
	rest := strings.TrimPrefix(dsn, "mysql://")
	user, hostdb, _ := strings.Cut(rest, "@")
	host, dbname, _ := strings.Cut(hostdb, "/")
	quietMySQL.Do(func() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) })
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = user, "tcp", host, dbname
	cfg.Timeout = 3 * time.Second
	if dbname == "test" {
		cfg.DBName = ""
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	return db, nil
}

// galeraExec runs statements on the node at dsn.
func galeraExec(ctx context.Context, dsn string, stmts ...string) error {
	db, err := openMySQL(dsn)
	if err != nil {
		return err
	}
	return execClose(ctx, db, stmts)
}

// execClose runs statements on db, then closes it.
func execClose(ctx context.Context, db *sql.DB, stmts []string) error {
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %v", s, err)
		}
	}
	return nil
}
