package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// BinEnv names the environment variable that says where the opt-in
// servers' binaries are (tidb-server, dolt): the directory `make tidb`
// and `make dolt` build into when it is set (scripts/build-tidb.sh,
// scripts/build-dolt.sh).
const BinEnv = "ISOSCOPE_BIN"

// findBinary finds an opt-in server's binary, built by make target: in
// $ISOSCOPE_BIN when it is set; else in tmp/bin under the working
// directory or the nearest directory above it that has one (where `make`
// at the repository's root puts it, found from the packages' tests too);
// else on PATH. The error names the target that builds it.
func findBinary(name, target string) (string, error) {
	var tried []string
	if d := os.Getenv(BinEnv); d != "" {
		f := filepath.Join(d, name)
		if isExecutable(f) {
			return filepath.Abs(f)
		}
		tried = append(tried, f)
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if f := filepath.Join(d, "tmp", "bin", name); isExecutable(f) {
				return f, nil
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		tried = append(tried, "tmp/bin in "+wd+" and above")
		if f, err := exec.LookPath(name); err == nil {
			return filepath.Abs(f)
		}
		tried = append(tried, "PATH")
	}
	return "", fmt.Errorf("%s is not built (looked in %s): `make %s` builds it from the Go module proxy into tmp/bin, or into $%s when set; it is opt-in and long to build", name, strings.Join(tried, ", "), target, BinEnv)
}

// Built says whether the server a kind needs is there: nil for the kinds
// Debian installs (Up says what is missing), an error naming the make
// target for an opt-in kind whose binary is not built.
func Built(kind Kind) error {
	switch kind {
	case TiDB, TiDBOptimistic:
		_, err := findBinary("tidb-server", "tidb")
		return err
	case Dolt:
		_, err := findBinary("dolt", "dolt")
		return err
	}
	return nil
}

// isExecutable reports whether f is a regular file someone may execute.
func isExecutable(f string) bool {
	fi, err := os.Stat(f)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// upTiDB stands up one tidb-server on its unistore engine (an embedded
// store, persistent under the node's directory): a "cluster" of one node,
// with no peers to partition, which can be killed, paused, restarted and
// have its clients cut. optimistic chooses the transaction mode every
// session gets (the global tidb_txn_mode, kept in the store, so a node
// started again keeps it); TiDB's own default is pessimistic.
//
// TiDB's defaults listen on 0.0.0.0 and write under /tmp: the server is
// given 127.0.0.1, its status port off, and every path (store, temporary
// directory, temporary storage, socket, slow log, TMPDIR) inside the
// node's directory.
func upTiDB(ctx context.Context, c *Cluster, optimistic bool, say func(string)) error {
	bin, err := findBinary("tidb-server", "tidb")
	if err != nil {
		return err
	}
	node, dir, port, err := singleNode(c, "tidb.log", "tmp")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "tmp")
	cfg := filepath.Join(dir, "tidb.toml")
	conf := fmt.Sprintf("tmp-storage-path = %q\n\n[log]\nslow-query-file = %q\n", filepath.Join(dir, "tmp-storage"), filepath.Join(dir, "tidb-slow.log"))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		return err
	}
	args := []string{bin, "-config", cfg, "-store", "unistore", "-path", node.Dir,
		"-host", "127.0.0.1", "-P", strconv.Itoa(port), "-report-status=false",
		"-status-host", "127.0.0.1", "-socket", filepath.Join(dir, "tidb.sock"), "-temp-dir", tmp}
	env := []string{"TMPDIR=" + tmp}
	node.launch = func() (*proc, error) { return startProc(node.Name, node.Log, nil, env, args...) }
	mode := "pessimistic"
	if optimistic {
		mode = "optimistic"
	}
	c.ready = func(ctx context.Context, i int) error { return tidbReady(ctx, c, i, mode) }
	say("tidb: starting " + node.Name + " (unistore, " + mode + " transactions)")
	return c.Start(ctx, 0)
}

// tidbReady waits until the node answers and its global transaction
// mode is mode (setting it on the first start).
func tidbReady(ctx context.Context, c *Cluster, i int, mode string) error {
	return mysqlReady(ctx, c, i, func(ctx context.Context, db *sql.DB) error {
		var got string
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.tidb_txn_mode").Scan(&got); err != nil {
			return err
		}
		if got == mode {
			return nil
		}
		if _, err := db.ExecContext(ctx, "SET GLOBAL tidb_txn_mode = '"+mode+"'"); err != nil {
			return err
		}
		return errors.New("tidb_txn_mode was " + got + ", set to " + mode)
	})
}

// singleNode makes the node n1 of a one-server kind speaking MySQL's
// protocol (TiDB, Dolt) in c: its directory, with data/ (the node's Dir)
// and the directories sub, its log logName, and a client proxy in front
// of a free port for the server, which it returns; clients reach it as
// root, database test.
func singleNode(c *Cluster, logName string, sub ...string) (node *Node, dir string, port int, err error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, "", 0, err
	}
	dir = filepath.Join(c.Dir, "n1")
	node = &Node{Name: "n1", Dir: filepath.Join(dir, "data"), Log: filepath.Join(dir, logName)}
	for _, d := range append([]string{"data"}, sub...) {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, "", 0, err
		}
	}
	if node.client, err = newProxy(node.Name+"-client", "127.0.0.1:"+strconv.Itoa(ports[0]), nil); err != nil {
		return nil, "", 0, err
	}
	c.Nodes = append(c.Nodes, node)
	c.dsn = func(i int) string { return "mysql://root@" + c.Nodes[i].client.addr() + "/test" }
	return node, dir, ports[0], nil
}

// single reports whether kind is one server, not a replicated cluster:
// its nodes cannot be partitioned.
func single(kind Kind) bool {
	return kind == TiDB || kind == TiDBOptimistic || kind == Dolt
}
