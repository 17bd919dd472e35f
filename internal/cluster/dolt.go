package cluster

import (
	"context"
	"database/sql"
	"fmt"
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
	node, dir, port, err := singleNode(c, "dolt.log", "home", "tmp")
	if err != nil {
		return err
	}
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	env := []string{"DOLT_ROOT_PATH=" + home, "HOME=" + home, "TMPDIR=" + tmp}
	for _, kv := range [][2]string{{"user.name", "isoscope"}, {"user.email", "isoscope@localhost"}, {"metrics.disabled", "true"}} {
		if err := runEnv("dolt config", filepath.Join(dir, "config.log"), nil, env, time.Minute, bin, "config", "--global", "--add", kv[0], kv[1]); err != nil {
			return err
		}
	}
	args := []string{bin, "sql-server", "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--data-dir", node.Dir}
	node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, env, args...) }
	c.ready = func(ctx context.Context, i int) error { return doltReady(ctx, c, i) }
	say("dolt: starting " + node.Name)
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
