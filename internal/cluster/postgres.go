package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// pgBin is where Debian puts PostgreSQL 15's programs.
const pgBin = "/usr/lib/postgresql/15/bin"

// upPostgres stands up a PostgreSQL primary (node 1) and spec.Nodes-1
// hot standbys, each made by pg_basebackup from the primary and
// streaming its WAL through a proxy of its own (the standby's peer
// proxy): isolating a standby blocks its proxy, isolating the primary
// blocks them all. Replication is asynchronous, as PostgreSQL's default.
func upPostgres(ctx context.Context, c *Cluster, log func(string)) error {
	for _, f := range []string{"initdb", "postgres", "pg_basebackup"} {
		if _, err := os.Stat(filepath.Join(pgBin, f)); err != nil {
			return fmt.Errorf("postgres-standby needs PostgreSQL 15's %s (Debian: postgresql-15): %v", f, err)
		}
	}
	pgUser, err := lookupAccount("postgres")
	if err != nil {
		return err
	}
	ports, err := freePorts(c.Spec.Nodes)
	if err != nil {
		return err
	}
	for i := range c.Spec.Nodes {
		name := "n" + strconv.Itoa(i+1)
		dir := filepath.Join(c.Dir, name)
		node := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "postgres.log"), Role: "standby"}
		if i == 0 {
			node.Role = "primary"
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := chown(dir, pgUser); err != nil {
			return err
		}
		if node.client, err = newProxy(name+"-client", "127.0.0.1:"+strconv.Itoa(ports[i]), nil); err != nil {
			return err
		}
		if i > 0 {
			if node.peer, err = newProxy(name+"-replication", "127.0.0.1:"+strconv.Itoa(ports[0]), nil); err != nil {
				return err
			}
		}
		args := []string{filepath.Join(pgBin, "postgres"), "-D", node.Dir, "-c", "port=" + strconv.Itoa(ports[i]),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir}
		node.launch = func() (*proc, error) {
			p, err := startProc(node.Name, node.Log, pgUser, c.clockEnv(node), args...)
			if p != nil {
				p.quit = syscall.SIGINT // fast shutdown: clients are disconnected
			}
			return p, err
		}
		c.Nodes = append(c.Nodes, node)
	}
	c.dsn = func(i int) string {
		return "postgres://postgres@" + c.Nodes[i].client.addr() + "/test?sslmode=disable"
	}
	c.ready = func(ctx context.Context, i int) error { return postgresReady(ctx, c, i) }
	c.isolate = func(i int) {
		for j, n := range c.Nodes {
			if n.peer != nil && (i == 0 || i == j) {
				n.peer.block("*")
			}
		}
	}

	primary := c.Nodes[0]
	log("postgres: initdb for " + primary.Name)
	if err := run("initdb", filepath.Join(filepath.Dir(primary.Dir), "initdb.log"), pgUser, 3*time.Minute,
		filepath.Join(pgBin, "initdb"), "-D", primary.Dir, "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		return err
	}
	conf := `
# isoscope: a primary with hot standbys on 127.0.0.1
wal_level = replica
max_wal_senders = 10
wal_keep_size = 256MB
hot_standby = on
fsync = off
full_page_writes = off
shared_buffers = 32MB
max_connections = 100
`
	f, err := os.OpenFile(filepath.Join(primary.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	log("postgres: starting the primary " + primary.Name)
	if err := c.Start(ctx, 0); err != nil {
		return err
	}
	if err := postgresExec(ctx, "postgres://postgres@"+primary.client.addr()+"/postgres?sslmode=disable", "CREATE DATABASE test"); err != nil {
		return err
	}
	for i, node := range c.Nodes[1:] {
		log("postgres: pg_basebackup for the standby " + node.Name)
		if err := run("pg_basebackup", filepath.Join(filepath.Dir(node.Dir), "basebackup.log"), pgUser, 3*time.Minute,
			filepath.Join(pgBin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(node.peer.port()), "-U", "postgres",
			"-D", node.Dir, "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
			return err
		}
		log("postgres: starting the standby " + node.Name)
		if err := c.Start(ctx, i+1); err != nil {
			return err
		}
	}
	return nil
}

// postgresReady waits until node i answers, a standby in recovery.
func postgresReady(ctx context.Context, c *Cluster, i int) error {
	return poll(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		if err := c.runningNow(i); err != nil {
			return err
		}
		db, err := sql.Open("pgx", "postgres://postgres@"+c.Nodes[i].client.addr()+"/postgres?sslmode=disable&connect_timeout=3")
		if err != nil {
			return err
		}
		defer db.Close()
		var recovering bool
		if err := db.QueryRowContext(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering); err != nil {
			return err
		}
		if recovering != (c.Nodes[i].Role == "standby") {
			return fmt.Errorf("%s: in recovery %v", c.Nodes[i].Name, recovering)
		}
		return nil
	})
}

// postgresExec runs statements at dsn.
func postgresExec(ctx context.Context, dsn string, stmts ...string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	return execClose(ctx, db, stmts)
}
