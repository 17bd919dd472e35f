package db

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// badgerModule is the module whose version Version reports.
const badgerModule = "github.com/dgraph-io/badger/v4"

// badgerDB is an embedded Badger database in managed mode, with the
// timestamp oracle that chooses its transactions' timestamps.
//
// Keys live under the table's prefix: TABLE/v + the key for a value,
// TABLE/l + the key for a list, the key as 8 big-endian bytes with the
// sign bit flipped, so that Badger's byte order is the integers' order.
// A value is 8 big-endian bytes; a list, its elements' 8 bytes each, in
// order.
type badgerDB struct {
	db      *badger.DB
	table   string
	display string
	orc     *oracle
	// lock holds the directory for this process (nil in memory).
	lock *TableLock
}

// openBadger opens (or creates) the Badger database of t in managed mode.
// Its caches are kept small: the workloads' data is small, and several
// databases may be open in one test process.
func openBadger(t Target, table string) (Database, error) {
	opts := badger.DefaultOptions(t.path).
		WithLoggingLevel(badger.ERROR).
		WithMemTableSize(16 << 20).
		WithBlockCacheSize(16 << 20).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithDetectConflicts(true)
	var lock *TableLock
	if t.memory {
		opts = opts.WithDir("").WithValueDir("").WithInMemory(true)
	} else {
		// Badger opens a directory in one process at a time (its own
		// lock file refuses a second without saying whose it is): the
		// run's lock, a file beside the directory, is taken first, so
		// that a second run is told which run holds it.
		var err error
		lock, err = lockFile(strings.TrimRight(t.path, "/")+".isoscope-lock", InUseError{Table: table, Where: t.Display,
			Another: "choose another directory (badger://DIR): a Badger directory is open in one process at a time"})
		if err != nil {
			return nil, err
		}
	}
	bdb, err := badger.OpenManaged(opts)
	if err != nil {
		_ = lock.Release()
		return nil, fmt.Errorf("opening %s: %v", t.Display, err)
	}
	// Versions already in the directory were written at timestamps up to
	// MaxVersion: new transactions start above them.
	return &badgerDB{db: bdb, table: table, display: t.Display, orc: newOracle(bdb.MaxVersion(), bdb.SetDiscardTs), lock: lock}, nil
}

// Lock returns at once: the directory is this process's from Open to
// Close (a file lock beside it, taken before Badger opens it), every
// table in it too; in memory, the database is the run's own.
func (d *badgerDB) Lock(context.Context) (*TableLock, error) { return processLock(), nil }

func (d *badgerDB) Kind() Kind    { return Badger }
func (d *badgerDB) Table() string { return d.table }

// Version is "Badger" and the module's version from the build
// information ("Badger v4.9.6").
func (d *badgerDB) Version(context.Context) (string, error) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == badgerModule {
				if m.Replace != nil {
					m = m.Replace
				}
				return "Badger " + m.Version, nil
			}
		}
	}
	return "Badger v4", nil
}

// Supports accepts serializable only: Badger has one isolation level,
// which its documentation calls serializable snapshot isolation (a
// snapshot, and at commit a check that no key the transaction read was
// written by a transaction committed since its start).
func (d *badgerDB) Supports(iso Isolation) error {
	if iso != Serializable {
		return fmt.Errorf("badger has one isolation level, serializable snapshot isolation (run it as serializable), not %s", iso)
	}
	return nil
}

// prefix is the prefix of every key of the table.
func (d *badgerDB) prefix() []byte { return []byte(d.table + "/") }

// markKey is the key under the table's prefix whose presence marks the
// keys as isoscope's (TableMark): TABLE/m, beside TABLE/v… and TABLE/l….
func (d *badgerDB) markKey() []byte { return []byte(d.table + "/m") }

// Reset deletes the table's keys (when they carry isoscope's mark) and
// marks the empty table as isoscope's.
func (d *badgerDB) Reset(ctx context.Context) error {
	if err := d.Drop(ctx); err != nil {
		return err
	}
	start := d.orc.begin()
	txn := d.db.NewTransactionAt(start, true)
	defer d.orc.end(start)
	if err := txn.Set(d.markKey(), []byte(TableMark)); err != nil {
		txn.Discard()
		return fmt.Errorf("marking %s: %v", d.table, err)
	}
	done := make(chan error, 1)
	commit := d.orc.commit(func(ts uint64) {
		if err := txn.CommitAt(ts, func(err error) { done <- err }); err != nil {
			done <- err
		}
	})
	err := <-done
	d.orc.finish(commit)
	if err != nil {
		return fmt.Errorf("marking %s: %v", d.table, err)
	}
	return nil
}

// Drop deletes every key under the table's prefix, if there are none or
// they carry isoscope's mark; keys under the prefix without it are left
// alone (a *NotOursError).
func (d *badgerDB) Drop(context.Context) error {
	txn := d.db.NewTransactionAt(math.MaxUint64, false)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: d.prefix()})
	it.Rewind()
	exists := it.Valid()
	it.Close()
	_, err := txn.Get(d.markKey())
	txn.Discard()
	switch {
	case !exists:
		return nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return &NotOursError{Table: d.table, Where: d.display}
	case err != nil:
		return fmt.Errorf("looking up the mark of %s: %v", d.table, err)
	}
	if err := d.db.DropPrefix(d.prefix()); err != nil {
		return fmt.Errorf("deleting the keys of %s: %v", d.table, err)
	}
	return nil
}

func (d *badgerDB) Connect(ctx context.Context) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if d.db.IsClosed() {
		return nil, badger.ErrDBClosed
	}
	p := d.prefix()
	return &badgerConn{d: d, values: append(p[:len(p):len(p)], 'v'), lists: append(p[:len(p):len(p)], 'l')}, nil
}

// Classify sorts Badger's errors: ErrConflict (a key the transaction read
// was written by a transaction that committed after it started) aborts;
// a closed database, or one blocking writes while it closes, disconnects.
func (d *badgerDB) Classify(err error) (ErrorClass, string) {
	switch {
	case err == nil:
		return Failed, ""
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Interrupted, "interrupted"
	case errors.Is(err, badger.ErrConflict):
		return Aborted, "transaction conflict (ErrConflict)"
	case errors.Is(err, badger.ErrDBClosed), errors.Is(err, badger.ErrBlockedWrites):
		return Disconnected, "connection lost: " + err.Error()
	}
	return Failed, err.Error()
}

// Close closes the database, then gives up its directory's lock.
func (d *badgerDB) Close() error {
	err := d.db.Close()
	_ = d.lock.Release()
	return err
}

// badgerConn is one session's transactions on a Badger database.
type badgerConn struct {
	d *badgerDB
	// values and lists are the prefixes of the table's value and list
	// keys.
	values, lists []byte
	txn           *badger.Txn
	start         uint64
	// wrote says the open transaction wrote or deleted a key.
	wrote bool
	// last holds the timestamps of the last transaction, valid when
	// committed is set.
	lastStart, lastCommit uint64
	committed             bool
}

// key returns the Badger key of integer key k under prefix p.
func key(p []byte, k int64) []byte {
	b := make([]byte, len(p)+8)
	copy(b, p)
	binary.BigEndian.PutUint64(b[len(p):], uint64(k)^(1<<63))
	return b
}

// keyOf returns the integer key of a Badger key under a prefix of length
// n.
func keyOf(b []byte, n int) (int64, error) {
	if len(b) != n+8 {
		return 0, fmt.Errorf("badger key %q is not a key of the table", b)
	}
	return int64(binary.BigEndian.Uint64(b[n:]) ^ (1 << 63)), nil
}

func encodeInts(vs ...int64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.BigEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func decodeInts(b []byte) ([]int64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("a stored value of %d bytes is not 8-byte integers", len(b))
	}
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(b[8*i:]))
	}
	return out, nil
}

// open returns an error unless a transaction is open and ctx is live.
func (c *badgerConn) open(ctx context.Context) error {
	if c.txn == nil {
		return errors.New("no transaction is open")
	}
	return ctx.Err()
}

func (c *badgerConn) Begin(ctx context.Context, iso Isolation) error {
	if err := c.d.Supports(iso); err != nil {
		return err
	}
	if c.txn != nil {
		return errors.New("a transaction is already open")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.d.db.IsClosed() {
		return badger.ErrDBClosed
	}
	c.committed, c.wrote = false, false
	c.start = c.d.orc.begin()
	c.txn = c.d.db.NewTransactionAt(c.start, true)
	return nil
}

// get returns the value stored at key b, nil when absent.
func (c *badgerConn) get(b []byte) ([]byte, error) {
	item, err := c.txn.Get(b)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := item.ValueCopy(nil)
	if err == nil && v == nil {
		v = []byte{}
	}
	return v, err
}

// value returns the value at k: ok is false when k is absent.
func (c *badgerConn) value(k int64) (v int64, ok bool, err error) {
	b, err := c.get(key(c.values, k))
	if err != nil || b == nil {
		return 0, false, err
	}
	if len(b) != 8 {
		return 0, false, fmt.Errorf("key %d holds a value of %d bytes, not 8", k, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), true, nil
}

func (c *badgerConn) Read(ctx context.Context, k int64) ([]int64, error) {
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	v, ok, err := c.value(k)
	if err != nil || !ok {
		return nil, err
	}
	return []int64{v}, nil
}

func (c *badgerConn) Write(ctx context.Context, k, v int64) error {
	if err := c.open(ctx); err != nil {
		return err
	}
	return c.set(key(c.values, k), encodeInts(v))
}

// set writes v at key b.
func (c *badgerConn) set(b, v []byte) error {
	c.wrote = true
	return c.txn.Set(b, v)
}

// Delete writes a tombstone at k, present or not: it always returns true.
func (c *badgerConn) Delete(ctx context.Context, k int64) (bool, error) {
	if err := c.open(ctx); err != nil {
		return false, err
	}
	c.wrote = true
	return true, c.txn.Delete(key(c.values, k))
}

// Scan iterates over the table's value keys from lo. Badger's iterator
// shows the transaction's own writes and deletes, and adds every key it
// returns (and the key it seeks) to the transaction's reads; the first
// key at or past hi is looked at, and read, to see that the range ended.
func (c *badgerConn) Scan(ctx context.Context, lo, hi int64, limit int) ([]KV, error) {
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	if lo >= hi {
		return nil, nil
	}
	it := c.txn.NewIterator(badger.IteratorOptions{Prefix: c.values})
	defer it.Close()
	var out []KV
	for it.Seek(key(c.values, lo)); it.Valid(); it.Next() {
		item := it.Item()
		k, err := keyOf(item.Key(), len(c.values))
		if err != nil {
			return nil, err
		}
		if k >= hi {
			break
		}
		b, err := item.ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		vs, err := decodeInts(b)
		if err != nil || len(vs) != 1 {
			return nil, fmt.Errorf("key %d holds a value of %d bytes, not 8", k, len(b))
		}
		out = append(out, KV{k, vs[0]})
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// Append reads the list at k and writes it back with e at its end: the
// read makes two concurrent appends to k conflict.
func (c *badgerConn) Append(ctx context.Context, k, e int64) error {
	if err := c.open(ctx); err != nil {
		return err
	}
	kb := key(c.lists, k)
	old, err := c.get(kb)
	if err != nil {
		return err
	}
	if len(old)%8 != 0 {
		return fmt.Errorf("the list at key %d holds %d bytes, not 8-byte elements", k, len(old))
	}
	l := make([]byte, len(old)+8)
	copy(l, old)
	binary.BigEndian.PutUint64(l[len(old):], uint64(e))
	return c.set(kb, l)
}

func (c *badgerConn) ReadList(ctx context.Context, k int64) ([]int64, error) {
	if err := c.open(ctx); err != nil {
		return nil, err
	}
	b, err := c.get(key(c.lists, k))
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return decodeInts(b)
}

func (c *badgerConn) CompareAndSet(ctx context.Context, k, old, new int64) (bool, error) {
	if err := c.open(ctx); err != nil {
		return false, err
	}
	v, ok, err := c.value(k)
	if err != nil || !ok || v != old {
		return false, err
	}
	return true, c.set(key(c.values, k), encodeInts(new))
}

func (c *badgerConn) InsertIfAbsent(ctx context.Context, k, v int64) (bool, error) {
	if err := c.open(ctx); err != nil {
		return false, err
	}
	_, ok, err := c.value(k)
	if err != nil || ok {
		return false, err
	}
	return true, c.set(key(c.values, k), encodeInts(v))
}

// Commit takes a commit timestamp from the oracle and commits at it,
// waiting until the writes are applied (or Badger reports why not). The
// context is not consulted: the commit is local and short, and its
// outcome is always known.
//
// A transaction that wrote nothing has nothing to commit: Badger neither
// checks its reads nor writes anything, and it takes effect at its
// snapshot. Its commit timestamp is its start timestamp.
func (c *badgerConn) Commit(context.Context) error {
	if c.txn == nil {
		return errors.New("no transaction is open")
	}
	txn, start := c.txn, c.start
	c.txn = nil
	if !c.wrote {
		txn.Discard()
		c.d.orc.end(start)
		c.lastStart, c.lastCommit, c.committed = start, start, true
		return nil
	}
	done := make(chan error, 1)
	commit := c.d.orc.commit(func(ts uint64) {
		if err := txn.CommitAt(ts, func(err error) { done <- err }); err != nil {
			done <- err
		}
	})
	err := <-done
	c.d.orc.finish(commit)
	c.d.orc.end(start)
	if err != nil {
		return err
	}
	c.lastStart, c.lastCommit, c.committed = start, commit, true
	return nil
}

func (c *badgerConn) Rollback(context.Context) error {
	if c.txn == nil {
		return nil
	}
	c.txn.Discard()
	c.txn = nil
	c.d.orc.end(c.start)
	return nil
}

// Timestamps returns the start and commit timestamps of the connection's
// last transaction, if it committed.
func (c *badgerConn) Timestamps() (start, commit uint64, ok bool) {
	return c.lastStart, c.lastCommit, c.committed
}

func (c *badgerConn) Close() error { return c.Rollback(context.Background()) }

func (c *badgerConn) Discard() error { return c.Close() }
