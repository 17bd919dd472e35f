// Package db holds isoscope's database adapters behind one small
// interface: a Database opens one Conn per client session, and a Conn runs
// transactions at a chosen isolation level — begin, read, write, delete,
// scan (with a limit: an iterator), append to a list, read a list,
// compare-and-set, insert-if-absent, commit, rollback. Classify sorts the
// drivers' errors into what they mean for the transaction: aborted by the
// database (serialization failure, deadlock, lock timeout), disconnected
// (a COMMIT in flight then has an unknown outcome), interrupted, or failed.
//
// Three adapters share one implementation on database/sql with a dialect
// each:
//
//   - PostgreSQL through pgx (postgres://…). The same wire protocol
//     reaches CockroachDB and YugabyteDB, but only PostgreSQL 15 was
//     tried. REPEATABLE READ there is snapshot isolation.
//   - MySQL and MariaDB through go-sql-driver/mysql (mysql://…, in the
//     driver's form user@tcp(host:port)/db or as a URL user@host:port/db).
//     Only MariaDB 10.11 was tried. InnoDB's REPEATABLE READ is weaker
//     than snapshot isolation: it allows lost updates.
//   - SQLite through modernc.org/sqlite (sqlite://FILE, or sqlite::memory:,
//     the default, which needs no server). SQLite runs one writer at a
//     time: every transaction begins with BEGIN IMMEDIATE, so it offers
//     serializable only.
//
// A fourth adapter is not SQL: Badger (github.com/dgraph-io/badger/v4),
// an embedded key-value store (badger://DIR, or badger::memory:), opened
// in managed mode. isoscope's timestamp oracle (oracle.go) gives every
// transaction a fresh start timestamp once every commit below it has
// been applied, and a fresh commit timestamp, handed to Badger in
// timestamp order; the Conn tells them (Timestamper), and the runner
// records them as start_ts and commit_ts. Badger offers one level, which
// it calls serializable snapshot isolation: a snapshot per transaction,
// and at commit ErrConflict (aborted) if a key it read — by a point read,
// or returned by an iterator — was written by a transaction committed
// since it started. Writes alone never conflict. The table is a key
// prefix: TABLE/v and the key hold a value, TABLE/l and the key a list,
// keys as big-endian integers with the sign bit flipped (byte order is
// the integers' order); a delete writes a tombstone, present or not.
//
// The schema is one table (isoscope_kv unless told otherwise) that Reset
// drops and creates, marked as isoscope's (TableMark: a table comment, a
// comment in SQLite's CREATE statement, a marker key in Badger); Reset and
// Drop refuse a table of that name without the mark (NotOursError), so a
// run never destroys what it did not create: k BIGINT PRIMARY KEY, v BIGINT for a key's value, and
// l TEXT for a list, its elements comma-separated (append is the dialect's
// upsert that concatenates). Writes are upserts; a key is absent when it
// has no row. Delete says whether it deleted a row, and Read returns every
// row of its key, so that a caller can record what the database did when it
// differs from a key-value store's semantics (a DELETE of a missing row
// writes nothing; PostgreSQL's REPEATABLE READ may show two rows of one
// key).
//
// Lock holds a table for one run alone (tablelock.go, sqllock.go,
// etcdlock.go): a PostgreSQL advisory lock, a MySQL-protocol named lock
// (GET_LOCK; a lease row where the server refuses it, as Galera does), a
// file lock beside a SQLite file or a Badger directory, an etcd key on a
// lease, a lease row on dqlite. Each goes with its holder's session,
// lease or process, and a table in use is refused at once with an
// *InUseError naming the holder where the database can tell.
package db
