package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// dialect is one database's SQL and error codes. Statements are portable
// SQL where SQL is portable (reads, deletes, scans, compare-and-set), and
// each database's own upsert otherwise.
type dialect struct {
	// create makes the table and marks it (TableMark), in one transaction
	// where the database's DDL is transactional.
	create []string
	// owner reports whether table exists and the text that carries its
	// mark (its comment, or its CREATE statement).
	owner                             func(ctx context.Context, db *sql.DB, table string) (exists bool, mark string, err error)
	read, write, del, scan, iter      string
	appendList, readList, cas, insert string
	begin                             func(Isolation) string
	beginPerSession                   bool // begin needs SET SESSION first (MySQL)
	version                           string
	classify                          func(err error) (ErrorClass, string, bool)
	serializableOnly                  bool
	placeholders                      func(n int) []string
	// setup is what a new connection runs first, errors ignored (a
	// setting the user may not be allowed to change).
	setup                                   []string
	upsertValue, upsertList, ignoreConflict string
	// stmtTimeout returns the statements that make the server cancel a
	// statement running longer than d (run at setup, errors ignored).
	stmtTimeout func(d time.Duration) []string
	// forUpdate turns a point read into a locking read (see
	// LockingReader); empty where every read already locks (SQLite's
	// BEGIN IMMEDIATE holds the database's write lock).
	forUpdate string
	// beginWait, when set, runs begin (the BEGIN statement) until the
	// database lets the transaction start: a server that refuses a busy
	// lock at once (dqlite) waits as SQLite's busy timeout would.
	beginWait func(ctx context.Context, begin func() error) error
}

// sqlFor fills in the dialect's statements for table t.
func (d *dialect) sqlFor(t string) {
	p := d.placeholders(3)
	d.read = "SELECT v FROM " + t + " WHERE k = " + p[0]
	d.write = "INSERT INTO " + t + " (k, v) VALUES (" + p[0] + ", " + p[1] + ") " + d.upsertValue
	d.del = "DELETE FROM " + t + " WHERE k = " + p[0]
	d.scan = "SELECT k, v FROM " + t + " WHERE k >= " + p[0] + " AND k < " + p[1] + " ORDER BY k"
	d.iter = d.scan + " LIMIT " + p[2]
	d.appendList = "INSERT INTO " + t + " (k, l) VALUES (" + p[0] + ", " + p[1] + ") " + strings.ReplaceAll(d.upsertList, "$T", t)
	d.readList = "SELECT l FROM " + t + " WHERE k = " + p[0]
	d.cas = "UPDATE " + t + " SET v = " + p[0] + " WHERE k = " + p[1] + " AND v = " + p[2]
	d.insert = "INSERT INTO " + t + " (k, v) VALUES (" + p[0] + ", " + p[1] + ") " + d.ignoreConflict
	for i, q := range d.create {
		d.create[i] = strings.ReplaceAll(q, "$T", t)
	}
}

func dollars(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("$%d", i+1)
	}
	return out
}

func questionMarks(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "?"
	}
	return out
}

func postgresDialect() *dialect {
	return &dialect{
		create: []string{"CREATE TABLE $T (k BIGINT PRIMARY KEY, v BIGINT, l TEXT)",
			"COMMENT ON TABLE $T IS '" + TableMark + ": created by isoscope run, dropped and recreated by every run'"},
		owner: func(ctx context.Context, db *sql.DB, table string) (bool, string, error) {
			var oid, comment sql.NullString
			err := db.QueryRowContext(ctx, "SELECT to_regclass($1)::text, obj_description(to_regclass($1), 'pg_class')", table).Scan(&oid, &comment)
			return oid.Valid, comment.String, err
		},
		upsertValue:    "ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		upsertList:     "ON CONFLICT (k) DO UPDATE SET l = COALESCE($T.l || ',', '') || EXCLUDED.l",
		ignoreConflict: "ON CONFLICT (k) DO NOTHING",
		begin:          func(i Isolation) string { return "BEGIN ISOLATION LEVEL " + i.SQL() },
		version:        "SELECT version()",
		classify:       classifyPostgres,
		placeholders:   dollars,
		forUpdate:      " FOR UPDATE",
		// PostgreSQL looks for deadlocks after a second of waiting; the
		// workloads deadlock often enough that a second each matters.
		// (A superuser's setting: others keep the server's.)
		setup: []string{"SET deadlock_timeout = '100ms'"},
		stmtTimeout: func(d time.Duration) []string {
			return []string{"SET statement_timeout = " + strconv.FormatInt(max(d.Milliseconds(), 1), 10)}
		},
	}
}

func mysqlDialect() *dialect {
	return &dialect{
		create: []string{"CREATE TABLE $T (k BIGINT PRIMARY KEY, v BIGINT, l LONGTEXT) ENGINE=InnoDB COMMENT='" + TableMark + ": created by isoscope run, dropped and recreated by every run'"},
		owner: func(ctx context.Context, db *sql.DB, table string) (bool, string, error) {
			var comment string
			err := db.QueryRowContext(ctx, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&comment)
			if errors.Is(err, sql.ErrNoRows) {
				return false, "", nil
			}
			return err == nil, comment, err
		},
		upsertValue:     "ON DUPLICATE KEY UPDATE v = VALUES(v)",
		upsertList:      "ON DUPLICATE KEY UPDATE l = CONCAT(COALESCE(CONCAT(l, ','), ''), VALUES(l))",
		ignoreConflict:  "ON DUPLICATE KEY UPDATE k = k",
		begin:           func(Isolation) string { return "START TRANSACTION" },
		beginPerSession: true,
		version:         "SELECT VERSION()",
		classify:        classifyMySQL,
		placeholders:    questionMarks,
		forUpdate:       " FOR UPDATE",
		// InnoDB finds deadlocks at once, but waits 50 s for a lock held
		// by a transaction that is merely slow.
		setup: []string{"SET SESSION innodb_lock_wait_timeout = 10"},
		// MariaDB's max_statement_time (seconds) bounds every statement;
		// MySQL's max_execution_time (milliseconds) only reads. Each
		// server refuses the other's.
		stmtTimeout: func(d time.Duration) []string {
			return []string{
				"SET SESSION max_statement_time = " + strconv.FormatFloat(max(d.Seconds(), 0.001), 'f', 3, 64),
				"SET SESSION max_execution_time = " + strconv.FormatInt(max(d.Milliseconds(), 1), 10),
			}
		},
	}
}

func sqliteDialect() *dialect {
	return &dialect{
		// SQLite keeps a table's CREATE statement as written, comments
		// inside it too: the mark is one.
		create: []string{"CREATE TABLE $T (k BIGINT PRIMARY KEY, v BIGINT, l TEXT /* " + TableMark + " */)"},
		owner: func(ctx context.Context, db *sql.DB, table string) (bool, string, error) {
			var stmt string
			err := db.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE", table).Scan(&stmt)
			if errors.Is(err, sql.ErrNoRows) {
				return false, "", nil
			}
			return err == nil, stmt, err
		},
		upsertValue:      "ON CONFLICT (k) DO UPDATE SET v = excluded.v",
		upsertList:       "ON CONFLICT (k) DO UPDATE SET l = COALESCE(l || ',', '') || excluded.l",
		ignoreConflict:   "ON CONFLICT (k) DO NOTHING",
		begin:            func(Isolation) string { return "BEGIN IMMEDIATE" },
		version:          "SELECT 'SQLite ' || sqlite_version()",
		classify:         classifySQLite,
		serializableOnly: true,
		placeholders:     questionMarks,
	}
}

// classifyPostgres sorts PostgreSQL's SQLSTATEs: class 40 (transaction
// rollback: 40001 serialization failure, 40P01 deadlock) and 55P03 (lock
// not available) abort; class 08 (connection exception) and 57P01–57P03
// (the server terminated the backend or is shutting down) disconnect.
func classifyPostgres(err error) (ErrorClass, string, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "40001":
			return Aborted, "serialization failure (40001)", true
		case pe.Code == "40P01":
			return Aborted, "deadlock (40P01)", true
		case pe.Code == "57014":
			// statement_timeout (or a cancel request): the statement
			// was cancelled and the transaction aborted.
			return Aborted, "statement timeout (57014)", true
		case strings.HasPrefix(pe.Code, "40"), pe.Code == "55P03":
			return Aborted, strings.ToLower(pe.Message) + " (" + pe.Code + ")", true
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P"):
			return Disconnected, "connection lost: " + pe.Message + " (" + pe.Code + ")", true
		}
		return Failed, pe.Message + " (" + pe.Code + ")", true
	}
	if errors.Is(err, pgconn.ErrConnClosed) {
		return Disconnected, "connection lost", true
	}
	return 0, "", false
}

// classifyMySQL sorts MySQL's and MariaDB's error numbers: 1213 deadlock,
// 1205 lock wait timeout, 1020 record changed since last read (MariaDB's
// snapshot isolation), 3101 rollback during commit and TiDB's 9007 write
// conflict (optimistic transactions, at COMMIT) abort; 1053 server
// shutdown, 1927 connection killed, 1047 a Galera node outside the
// primary component and 1180 an error during COMMIT (outcome unknown)
// disconnect.
func classifyMySQL(err error) (ErrorClass, string, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213:
			return Aborted, "deadlock (1213)", true
		case 1205:
			return Aborted, "lock wait timeout (1205)", true
		case 1969, 3024:
			// max_statement_time (MariaDB), max_execution_time (MySQL):
			// the statement was cancelled.
			return Aborted, fmt.Sprintf("statement timeout (%d)", me.Number), true
		case 1020, 3101:
			return Aborted, fmt.Sprintf("%s (%d)", strings.ToLower(me.Message), me.Number), true
		case 9007:
			// TiDB: another transaction wrote a key this one wrote
			// since this one's snapshot; the server rolled it back (its
			// message carries keys and timestamps, different each time).
			return Aborted, "write conflict (9007)", true
		case 1180:
			// "Got error during COMMIT": the server does not say the
			// transaction was rolled back, and under Galera it may not
			// have been (a node that lost the primary component answers
			// its COMMIT with 1180, and the write set can still be
			// applied: docs/databases.md). A COMMIT that gets it is
			// unknown; the session goes on on a new connection.
			return Disconnected, fmt.Sprintf("error during COMMIT, outcome unknown: %s (%d)", strings.ToLower(me.Message), me.Number), true
		case 1047:
			// Galera: the node is not in the primary component (cut off
			// by a partition, or joining): it serves nothing until it
			// is, so the session goes to another node.
			return Disconnected, fmt.Sprintf("node not ready: %s (%d)", me.Message, me.Number), true
		case 1053, 1927:
			return Disconnected, fmt.Sprintf("connection lost: %s (%d)", me.Message, me.Number), true
		}
		return Failed, fmt.Sprintf("%s (%d)", me.Message, me.Number), true
	}
	if errors.Is(err, mysql.ErrInvalidConn) {
		return Disconnected, "connection lost", true
	}
	return 0, "", false
}

// classifySQLite sorts SQLite's result codes: SQLITE_BUSY (5) and
// SQLITE_LOCKED (6), with their extended codes, abort; SQLITE_INTERRUPT
// (9) is a cancelled context.
func classifySQLite(err error) (ErrorClass, string, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case 5:
			return Aborted, "database busy (SQLITE_BUSY)", true
		case 6:
			return Aborted, "table locked (SQLITE_LOCKED)", true
		case 9:
			return Interrupted, "interrupted", true
		}
		return Failed, se.Error(), true
	}
	return 0, "", false
}
