package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Lock holds the table for this run alone, until Release:
//
//   - PostgreSQL: a session-level advisory lock keyed by the table
//     (pg_try_advisory_lock), on a connection of its own. A crashed
//     run's session ends, and the lock with it. The holder is told from
//     pg_locks and pg_stat_activity. An address of several hosts (a
//     failover cluster's, pg-auto-failover's) gets a lease row instead:
//     it is replicated, and a failover keeps it (an asynchronous
//     failover may lose it, as it may lose any write).
//   - MySQL, MariaDB (and the servers of their protocol): a named lock,
//     GET_LOCK with timeout 0, on a connection of its own, named after the
//     database and the table (named locks are the server's, not a
//     database's). The holder is IS_USED_LOCK's connection. A server that
//     refuses named locks (Galera's, with wsrep on) gets a lease row
//     instead, as dqlite does.
//   - SQLite: a file lock (flock) on a file beside the database file,
//     which holds the holder's process id; it goes with the process. An
//     in-memory database is the run's own.
//   - dqlite: a lease row in a table isoscope_locks of the database,
//     renewed while the run lasts: a crashed run's lease runs out after
//     leaseTTL. (dqlite has no locks that outlive a statement but a
//     transaction, and a transaction held open would hold its one write
//     lock: no session could write.)
func (d *sqlDB) Lock(ctx context.Context) (*TableLock, error) {
	inUse := InUseError{Table: d.table, Where: d.display}
	switch d.kind {
	case Postgres:
		if d.hosts {
			return d.lockLease(ctx, inUse)
		}
		return d.lockPostgres(ctx, inUse)
	case MySQL:
		l, err := d.lockMySQL(ctx, inUse)
		if errors.Is(err, errNoNamedLocks) {
			return d.lockLease(ctx, inUse)
		}
		return l, err
	case SQLite:
		if d.memory {
			return processLock(), nil
		}
		return lockFile(lockFileName(d.path, d.table), inUse)
	case Dqlite:
		return d.lockLease(ctx, inUse)
	}
	return nil, fmt.Errorf("no table lock for %s", d.kind)
}

// pgLockClass is the first key of isoscope's advisory locks ("iso" in
// ASCII); the second is tableKey's hash of the table's name.
const pgLockClass = 0x69736f

// tableKey is a non-negative 31-bit hash of the table's name as the
// database folds it (lower case, unquoted).
func tableKey(table string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(table)))
	return int32(h.Sum32() & 0x7fffffff)
}

// lockPostgres takes the advisory lock on a connection named after this
// process (application_name), so that another run's refusal names it.
func (d *sqlDB) lockPostgres(ctx context.Context, inUse InUseError) (*TableLock, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("locking table %s: %v", d.table, err)
	}
	name := fmt.Sprintf("isoscope pid %d", os.Getpid())
	if host, err := os.Hostname(); err == nil {
		name += " on " + host
	}
	if len(name) > 63 {
		name = name[:63]
	}
	_, _ = c.ExecContext(ctx, "SELECT set_config('application_name', $1, false)", name)
	key := tableKey(d.table)
	var ok bool
	if err := c.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1::int, $2::int)", pgLockClass, key).Scan(&ok); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("locking table %s: %v", d.table, err)
	}
	if !ok {
		defer c.Close()
		inUse.Holder = postgresHolder(ctx, c, key)
		return nil, &inUse
	}
	return &TableLock{release: func() error {
		return releaseOn(c, "SELECT pg_advisory_unlock($1::int, $2::int)", pgLockClass, key)
	}}, nil
}

// postgresHolder describes the session that holds the advisory lock of
// key: its backend's pid, its application_name, its client and since
// when it is connected ("" when the server does not say).
func postgresHolder(ctx context.Context, c *sql.Conn, key int32) string {
	var pid int64
	var app, client, since string
	err := c.QueryRowContext(ctx, `SELECT a.pid, COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), 'a local socket'),
		COALESCE(to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'), '')
	FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
	WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	  AND l.classid::bigint = $1::bigint AND l.objid::bigint = $2::bigint AND l.objsubid = 2
	LIMIT 1`, pgLockClass, key).Scan(&pid, &app, &client, &since)
	if err != nil {
		return ""
	}
	s := fmt.Sprintf("PostgreSQL backend pid %d", pid)
	if app != "" {
		s += fmt.Sprintf(", application_name %q", app)
	}
	s += ", client " + client
	if since != "" {
		s += ", connected since " + since + " UTC"
	}
	return s
}

// releaseWait bounds how long releasing a lock waits for the database: a
// database gone or stalled at the end of a run must not hold the run up.
// A session's lock goes with its connection, closed anyway; a lease row
// that could not be deleted runs out.
const releaseWait = time.Second

// releaseOn releases a lock held by the connection c with the statement q
// and closes c.
func releaseOn(c *sql.Conn, q string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	_, err := c.ExecContext(ctx, q, args...)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}

// errNoNamedLocks says that a MySQL-protocol server refuses GET_LOCK.
var errNoNamedLocks = errors.New("the server offers no named locks")

// mysqlLockName is the named lock of table in database: named locks are
// the server's, so the database is part of the name, which MySQL bounds
// to 64 characters (a longer one is hashed).
func mysqlLockName(database, table string) string {
	name := "isoscope:" + database + "." + table
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(database + "." + table))
		name = "isoscope:" + hex.EncodeToString(sum[:20])
	}
	return name
}

// lockMySQL takes GET_LOCK(name, 0) on a connection of its own; it
// returns errNoNamedLocks when the server refuses the function (Galera
// with wsrep on: 1235, or a server without it: 1305).
func (d *sqlDB) lockMySQL(ctx context.Context, inUse InUseError) (*TableLock, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("locking table %s: %v", d.table, err)
	}
	var database sql.NullString
	if err := c.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&database); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("locking table %s: %v", d.table, err)
	}
	name := mysqlLockName(database.String, d.table)
	var got sql.NullInt64
	err = c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got)
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1235 || me.Number == 1305) {
		_ = c.Close()
		return nil, errNoNamedLocks
	}
	if err != nil || !got.Valid {
		_ = c.Close()
		if err == nil {
			err = errors.New("GET_LOCK failed")
		}
		return nil, fmt.Errorf("locking table %s: %v", d.table, err)
	}
	if got.Int64 != 1 {
		defer c.Close()
		inUse.Holder = mysqlHolder(ctx, c, name)
		return nil, &inUse
	}
	return &TableLock{release: func() error { return releaseOn(c, "DO RELEASE_LOCK(?)", name) }}, nil
}

// mysqlHolder describes the connection that holds the named lock: its id
// (IS_USED_LOCK) and, where the process list shows it, its user and
// client.
func mysqlHolder(ctx context.Context, c *sql.Conn, name string) string {
	var id sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", name).Scan(&id); err != nil || !id.Valid {
		return ""
	}
	s := fmt.Sprintf("server connection %d", id.Int64)
	var user, host sql.NullString
	if err := c.QueryRowContext(ctx, "SELECT USER, HOST FROM information_schema.PROCESSLIST WHERE ID = ?", id.Int64).Scan(&user, &host); err == nil {
		s += fmt.Sprintf(" of %s from %s", user.String, host.String)
	}
	return s + fmt.Sprintf("; KILL %d ends it if that run is gone", id.Int64)
}

// leaseTTL is how long a lease row holds a table without being renewed;
// leaseRenew how often its holder renews it.
const (
	leaseTTL   = 10 * time.Second
	leaseRenew = 2 * time.Second
)

// leaseTable is the table of lease rows: one per table held.
const leaseTable = "isoscope_locks"

// leaseSQL is the lease statements of a dialect: the database's clock in
// seconds, and an INSERT that skips a row whose key exists.
func (d *sqlDB) leaseSQL() (now, insertIgnore, create string) {
	if d.kind == Postgres {
		// A second INSERT fails on the key, outside any transaction:
		// lockLease reads the row's holder either way.
		return "CAST(extract(epoch FROM clock_timestamp()) AS BIGINT)", "INSERT INTO",
			"CREATE TABLE IF NOT EXISTS " + leaseTable + " (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires BIGINT NOT NULL)"
	}
	if d.kind == MySQL {
		return "UNIX_TIMESTAMP()", "INSERT IGNORE INTO",
			"CREATE TABLE IF NOT EXISTS " + leaseTable + " (name VARCHAR(128) PRIMARY KEY, holder VARCHAR(255) NOT NULL, expires BIGINT NOT NULL) ENGINE=InnoDB"
	}
	return "CAST(strftime('%s', 'now') AS INTEGER)", "INSERT OR IGNORE INTO",
		"CREATE TABLE IF NOT EXISTS " + leaseTable + " (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires BIGINT NOT NULL)"
}

// leaseQuery is a lease statement written with ? placeholders in the
// dialect's own ($1, $2, … for PostgreSQL).
func (d *sqlDB) leaseQuery(q string) string {
	if d.kind != Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// leaseExec runs one statement of the lease, waiting for a busy write
// lock where the dialect does (dqlite refuses it at once).
func (d *sqlDB) leaseExec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	var res sql.Result
	run := func() error {
		var err error
		res, err = d.db.ExecContext(ctx, d.leaseQuery(q), args...)
		return err
	}
	var err error
	if d.dialect.beginWait != nil {
		err = d.dialect.beginWait(ctx, run)
	} else {
		err = run()
	}
	return res, err
}

// lockLease takes the table's lease row: it deletes a lease that ran out,
// inserts its own unless a row is there, and reads whose the row is. The
// database's clock times the leases, so the clients' clocks do not
// matter. A goroutine renews the lease every leaseRenew until Release,
// which deletes the row.
func (d *sqlDB) lockLease(ctx context.Context, inUse InUseError) (*TableLock, error) {
	now, insertIgnore, create := d.leaseSQL()
	fail := func(err error) (*TableLock, error) {
		return nil, fmt.Errorf("locking table %s with a lease row in %s: %v", d.table, leaseTable, err)
	}
	if _, err := d.leaseExec(ctx, create); err != nil {
		return fail(err)
	}
	name := strings.ToLower(d.table)
	me := holderText()
	ttl := int64(leaseTTL / time.Second)
	var holder string
	var left int64
	// A concurrent insert on another node of a multi-master cluster may
	// abort this one at commit before its row is visible here: look
	// again, briefly.
	for attempt := 0; ; attempt++ {
		if _, err := d.leaseExec(ctx, "DELETE FROM "+leaseTable+" WHERE name = ? AND expires < "+now, name); err != nil {
			return fail(err)
		}
		_, insErr := d.leaseExec(ctx, insertIgnore+" "+leaseTable+" (name, holder, expires) VALUES (?, ?, "+now+" + ?)", name, me, ttl)
		err := d.db.QueryRowContext(ctx, d.leaseQuery("SELECT holder, expires - "+now+" FROM "+leaseTable+" WHERE name = ?"), name).Scan(&holder, &left)
		if err == nil {
			break
		}
		if !errors.Is(err, sql.ErrNoRows) || attempt == 4 {
			if insErr != nil {
				err = insErr
			}
			return fail(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if holder != me {
		inUse.Holder = fmt.Sprintf("%s; its lease row in %s runs out %ds after its last renewal, %ds from now", holder, leaseTable, ttl, max(left, 0))
		return nil, &inUse
	}
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(leaseRenew)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			rctx, cancel := context.WithTimeout(context.Background(), leaseRenew)
			_, _ = d.leaseExec(rctx, "UPDATE "+leaseTable+" SET expires = "+now+" + ? WHERE name = ? AND holder = ?", ttl, name, me)
			cancel()
		}
	}()
	return &TableLock{release: func() error {
		close(stop)
		<-renewed
		rctx, cancel := context.WithTimeout(context.Background(), releaseWait)
		defer cancel()
		_, err := d.leaseExec(rctx, "DELETE FROM "+leaseTable+" WHERE name = ? AND holder = ?", name, me)
		return err
	}}, nil
}
