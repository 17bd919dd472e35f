package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// upDolt stands up one `dolt sql-server`: a "cluster" of one node, with
// no peers to partition, which can be killed, paused, restarted and have
// its clients cut. Its data directory holds the database test, made on
// the first start.
//
// Dolt writes its global configuration under the home directory unless
// DOLT_ROOT_PATH says otherwise: DOLT_ROOT_PATH, HOME and TMPDIR are
// directories of the node, its global configuration (user name and
// email, which commits need, and metrics off) is written there first,
// and the server listens on 127.0.0.1.
func upDolt(ctx context.Context, c *Cluster, say func(string)) error {
	bin, err := findBinary("dolt", "dolt")
	if err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	name := "n1"
	dir := filepath.Join(c.Dir, name)
	node := &Node{Name: name, Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "dolt.log")}
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{node.Dir, home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	env := []string{"DOLT_ROOT_PATH=" + home, "HOME=" + home, "TMPDIR=" + tmp}
	for _, kv := range [][2]string{{"user.name", "isoscope"}, {"user.email", "isoscope@localhost"}, {"metrics.disabled", "true"}} {
		if err := runEnv("dolt config", filepath.Join(dir, "config.log"), nil, env, time.Minute, bin, "config", "--global", "--add", kv[0], kv[1]); err != nil {
			return err
		}
	}
	if node.client, err = newProxy(name+"-client", "127.0.0.1:"+strconv.Itoa(ports[0]), nil); err != nil {
		return err
	}
	c.Nodes = append(c.Nodes, node)
	args := []string{bin, "sql-server", "--host", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--data-dir", node.Dir}
	node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, env, args...) }
	c.dsn = func(i int) string { return "mysql://root@" + c.Nodes[i].client.addr() + "/test" }
	c.ready = func(ctx context.Context, i int) error { return doltReady(ctx, c, i) }
	say("dolt: starting " + name)
	return c.Start(ctx, 0)
}

// doltReady waits until the server answers and holds the database test
// (made when it does not).
func doltReady(ctx context.Context, c *Cluster, i int) error {
	return mysqlReady(ctx, c, i, func(ctx context.Context, db *sql.DB) error {
		for _, s := range []string{"CREATE DATABASE IF NOT EXISTS test", "USE test"} {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %v", s, err)
			}
		}
		return nil
	})
}
