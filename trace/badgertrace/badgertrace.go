// Package badgertrace records the history of a program that uses a
// Badger database, for isoscope to check: DB wraps *badger.DB, and its
// transactions (Txn) have the methods of Badger's — Get, Set, Delete,
// NewIterator, Commit, Discard — and record each as it runs in an
// isoscope.Recorder:
//
//	db := badgertrace.New(bdb, rec)
//	err := db.Update(func(txn *badgertrace.Txn) error {
//		item, err := txn.Get([]byte("x"))
//		…
//		return txn.Set([]byte("x"), []byte("2"))
//	})
//
// Keys and values are recorded as strings (isoscope.Bytes). A Get records
// a read (of null when the key is not found), Set a write, Delete a
// delete, and a forward iterator, from each Rewind or Seek, the keys and
// values it visited as an iterator operation. Reverse iterators,
// iterators over all versions and iterations that visit a key that is not
// valid UTF-8 are not recorded (DB.Unrecorded counts them), nor anything
// done through the underlying *badger.Txn.
//
// A transaction that commits is committed; one whose Commit fails with
// badger.ErrConflict is aborted, and with another error its outcome is
// unknown. One discarded without Commit is aborted if it wrote, and
// committed if it only read: Badger's read-only transactions (View) read
// a snapshot and are never committed.
package badgertrace

import (
	"bytes"
	"errors"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"

	"github.com/isoscope/isoscope"
)

// DB is a Badger database whose transactions are recorded. The methods of
// *badger.DB that it does not redefine are Badger's own, and record
// nothing.
type DB struct {
	*badger.DB
	rec        *isoscope.Recorder
	sessions   atomic.Int64
	unrecorded atomic.Int64
}

// New returns db recording its transactions in rec.
func New(db *badger.DB, rec *isoscope.Recorder) *DB { return &DB{DB: db, rec: rec} }

// Unrecorded counts the iterations left out of the history: reverse,
// over all versions, or over a key that is not valid UTF-8.
func (d *DB) Unrecorded() int64 { return d.unrecorded.Load() }

// A Session runs one transaction at a time, in order: its transactions
// are one session of the history (a goroutine, a worker, a client).
type Session struct {
	d    *DB
	name isoscope.Value
}

// Session returns the session named name (not null, and not a negative
// integer: those name the sessions of the DB's own transactions).
func (d *DB) Session(name isoscope.Value) *Session { return &Session{d: d, name: name} }

// NewTransaction begins a transaction in a session of its own (named by a
// negative integer), as badger.DB.NewTransaction does.
func (d *DB) NewTransaction(update bool) *Txn {
	return d.begin(isoscope.Int(-d.sessions.Add(1)), update)
}

// Update runs fn in a read-write transaction of a session of its own, as
// badger.DB.Update does.
func (d *DB) Update(fn func(txn *Txn) error) error { return run(d.NewTransaction(true), fn) }

// View runs fn in a read-only transaction of a session of its own, as
// badger.DB.View does.
func (d *DB) View(fn func(txn *Txn) error) error { return run(d.NewTransaction(false), fn) }

// NewTransaction begins a transaction in the session.
func (s *Session) NewTransaction(update bool) *Txn { return s.d.begin(s.name, update) }

// Update runs fn in a read-write transaction of the session.
func (s *Session) Update(fn func(txn *Txn) error) error { return run(s.NewTransaction(true), fn) }

// View runs fn in a read-only transaction of the session.
func (s *Session) View(fn func(txn *Txn) error) error { return run(s.NewTransaction(false), fn) }

// run runs fn in txn and commits it, as badger.DB.Update does; a
// read-only transaction is discarded.
func run(txn *Txn, fn func(txn *Txn) error) error {
	defer txn.Discard()
	if err := fn(txn); err != nil {
		return err
	}
	if !txn.update {
		return nil
	}
	return txn.Commit()
}

func (d *DB) begin(session isoscope.Value, update bool) *Txn {
	rec := d.rec.Begin(session)
	return &Txn{d: d, txn: d.DB.NewTransaction(update), rec: rec, update: update}
}

// Txn is a recorded Badger transaction. Like Badger's, it belongs to one
// goroutine.
type Txn struct {
	d      *DB
	txn    *badger.Txn
	rec    *isoscope.Tx
	update bool
	wrote  bool
	ended  bool
}

// Badger returns the underlying transaction; what is done through it is
// not recorded.
func (t *Txn) Badger() *badger.Txn { return t.txn }

// Get looks key up, as badger.Txn.Get does, and records the read: of the
// value, or of null when the key is not found.
func (t *Txn) Get(key []byte) (*badger.Item, error) {
	item, err := t.txn.Get(key)
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		t.rec.Read(isoscope.Bytes(key), isoscope.Null)
	case err == nil:
		v, verr := item.ValueCopy(nil)
		if verr != nil {
			return item, verr
		}
		t.rec.Read(isoscope.Bytes(key), isoscope.Bytes(v))
	}
	return item, err
}

// Set sets key to val, as badger.Txn.Set does, and records the write.
func (t *Txn) Set(key, val []byte) error {
	err := t.txn.Set(key, val)
	if err == nil {
		t.wrote = true
		t.rec.Write(isoscope.Bytes(key), isoscope.Bytes(val))
	}
	return err
}

// Delete deletes key, as badger.Txn.Delete does, and records the delete.
func (t *Txn) Delete(key []byte) error {
	err := t.txn.Delete(key)
	if err == nil {
		t.wrote = true
		t.rec.Delete(isoscope.Bytes(key))
	}
	return err
}

// Commit commits the transaction, as badger.Txn.Commit does, and ends
// its record: committed, aborted on badger.ErrConflict, unknown on
// another error.
func (t *Txn) Commit() error {
	err := t.txn.Commit()
	if !t.ended {
		t.ended = true
		switch {
		case err == nil:
			_ = t.rec.Commit()
		case errors.Is(err, badger.ErrConflict):
			_ = t.rec.Abort()
		default:
			_ = t.rec.Unknown()
		}
	}
	return err
}

// Discard discards the transaction, as badger.Txn.Discard does; one not
// committed ends its record: aborted if it wrote, committed if it only
// read (its reads saw a snapshot).
func (t *Txn) Discard() {
	t.txn.Discard()
	if t.ended {
		return
	}
	t.ended = true
	if t.wrote {
		_ = t.rec.Abort()
	} else {
		_ = t.rec.Commit()
	}
}

// NewIterator returns an iterator over the transaction's view, as
// badger.Txn.NewIterator does, which records what it visits.
func (t *Txn) NewIterator(opt badger.IteratorOptions) *Iterator {
	it := &Iterator{it: t.txn.NewIterator(opt), t: t, prefix: opt.Prefix, off: opt.Reverse || opt.AllVersions}
	if it.off {
		t.d.unrecorded.Add(1)
	}
	return it
}

// Iterator is a recorded Badger iterator. From each Rewind or Seek, the
// keys and values it visits are one iterator operation of the history:
// the first keys present from where it started, in order.
type Iterator struct {
	it     *badger.Iterator
	t      *Txn
	prefix []byte
	off    bool // records nothing
	// started says an iteration is under way: lo is where it started,
	// pairs what it visited; bad says it visited a key that is not valid
	// UTF-8.
	started bool
	lo      []byte
	pairs   []isoscope.KV
	bad     bool
}

// Rewind goes to the first key, as badger.Iterator.Rewind does.
func (it *Iterator) Rewind() {
	it.flush()
	it.it.Rewind()
	it.start(it.prefix)
}

// Seek goes to the first key not below key, as badger.Iterator.Seek does.
func (it *Iterator) Seek(key []byte) {
	it.flush()
	it.it.Seek(key)
	it.start(key)
}

// Next advances to the next key, as badger.Iterator.Next does.
func (it *Iterator) Next() {
	it.it.Next()
	it.visit()
}

// Valid reports whether the iterator is at a key, as
// badger.Iterator.Valid does.
func (it *Iterator) Valid() bool { return it.it.Valid() }

// ValidForPrefix reports whether the iterator is at a key with prefix, as
// badger.Iterator.ValidForPrefix does.
func (it *Iterator) ValidForPrefix(prefix []byte) bool { return it.it.ValidForPrefix(prefix) }

// Item returns the item at the iterator, as badger.Iterator.Item does.
func (it *Iterator) Item() *badger.Item { return it.it.Item() }

// Close closes the iterator, as badger.Iterator.Close does, and records
// the last iteration.
func (it *Iterator) Close() {
	it.flush()
	it.it.Close()
}

// start begins an iteration from lo (the later of lo and the prefix: the
// keys before the prefix are not the iterator's).
func (it *Iterator) start(lo []byte) {
	if bytes.Compare(lo, it.prefix) < 0 {
		lo = it.prefix
	}
	it.started, it.lo, it.pairs, it.bad = true, bytes.Clone(lo), nil, !utf8.Valid(lo)
	it.visit()
}

// visit records the key the iterator is at, if any.
func (it *Iterator) visit() {
	if it.off || !it.started || !it.it.Valid() {
		return
	}
	item := it.it.Item()
	k := item.Key()
	v, err := item.ValueCopy(nil)
	if err != nil || !utf8.Valid(k) {
		it.bad = true
		return
	}
	it.pairs = append(it.pairs, isoscope.KV{Key: isoscope.Str(string(k)), Value: isoscope.Bytes(v)})
}

// flush records the current iteration, if it visited a key.
func (it *Iterator) flush() {
	switch {
	case it.off || !it.started:
	case it.bad:
		it.t.d.unrecorded.Add(1)
	case len(it.pairs) > 0:
		it.t.rec.Iter(isoscope.Str(string(it.lo)), isoscope.Null, it.pairs)
	}
	it.started, it.lo, it.pairs = false, nil, nil
}
