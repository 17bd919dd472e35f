package db

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// openTestBadger opens the Badger database at addr with a fresh table,
// closed when the test ends.
func openTestBadger(t *testing.T, addr string) Database {
	t.Helper()
	d, err := Open(context.Background(), addr, "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if err := d.Reset(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

func connect(t *testing.T, d Database) Conn {
	t.Helper()
	c, err := d.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBadgerSemantics runs every operation of the interface on Badger, in
// memory and in a directory, and checks what each returns and the
// timestamps of the transactions.
func TestBadgerSemantics(t *testing.T) {
	for _, addr := range []string{BadgerMemory, "badger://" + filepath.Join(t.TempDir(), "b")} {
		t.Run(addr, func(t *testing.T) {
			d := openTestBadger(t, addr)
			ctx := context.Background()
			if d.Kind() != Badger || d.Table() != "t" {
				t.Errorf("Kind %s, Table %q", d.Kind(), d.Table())
			}
			if v, err := d.Version(ctx); err != nil || !strings.HasPrefix(v, "Badger v4") {
				t.Errorf("Version = %q, %v", v, err)
			}
			for iso := Serializable; iso < numIsolations; iso++ {
				if err := d.Supports(iso); (err == nil) != (iso == Serializable) {
					t.Errorf("Supports(%s) = %v", iso, err)
				}
			}
			c := connect(t, d)
			ts := c.(Timestamper)
			if _, _, ok := ts.Timestamps(); ok {
				t.Error("timestamps before any transaction")
			}
			if err := c.Begin(ctx, RepeatableRead); err == nil {
				t.Error("Begin(repeatable-read) succeeded")
			}
			var last uint64
			// step checks the timestamps of a committed transaction: a
			// read-only one commits at its start.
			step := func(readOnly bool) {
				t.Helper()
				s, cm, ok := ts.Timestamps()
				if !ok || s <= last || (s < cm) == readOnly || s > cm {
					t.Fatalf("timestamps %d, %d, %v after %d (read-only %v)", s, cm, ok, last, readOnly)
				}
				last = cm
			}
			must(t, c.Begin(ctx, Serializable))
			if vs, err := c.Read(ctx, 1); len(vs) != 0 || err != nil {
				t.Fatalf("Read of an absent key = %v, %v", vs, err)
			}
			for _, kv := range []KV{{1, 10}, {2, 20}, {3, 30}, {2, 21}, {-5, -50}} {
				must(t, c.Write(ctx, kv.Key, kv.Value))
			}
			if vs, err := c.Read(ctx, 2); !reflect.DeepEqual(vs, []int64{21}) || err != nil {
				t.Fatalf("Read(2) = %v, %v", vs, err)
			}
			must(t, c.Commit(ctx))
			step(false)

			must(t, c.Begin(ctx, Serializable))
			if _, _, ok := ts.Timestamps(); ok {
				t.Error("timestamps of an open transaction")
			}
			kvs, err := c.Scan(ctx, -10, 10, 0)
			must(t, err)
			if want := []KV{{-5, -50}, {1, 10}, {2, 21}, {3, 30}}; !reflect.DeepEqual(kvs, want) {
				t.Errorf("Scan = %v, want %v", kvs, want)
			}
			kvs, err = c.Scan(ctx, 2, 10, 1)
			must(t, err)
			if want := []KV{{2, 21}}; !reflect.DeepEqual(kvs, want) {
				t.Errorf("Scan with limit = %v, want %v", kvs, want)
			}
			if kvs, err := c.Scan(ctx, 3, 3, 0); kvs != nil || err != nil {
				t.Errorf("empty range = %v, %v", kvs, err)
			}
			// A key-value store's delete writes a tombstone, present or not.
			for _, k := range []int64{2, 99} {
				if found, err := c.Delete(ctx, k); !found || err != nil {
					t.Errorf("Delete(%d) = %v, %v", k, found, err)
				}
			}
			kvs, err = c.Scan(ctx, 1, 4, 0)
			must(t, err)
			if want := []KV{{1, 10}, {3, 30}}; !reflect.DeepEqual(kvs, want) {
				t.Errorf("Scan after delete = %v, want %v", kvs, want)
			}
			must(t, c.Write(ctx, 4, 40)) // the scan sees its own new key
			if kvs, _ := c.Scan(ctx, 3, 5, 0); !reflect.DeepEqual(kvs, []KV{{3, 30}, {4, 40}}) {
				t.Errorf("Scan of an own write = %v", kvs)
			}
			must(t, c.Append(ctx, 5, 7))
			must(t, c.Append(ctx, 5, 8))
			if l, err := c.ReadList(ctx, 5); !reflect.DeepEqual(l, []int64{7, 8}) || err != nil {
				t.Errorf("ReadList = %v, %v", l, err)
			}
			if l, err := c.ReadList(ctx, 6); l != nil || err != nil {
				t.Errorf("ReadList of an absent key = %v, %v", l, err)
			}
			// Lists and values are apart: key 5's list is no value.
			if vs, _ := c.Read(ctx, 5); len(vs) != 0 {
				t.Errorf("Read(5) = %v", vs)
			}
			if ok, err := c.CompareAndSet(ctx, 1, 10, 11); !ok || err != nil {
				t.Errorf("CAS 10→11 = %v, %v", ok, err)
			}
			if ok, err := c.CompareAndSet(ctx, 1, 10, 12); ok || err != nil {
				t.Errorf("CAS 10→12 after 11 = %v, %v", ok, err)
			}
			if ok, err := c.CompareAndSet(ctx, 77, 0, 1); ok || err != nil {
				t.Errorf("CAS of an absent key = %v, %v", ok, err)
			}
			if ok, err := c.InsertIfAbsent(ctx, 7, 70); !ok || err != nil {
				t.Errorf("insert of an absent key = %v, %v", ok, err)
			}
			if ok, err := c.InsertIfAbsent(ctx, 7, 71); ok || err != nil {
				t.Errorf("insert of a present key = %v, %v", ok, err)
			}
			must(t, c.Commit(ctx))
			step(false)

			must(t, c.Begin(ctx, Serializable))
			must(t, c.Write(ctx, 9, 90))
			must(t, c.Rollback(ctx))
			if _, _, ok := ts.Timestamps(); ok {
				t.Error("timestamps of a rolled back transaction")
			}
			must(t, c.Begin(ctx, Serializable))
			if vs, _ := c.Read(ctx, 9); len(vs) != 0 {
				t.Errorf("a rolled back write is visible: %v", vs)
			}
			if vs, _ := c.Read(ctx, 1); !reflect.DeepEqual(vs, []int64{11}) {
				t.Errorf("Read(1) = %v after CAS, want [11]", vs)
			}
			if vs, _ := c.Read(ctx, 2); len(vs) != 0 {
				t.Errorf("Read(2) = %v after its delete", vs)
			}
			must(t, c.Commit(ctx)) // read-only
			step(true)

			// Operations outside a transaction, and on a cancelled context.
			if _, err := c.Read(ctx, 1); err == nil {
				t.Error("Read outside a transaction succeeded")
			}
			cctx, cancel := context.WithCancel(ctx)
			must(t, c.Begin(ctx, Serializable))
			cancel()
			if err := c.Write(cctx, 1, 1); d.(*badgerDB).classOf(err) != Interrupted {
				t.Errorf("Write on a cancelled context: %v", err)
			}
			must(t, c.Rollback(ctx))
		})
	}
}

// classOf is Classify's class alone.
func (d *badgerDB) classOf(err error) ErrorClass {
	c, _ := d.Classify(err)
	return c
}

// TestBadgerConflicts shows Badger's concurrency control: a snapshot per
// transaction, and at commit an abort if a key the transaction read was
// written by a transaction that committed after it started. Writes alone
// never conflict: two concurrent blind writers of one key both commit.
func TestBadgerConflicts(t *testing.T) {
	d := openTestBadger(t, BadgerMemory)
	ctx := context.Background()
	a, b := connect(t, d), connect(t, d)
	must(t, a.Begin(ctx, Serializable))
	must(t, b.Begin(ctx, Serializable))
	for _, c := range []Conn{a, b} {
		if vs, err := c.Read(ctx, 1); len(vs) != 0 || err != nil {
			t.Fatal(vs, err)
		}
		must(t, c.Write(ctx, 1, 1))
	}
	must(t, a.Commit(ctx))
	err := b.Commit(ctx)
	if class, why := d.Classify(err); !errors.Is(err, badger.ErrConflict) || class != Aborted || why != "transaction conflict (ErrConflict)" {
		t.Fatalf("the second read-modify-write: %v (%s, %q)", err, class, why)
	}
	if _, _, ok := b.(Timestamper).Timestamps(); ok {
		t.Error("timestamps of an aborted transaction")
	}

	// The snapshot: b started before a's commit and does not see it.
	must(t, b.Begin(ctx, Serializable))
	must(t, a.Begin(ctx, Serializable))
	must(t, a.Write(ctx, 2, 5))
	must(t, a.Commit(ctx))
	if vs, _ := b.Read(ctx, 2); len(vs) != 0 {
		t.Errorf("b sees a write committed after it started: %v", vs)
	}
	must(t, b.Write(ctx, 3, 1)) // read 2, write 3: a wrote 2 since b started
	if err := b.Commit(ctx); !errors.Is(err, badger.ErrConflict) {
		t.Errorf("stale read of 2 committed: %v", err)
	}

	// Blind writes of one key by two concurrent transactions.
	must(t, a.Begin(ctx, Serializable))
	must(t, b.Begin(ctx, Serializable))
	must(t, a.Write(ctx, 4, 1))
	must(t, b.Write(ctx, 4, 2))
	must(t, a.Commit(ctx))
	must(t, b.Commit(ctx))
	as, ac, _ := a.(Timestamper).Timestamps()
	bs, bc, _ := b.(Timestamper).Timestamps()
	if !(as < bc && bs < ac) {
		t.Errorf("not concurrent: a [%d, %d], b [%d, %d]", as, ac, bs, bc)
	}
	must(t, a.Begin(ctx, Serializable))
	if vs, _ := a.Read(ctx, 4); !reflect.DeepEqual(vs, []int64{2}) {
		t.Errorf("Read(4) = %v, want the later commit's 2", vs)
	}
	must(t, a.Commit(ctx))
}

// TestBadgerReopen writes to a directory, closes it, opens it again: the
// data is there, new timestamps are above the old versions, and Reset
// deletes the table's keys and no others.
func TestBadgerReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	ctx := context.Background()
	var last uint64
	for round := range 2 {
		d, err := Open(ctx, "badger://"+dir, "t")
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			must(t, d.Reset(ctx)) // marks t as isoscope's
		}
		other, err := Open(ctx, "badger://"+dir, "u")
		if err == nil {
			other.Close()
			t.Fatal("a directory opened twice")
		}
		c, err := d.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		must(t, c.Begin(ctx, Serializable))
		vs, err := c.Read(ctx, 1)
		must(t, err)
		if round == 1 && !reflect.DeepEqual(vs, []int64{1}) {
			t.Errorf("after reopening: Read(1) = %v", vs)
		}
		must(t, c.Write(ctx, 1, 1))
		must(t, c.Commit(ctx))
		s, cm, _ := c.(Timestamper).Timestamps()
		if s <= last {
			t.Errorf("round %d: start %d, not above the last commit %d", round, s, last)
		}
		last = cm
		must(t, c.Close())
		must(t, d.Close())
	}
	d, err := Open(ctx, "badger://"+dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c := connect(t, d)
	must(t, c.Begin(ctx, Serializable))
	must(t, c.Write(ctx, 2, 2))
	must(t, c.Commit(ctx))
	u := &badgerDB{db: d.(*badgerDB).db, table: "u", orc: d.(*badgerDB).orc}
	cu := connect(t, u)
	must(t, cu.Begin(ctx, Serializable))
	must(t, cu.Write(ctx, 1, 9))
	must(t, cu.Commit(ctx))
	must(t, d.Reset(ctx))
	must(t, c.Begin(ctx, Serializable))
	if kvs, err := c.Scan(ctx, 0, 10, 0); len(kvs) != 0 || err != nil {
		t.Errorf("after Reset: %v, %v", kvs, err)
	}
	must(t, c.Commit(ctx))
	must(t, cu.Begin(ctx, Serializable))
	if vs, _ := cu.Read(ctx, 1); !reflect.DeepEqual(vs, []int64{9}) {
		t.Errorf("Reset of t deleted table u's key: %v", vs)
	}
	must(t, cu.Commit(ctx))
}

// TestOracle checks the oracle's timestamps: fresh, a start above every
// settled commit, and a start that waits for the commits below it.
func TestOracle(t *testing.T) {
	var discards []uint64
	o := newOracle(10, func(ts uint64) { discards = append(discards, ts) })
	s1 := o.begin()
	if s1 != 11 || o.watermark() != 11 {
		t.Fatalf("begin = %d, watermark %d", s1, o.watermark())
	}
	var submitted uint64
	c1 := o.commit(func(c uint64) { submitted = c })
	if c1 != 12 || submitted != 12 {
		t.Fatalf("commit = %d, submitted %d", c1, submitted)
	}
	// A transaction that begins while c1 is in flight waits for it.
	var settled atomic.Bool
	var wg sync.WaitGroup
	var s2 uint64
	wg.Go(func() {
		s2 = o.begin()
		if !settled.Load() {
			t.Error("begin returned before the commit below it settled")
		}
	})
	settled.Store(true)
	o.finish(c1)
	wg.Wait()
	if s2 != 13 || o.watermark() < s2 {
		t.Errorf("begin after commit 12 = %d, watermark %d", s2, o.watermark())
	}
	o.end(s1)
	if !reflect.DeepEqual(discards, []uint64{13}) {
		t.Errorf("discard after the oldest start ended: %v, want [13]", discards)
	}
	o.end(s2)
	if len(discards) != 1 {
		t.Errorf("discard went on without a newer watermark: %v", discards)
	}
	// Commits settle out of order; the watermark waits for the lowest.
	a := o.commit(func(uint64) {})
	b := o.commit(func(uint64) {})
	o.finish(b)
	if o.watermark() != a-1 {
		t.Errorf("watermark %d with %d in flight", o.watermark(), a)
	}
	o.finish(a)
	if o.watermark() != b {
		t.Errorf("watermark %d, want %d", o.watermark(), b)
	}
}

// TestBadgerConcurrentTimestamps runs sessions of read-modify-writes
// concurrently and checks every committed transaction's timestamps: each
// session's increase, start below commit, all distinct, and every read
// returns the value of the writer with the highest commit timestamp below
// the reader's start.
func TestBadgerConcurrentTimestamps(t *testing.T) {
	d := openTestBadger(t, BadgerMemory)
	ctx := context.Background()
	type txn struct {
		start, commit uint64
		read, wrote   int64
	}
	const sessions, each = 4, 150
	logs := make([][]txn, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		c := connect(t, d)
		wg.Go(func() {
			for i := range each {
				v := int64(s*each + i + 1)
				if err := c.Begin(ctx, Serializable); err != nil {
					t.Error(err)
					return
				}
				vs, err := c.Read(ctx, 1)
				if err == nil {
					err = c.Write(ctx, 1, v)
				}
				if err == nil {
					err = c.Commit(ctx)
				} else {
					_ = c.Rollback(ctx)
				}
				if errors.Is(err, badger.ErrConflict) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				st, cm, _ := c.(Timestamper).Timestamps()
				x := txn{start: st, commit: cm, wrote: v}
				if len(vs) == 1 {
					x.read = vs[0]
				}
				logs[s] = append(logs[s], x)
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	var all []txn
	for s, log := range logs {
		for i, x := range log {
			if x.start >= x.commit || i > 0 && log[i-1].commit >= x.start {
				t.Fatalf("session %d: transaction %d [%d, %d] after [%d, %d]", s, i, x.start, x.commit, log[max(i-1, 0)].start, log[max(i-1, 0)].commit)
			}
			if seen[x.start] || seen[x.commit] {
				t.Fatalf("timestamp reused: %+v", x)
			}
			seen[x.start], seen[x.commit] = true, true
			all = append(all, x)
		}
	}
	if len(all) < each {
		t.Fatalf("only %d of %d transactions committed", len(all), sessions*each)
	}
	for _, x := range all {
		var want int64
		var at uint64
		for _, w := range all {
			if w.commit < x.start && w.commit > at {
				want, at = w.wrote, w.commit
			}
		}
		if x.read != want {
			t.Fatalf("transaction [%d, %d] read %d, want %d (committed at %d)", x.start, x.commit, x.read, want, at)
		}
	}
}
