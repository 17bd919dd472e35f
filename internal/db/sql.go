package db

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	_ "modernc.org/sqlite"             // registers the "sqlite" driver
)

// DefaultTable is the table a run uses unless told otherwise.
const DefaultTable = "isoscope_kv"

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// sqliteBusyMillis is how long a SQLite connection waits for the write
// lock before it gives up with SQLITE_BUSY.
const sqliteBusyMillis = 10000

var quietMySQL sync.Once

// Open connects to the database at addr (see ParseTarget) and prepares
// its statements for table, which it neither creates nor resets: Reset
// does that. It checks that the database answers.
func Open(ctx context.Context, addr, table string) (Database, error) {
	t, err := ParseTarget(addr)
	if err != nil {
		return nil, err
	}
	return t.Open(ctx, table)
}

// Open connects to the target; see Open.
func (t Target) Open(ctx context.Context, table string) (Database, error) {
	if table == "" {
		table = DefaultTable
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("table name %q: want letters, digits and underscores, not starting with a digit", table)
	}
	if t.Kind == Badger {
		return openBadger(t, table)
	}
	if t.Kind == Etcd {
		return openEtcd(ctx, t, table)
	}
	if t.Kind == NatsKV {
		return openNatsKV(ctx, t, table)
	}
	if t.Kind == Zookeeper {
		return openZookeeper(ctx, t, table)
	}
	if t.Kind == Redis {
		return openRedis(ctx, t, table)
	}
	d := &sqlDB{kind: t.Kind, table: table, display: t.Display, path: t.path, memory: t.memory}
	var err error
	switch t.Kind {
	case Postgres:
		d.dialect = postgresDialect()
		d.db, err = sql.Open("pgx", t.postgresDSN())
		if u, perr := url.Parse(t.driverDSN); perr == nil {
			d.hosts = strings.Contains(u.Host, ",")
		}
	case MySQL:
		// The driver logs broken connections to standard error on its
		// own; isoscope reports them itself.
		quietMySQL.Do(func() { _ = mysql.SetLogger(log.New(io.Discard, "", 0)) })
		d.dialect = mysqlDialect()
		var conn driver.Connector
		if conn, err = mysql.NewConnector(t.mysqlConfig()); err == nil {
			d.db = sql.OpenDB(conn)
		}
	case SQLite:
		d.dialect = sqliteDialect()
		pragmas := "_pragma=busy_timeout(" + strconv.Itoa(sqliteBusyMillis) + ")"
		dsn := t.path + "?" + pragmas + "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
		if t.memory {
			// memdb is shared by the process's connections, with SQLite's
			// ordinary locking; a fresh name keeps runs apart.
			dsn = "file:/isoscope-" + randomSuffix() + "?vfs=memdb&" + pragmas
		}
		d.db, err = sql.Open("sqlite", dsn)
	case Dqlite:
		d.dialect = dqliteDialect()
		d.db, err = openDqliteDB(t)
	default:
		return nil, fmt.Errorf("unknown database kind %s", t.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %v", t.Display, err)
	}
	d.dialect.sqlFor(table)
	if t.StmtTimeout > 0 && d.dialect.stmtTimeout != nil {
		d.dialect.setup = append(d.dialect.setup, d.dialect.stmtTimeout(t.StmtTimeout)...)
	}
	// Sessions hold their connections for the whole run; a pool of idle
	// connections would only hide broken ones.
	d.db.SetMaxIdleConns(0)
	if err := d.ping(ctx); err != nil {
		_ = d.db.Close()
		return nil, err
	}
	if t.memory {
		// An in-memory database lives while a connection holds it.
		if d.anchor, err = d.db.Conn(ctx); err != nil {
			_ = d.db.Close()
			return nil, err
		}
	}
	return d, nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// sqlDB is a database reached through database/sql.
type sqlDB struct {
	kind    Kind
	table   string
	display string
	db      *sql.DB
	dialect *dialect
	anchor  *sql.Conn
	// path is the SQLite database's file; memory says it lives in memory.
	path   string
	memory bool
	// hosts says a PostgreSQL address names several hosts (a client of a
	// failover cluster, which follows the primary): the table's lock is a
	// lease row, which a failover keeps, not an advisory lock, which
	// ends with the old primary's session.
	hosts bool
}

func (d *sqlDB) ping(ctx context.Context) error {
	if err := d.db.PingContext(ctx); err != nil {
		return fmt.Errorf("cannot reach %s: %s", d.display, oncePerLine(err.Error()))
	}
	return nil
}

// oncePerLine drops the repeated lines of a driver's message: pgx tries
// each address once with TLS and once without (sslmode=prefer) and lists
// both failures, which are the same when nothing listens.
func oncePerLine(msg string) string {
	lines := strings.Split(msg, "\n")
	seen := make(map[string]bool, len(lines))
	out := lines[:0]
	for _, l := range lines {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func (d *sqlDB) Kind() Kind    { return d.kind }
func (d *sqlDB) Table() string { return d.table }

func (d *sqlDB) Version(ctx context.Context) (string, error) {
	var v string
	if err := d.db.QueryRowContext(ctx, d.dialect.version).Scan(&v); err != nil {
		return "", err
	}
	return productVersion(v), nil
}

// productVersion shortens a server's version string to its product and
// version: "PostgreSQL 15.20 (Debian …) on x86_64…" is "PostgreSQL 15.20",
// "10.11.19-MariaDB-0+deb12u1" is "MariaDB 10.11.19",
// "8.0.11-TiDB-v9.0.0" is "TiDB v9.0.0", "8.0.36" is
// "MySQL 8.0.36".
func productVersion(v string) string {
	if strings.HasPrefix(v, "dqlite ") {
		return v
	}
	if f := strings.Fields(v); len(f) >= 2 && (f[0] == "PostgreSQL" || f[0] == "SQLite") {
		return f[0] + " " + f[1]
	}
	num, _, _ := strings.Cut(v, "-")
	if _, tidb, ok := strings.Cut(v, "-TiDB-"); ok {
		return "TiDB " + tidb
	}
	if strings.Contains(strings.ToLower(v), "mariadb") {
		return "MariaDB " + num
	}
	return "MySQL " + num
}

func (d *sqlDB) Supports(iso Isolation) error {
	if iso >= numIsolations {
		return fmt.Errorf("unknown isolation %s", iso)
	}
	if d.dialect.serializableOnly && iso != Serializable {
		return fmt.Errorf("%s runs one writer at a time and offers only serializable, not %s", d.kind, iso)
	}
	return nil
}

func (d *sqlDB) Reset(ctx context.Context) error {
	if err := d.Drop(ctx); err != nil {
		return err
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("creating table %s: %v", d.table, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, q := range d.dialect.create {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("creating table %s: %v", d.table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("creating table %s: %v", d.table, err)
	}
	return nil
}

// Drop drops the table if isoscope created it; a table of that name
// without isoscope's mark is left alone (a *NotOursError).
func (d *sqlDB) Drop(ctx context.Context) error {
	exists, mark, err := d.dialect.owner(ctx, d.db, d.table)
	if err != nil {
		return fmt.Errorf("looking up table %s: %v", d.table, err)
	}
	if !exists {
		return nil
	}
	if !strings.Contains(mark, TableMark) {
		return &NotOursError{Table: d.table, Where: d.display}
	}
	if _, err := d.db.ExecContext(ctx, "DROP TABLE "+d.table); err != nil {
		return fmt.Errorf("dropping table %s: %v", d.table, err)
	}
	return nil
}

// Connect opens a connection and runs the dialect's setup on it. A
// setting the server refuses is skipped (the user may not be allowed to
// change it); a setup statement that gets no answer fails the connection.
func (d *sqlDB) Connect(ctx context.Context) (Conn, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	sc := &sqlConn{c: c, d: d.dialect, iso: numIsolations}
	for _, q := range d.dialect.setup {
		if _, err := c.ExecContext(ctx, q); err != nil && !d.Answered(err) {
			_ = sc.Discard()
			return nil, err
		}
	}
	if d.kind == Dqlite {
		return &dqliteConn{sc}, nil
	}
	return sc, nil
}

// Answered reports whether err is the server's answer: an error the
// database reported for the statement (a serialization failure, a
// constraint violation, a statement timeout), as opposed to a failure to
// get an answer (a broken connection, a deadline that passed, a driver's
// error) or an error the server sends as it drops the connection.
func (d *sqlDB) Answered(err error) bool {
	c, _, ok := d.dialect.classify(err)
	return ok && c != Disconnected && c != Interrupted
}

func (d *sqlDB) Classify(err error) (ErrorClass, string) {
	if err == nil {
		return Failed, ""
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Interrupted, "interrupted"
	}
	if c, why, ok := d.dialect.classify(err); ok {
		return c, why
	}
	if connectionLost(err) {
		return Disconnected, "connection lost: " + err.Error()
	}
	return Failed, err.Error()
}

// connectionLost recognises the errors of a broken connection that every
// driver shares: the network's and database/sql's.
func connectionLost(err error) bool {
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.As(err, &ne)
}

func (d *sqlDB) Close() error {
	if d.anchor != nil {
		_ = d.anchor.Close()
	}
	return d.db.Close()
}
