package db

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	dqclient "github.com/canonical/go-dqlite/client"
	"github.com/canonical/go-dqlite/driver"
)

// dqliteAddr is a parsed dqlite:// address.
type dqliteAddr struct {
	// nodes are the nodes' addresses (host:port), asked in turn for the
	// leader.
	nodes []string
	// database is the name of the database on the cluster (a file in
	// each node's data directory).
	database string
}

// DqliteDefaultDatabase is the database a dqlite:// address without a
// path names.
const DqliteDefaultDatabase = "test"

// parseDqlite reads dqlite://HOST:PORT[,HOST:PORT…][/DATABASE].
func parseDqlite(addr, rest string) (Target, error) {
	want := "want dqlite://host:port[,host:port…][/database]"
	u, err := url.Parse("dqlite:" + rest)
	if err != nil || u.Host == "" || !strings.HasPrefix(rest, "//") {
		return Target{}, fmt.Errorf("database address %q: %s", addr, want)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Target{}, fmt.Errorf("database address %q: dqlite takes no user, password or options: %s", addr, want)
	}
	a := &dqliteAddr{database: strings.TrimPrefix(u.Path, "/")}
	if a.database == "" {
		a.database = DqliteDefaultDatabase
	}
	if strings.ContainsAny(a.database, "/\\") {
		return Target{}, fmt.Errorf("database address %q: the database %q is a file name on the nodes, without a directory", addr, a.database)
	}
	for n := range strings.SplitSeq(u.Host, ",") {
		host, port, ok := strings.Cut(n, ":")
		if !ok || host == "" || port == "" {
			return Target{}, fmt.Errorf("database address %q: node %q is not host:port", addr, n)
		}
		a.nodes = append(a.nodes, n)
	}
	return Target{Kind: Dqlite, Display: "dqlite://" + u.Host + "/" + a.database, dqlite: a}, nil
}

// openDqliteDB opens the dqlite cluster's database through go-dqlite's
// driver (pure Go: its client speaks dqlite's wire protocol; libdqlite
// is the servers'). Every connection asks the nodes, in turn, for the
// leader and talks to it; a connection that finds none tries a few times
// and fails, leaving longer waits to the runner's reconnection.
func openDqliteDB(t Target) (*sql.DB, error) {
	store := dqclient.NewInmemNodeStore()
	var infos []dqclient.NodeInfo
	for _, n := range t.dqlite.nodes {
		infos = append(infos, dqclient.NodeInfo{Address: n})
	}
	if err := store.Set(context.Background(), infos); err != nil {
		return nil, err
	}
	attempt := 5 * time.Second
	if t.StmtTimeout > 0 {
		attempt = connectTimeout(t.StmtTimeout)
	}
	drv, err := driver.New(store, driver.WithRetryLimit(3), driver.WithAttemptTimeout(attempt))
	if err != nil {
		return nil, err
	}
	conn, err := drv.OpenConnector(t.dqlite.database)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// dqliteDialect is SQLite's SQL: every statement runs on the leader's
// SQLite, and a transaction begins IMMEDIATE, holding the database's
// write lock, as on the embedded SQLite. dqlite refuses a busy lock at
// once (SQLITE_BUSY) rather than waiting, so BEGIN waits for it here, as
// SQLite's busy timeout does: a BEGIN IMMEDIATE that failed started
// nothing, and is tried again after a short pause until the context ends
// or dqliteBusyWait has passed. (A deferred BEGIN would let transactions
// that only read run side by side, but a writer would meet the busy lock
// in the middle of its transaction and abort: with six sessions nine
// transactions in ten did.)
func dqliteDialect() *dialect {
	d := sqliteDialect()
	d.version = "SELECT 'dqlite (SQLite ' || sqlite_version() || ')'"
	d.classify = classifyDqlite
	d.beginWait = waitDqliteBusy
	return d
}

// dqliteBusyWait bounds how long BEGIN waits for dqlite's write lock, as
// sqliteBusyMillis does the embedded SQLite's.
const dqliteBusyWait = sqliteBusyMillis * time.Millisecond

// waitDqliteBusy runs begin until it does not fail with SQLITE_BUSY,
// pausing 1 ms at first and up to 20 ms, with jitter.
func waitDqliteBusy(ctx context.Context, begin func() error) error {
	deadline := time.Now().Add(dqliteBusyWait)
	pause := time.Millisecond
	for {
		err := begin()
		var de driver.Error
		if err == nil || !errors.As(err, &de) || de.Code&0xff != driver.ErrBusy || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(pause/2 + time.Duration(rand.Int64N(int64(pause))))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// classifyDqlite sorts dqlite's errors: SQLite's result codes as the
// leader's SQLite gave them (SQLITE_BUSY, with its extended codes, and
// SQLITE_LOCKED abort); SQLITE_IOERR — dqlite's replication failing,
// leadership lost at COMMIT among them — leaves the outcome unknown, as
// does the driver's driver.ErrBadConn, which it returns for a node that
// is not (or no longer) the leader as for a lost connection; a
// connection that found no leader disconnects.
func classifyDqlite(err error) (ErrorClass, string, bool) {
	var de driver.Error
	if errors.As(err, &de) {
		switch de.Code & 0xff {
		case 5:
			if de.Code == driver.ErrBusySnapshot {
				return Aborted, "snapshot out of date (SQLITE_BUSY_SNAPSHOT)", true
			}
			return Aborted, "database busy (SQLITE_BUSY)", true
		case 6:
			return Aborted, "table locked (SQLITE_LOCKED)", true
		case dqliteNotLeader:
			return Aborted, "not committed, the node no longer leads (dqlite's RAFT_NOTLEADER as code 7)", true
		case 10:
			return Disconnected, fmt.Sprintf("replication failed, outcome unknown: %s (SQLITE_IOERR %d)", de.Message, de.Code), true
		}
		return Failed, fmt.Sprintf("%s (%d)", de.Message, de.Code), true
	}
	if errors.Is(err, driver.ErrNoAvailableLeader) {
		return Disconnected, "no leader found", true
	}
	if errors.Is(err, sqldriver.ErrBadConn) {
		return Disconnected, "connection lost or leadership lost (driver: bad connection)", true
	}
	if connectionLost(err) {
		// The driver's message names the request and its time budget,
		// which differ each time: the reason is the cause alone.
		for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
			err = u
		}
		return Disconnected, "connection lost: " + err.Error(), true
	}
	return 0, "", false
}

// dqliteNotLeader is the code dqlite 1.11 answers a statement with when
// Raft refuses to replicate its commit (raft_apply fails, so nothing was
// appended and the frames are dropped): Raft's own RAFT_NOTLEADER, 7,
// which in SQLite's numbering reads SQLITE_NOMEM, with SQLite's message
// for the statement's last step ("no more rows available"). It comes
// from a leader whose leadership is being transferred (a node handing
// over as it shuts down) or is gone; go-dqlite's driver does not know it
// and keeps the connection.
const dqliteNotLeader = 7

// dqliteConn is a session's connection to a dqlite leader.
type dqliteConn struct {
	*sqlConn
}

// Commit commits; when dqlite answers that the node no longer leads (the
// transaction was not committed), the connection is dropped, so that the
// session's next BEGIN finds it closed and reconnects to the leader —
// the driver itself would keep it on this node, which refuses every
// commit until its leadership is transferred.
func (c *dqliteConn) Commit(ctx context.Context) error {
	err := c.sqlConn.Commit(ctx)
	var de driver.Error
	if errors.As(err, &de) && de.Code == dqliteNotLeader {
		_ = c.sqlConn.Discard()
	}
	return err
}
