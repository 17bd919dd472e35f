package db

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Isolation is an isolation level a transaction asks the database for.
type Isolation uint8

// The isolation levels of SQL, strongest first.
const (
	Serializable Isolation = iota
	RepeatableRead
	ReadCommitted
	ReadUncommitted
	numIsolations
)

var isolationNames = [numIsolations]string{"serializable", "repeatable-read", "read-committed", "read-uncommitted"}

// String is the level's flag name ("serializable", "repeatable-read",
// "read-committed", "read-uncommitted").
func (i Isolation) String() string {
	if i < numIsolations {
		return isolationNames[i]
	}
	return "Isolation(" + strconv.Itoa(int(i)) + ")"
}

// SQL is the level as SQL names it ("SERIALIZABLE", "REPEATABLE READ", …).
func (i Isolation) SQL() string {
	return strings.ToUpper(strings.ReplaceAll(i.String(), "-", " "))
}

// ParseIsolation returns the level named s: a flag name, its SQL spelling
// ("repeatable read"), or a short form (ser, rr, rc, ru).
func ParseIsolation(s string) (Isolation, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.NewReplacer(" ", "-", "_", "-").Replace(k)
	switch k {
	case "ser", "serialisable":
		return Serializable, nil
	case "rr":
		return RepeatableRead, nil
	case "rc":
		return ReadCommitted, nil
	case "ru":
		return ReadUncommitted, nil
	}
	for i, n := range isolationNames {
		if n == k {
			return Isolation(i), nil
		}
	}
	return 0, fmt.Errorf("unknown isolation %q (serializable, repeatable-read, read-committed or read-uncommitted)", s)
}

// Kind names a database product (a dialect of SQL and of errors).
type Kind uint8

// The databases isoscope has adapters for.
const (
	// Postgres is PostgreSQL, through pgx (the wire protocol that
	// CockroachDB and YugabyteDB speak too; only PostgreSQL 15 was tried).
	Postgres Kind = iota
	// MySQL is MySQL or MariaDB, through go-sql-driver/mysql (only MariaDB
	// 10.11 was tried).
	MySQL
	// SQLite is the embedded default, through modernc.org/sqlite: no
	// server, one writer at a time.
	SQLite
	// Badger is the embedded key-value store github.com/dgraph-io/badger
	// (v4), in managed mode: isoscope's own timestamp oracle chooses every
	// transaction's start and commit timestamps, and the history records
	// them.
	Badger
	// Etcd is etcd 3, through its Go client: each transaction buffers its
	// writes and commits them in one Txn whose compares check that what
	// it read is unchanged (optimistic concurrency, as etcd's STM).
	Etcd
	// Dqlite is dqlite (SQLite replicated by Raft), through go-dqlite's
	// driver: every transaction runs on the leader's SQLite.
	Dqlite
	// NatsKV is a NATS JetStream key-value bucket, through nats.go's
	// jetstream package: each transaction is one key's read-modify-write,
	// committed by a compare-and-set on the key's revision.
	NatsKV
	// Zookeeper is a ZooKeeper ensemble, through go-zookeeper: registers
	// and lists are znodes; a transaction commits as one multi that
	// checks the version of every znode it read.
	Zookeeper
	// Redis is Redis, alone or with replicas and sentinels, through
	// go-redis: each transaction WATCHes the keys it reads and commits its
	// writes in one MULTI/EXEC.
	Redis
)

// String names the kind ("postgres", "mysql", "sqlite", "badger", "etcd",
// "dqlite", "nats-kv", "zookeeper", "redis").
func (k Kind) String() string {
	switch k {
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
	case SQLite:
		return "sqlite"
	case Badger:
		return "badger"
	case Etcd:
		return "etcd"
	case Dqlite:
		return "dqlite"
	case NatsKV:
		return "nats-kv"
	case Zookeeper:
		return "zookeeper"
	case Redis:
		return "redis"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// KV is one row of a range read.
type KV struct {
	Key, Value int64
}

// Conn is one session's connection: it runs one transaction at a time,
// from Begin to Commit or Rollback. Keys and values are integers; lists are
// lists of integers. Every method fails with the driver's error, which
// Database.Classify sorts out.
type Conn interface {
	// Begin starts a transaction at level iso.
	Begin(ctx context.Context, iso Isolation) error
	// Read returns the values of k's rows in the order the database
	// returned them: none when k is absent, one otherwise — or more, where
	// the database shows a transaction several rows of one primary key
	// (PostgreSQL's REPEATABLE READ does after a concurrent transaction
	// deleted the key and this one inserted it again).
	Read(ctx context.Context, k int64) ([]int64, error)
	// Write puts v at k, inserting or updating.
	Write(ctx context.Context, k, v int64) error
	// Delete deletes k, and says whether it wrote anything: found is
	// false when k was absent and the database wrote nothing (SQL's
	// DELETE of a missing row), which it found as a locking read of k
	// would have. A key-value store's delete writes a tombstone whether
	// or not k was present, and always returns true.
	Delete(ctx context.Context, k int64) (found bool, err error)
	// Scan returns the pairs of [lo, hi) in key order: all of them when
	// limit is 0, else the first limit.
	Scan(ctx context.Context, lo, hi int64, limit int) ([]KV, error)
	// Append appends e to the list at k, creating it if absent.
	Append(ctx context.Context, k, e int64) error
	// ReadList returns the list at k; nil when absent or empty.
	ReadList(ctx context.Context, k int64) ([]int64, error)
	// CompareAndSet sets k to new if it holds old, and says whether it
	// did (UPDATE … SET v = new WHERE k = ? AND v = old).
	CompareAndSet(ctx context.Context, k, old, new int64) (bool, error)
	// InsertIfAbsent inserts v at k if k is absent, and says whether it
	// did.
	InsertIfAbsent(ctx context.Context, k, v int64) (bool, error)
	// Commit commits the transaction.
	Commit(ctx context.Context) error
	// Rollback rolls the transaction back.
	Rollback(ctx context.Context) error
	// Close closes the connection; Discard closes it for good, so that a
	// broken connection is not reused.
	Close() error
	Discard() error
}

// Timestamper is a Conn whose database tells the timestamps it gave a
// transaction (Badger's, whose oracle isoscope runs): the history records
// them as start_ts and commit_ts.
type Timestamper interface {
	// Timestamps returns the start (snapshot) timestamp and the commit
	// timestamp of the connection's last transaction; ok is false unless
	// it committed. The transaction saw exactly the transactions whose
	// commit timestamp is below its start timestamp.
	Timestamps() (start, commit uint64, ok bool)
}

// Answerer is a Database that tells the server's answers apart from
// failures to get one. A COMMIT that failed with the server's answer did
// not commit; one that failed otherwise may have, and its outcome is
// unknown. A Database that is no Answerer (an embedded one, whose every
// error is an answer) answers every error.
type Answerer interface {
	// Answered reports whether err is an error the server reported for
	// the statement, rather than a failure to get its answer.
	Answered(err error) bool
}

// ErrorClass is what an error means for the transaction that got it.
type ErrorClass uint8

// The classes of errors.
const (
	// Failed is any other error: the statement failed (the transaction
	// must be rolled back) but the connection is usable.
	Failed ErrorClass = iota
	// Aborted: the database aborted the transaction to keep its isolation
	// (serialization failure, deadlock, lock timeout, busy).
	Aborted
	// Disconnected: the connection broke. A COMMIT in flight has an
	// unknown outcome.
	Disconnected
	// Interrupted: the context ended. A COMMIT in flight has an unknown
	// outcome.
	Interrupted
)

// String names the class.
func (c ErrorClass) String() string {
	switch c {
	case Failed:
		return "failed"
	case Aborted:
		return "aborted"
	case Disconnected:
		return "disconnected"
	case Interrupted:
		return "interrupted"
	}
	return "ErrorClass(" + strconv.Itoa(int(c)) + ")"
}

// Database is a database to run workloads against, with its table.
type Database interface {
	// Kind is the database's dialect.
	Kind() Kind
	// Table is the name of the table the workload uses (on Badger, the
	// prefix of its keys).
	Table() string
	// Version asks the server for its product and version, e.g.
	// "PostgreSQL 15.20" or "MariaDB 10.11.19".
	Version(ctx context.Context) (string, error)
	// Supports returns nil when transactions can run at level iso, and
	// otherwise says why not.
	Supports(iso Isolation) error
	// Lock holds the table for this run alone until the lock's Release,
	// at once or not at all: a table another run holds is refused with
	// an *InUseError naming the holder where the database can tell. The
	// lock ends with the holder's session (or lease, or process), so
	// that a crashed run's lock does not outlive it.
	Lock(ctx context.Context) (*TableLock, error)
	// Reset drops and creates the table: k BIGINT PRIMARY KEY, v BIGINT
	// (the value of a key), l TEXT (a list: comma-separated elements). On
	// Badger it deletes every key under the table's prefix.
	Reset(ctx context.Context) error
	// Drop drops the table.
	Drop(ctx context.Context) error
	// Connect opens a new connection for one session.
	Connect(ctx context.Context) (Conn, error)
	// Classify says what err means for the transaction that got it, and
	// gives a short reason for a run's summary ("serialization failure
	// (40001)", "deadlock (1213)", "connection lost", …).
	Classify(err error) (ErrorClass, string)
	// Close closes every connection.
	Close() error
}

// TableMark is the mark isoscope leaves on every table it creates (a
// table comment in PostgreSQL and MariaDB, a comment in SQLite's CREATE
// statement, a marker key in Badger): Reset and Drop touch only a table
// that carries it, so that a run never destroys what it did not create.
const TableMark = "isoscope-run-table"

// NotOursError says that a table exists without isoscope's mark: a run
// refuses to reset it.
type NotOursError struct {
	// Table is the table's name and Where the database's display name.
	Table, Where string
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("table %s already exists in %s and was not created by isoscope (it has no %q mark); isoscope run drops and recreates its table, so it will not touch this one: choose another --table, or drop it yourself if it is an old isoscope table",
		e.Table, e.Where, TableMark)
}
