package db

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/isoscope/isoscope/internal/cluster"
)

func TestParseZookeeper(t *testing.T) {
	tg, err := ParseTarget("zookeeper://127.0.0.1:2181,localhost:2182?reads=sync")
	if err != nil || tg.Kind != Zookeeper || !slices.Equal(tg.zk.servers, []string{"127.0.0.1:2181", "localhost:2182"}) || !tg.zk.sync {
		t.Fatalf("got %+v, %v", tg, err)
	}
	if tg.Display != "zookeeper://127.0.0.1:2181,localhost:2182?reads=sync" {
		t.Errorf("display %q", tg.Display)
	}
	if tg, err := ParseTarget("zk://127.0.0.1:2181?reads=local"); err != nil || tg.zk.sync || tg.Display != "zookeeper://127.0.0.1:2181" {
		t.Fatalf("got %+v, %v", tg, err)
	}
	for _, bad := range []string{"zookeeper://", "zookeeper:127.0.0.1:2181", "zookeeper://127.0.0.1", "zookeeper://127.0.0.1:2181/x",
		"zookeeper://u:p@127.0.0.1:2181", "zookeeper://127.0.0.1:x", "zookeeper://127.0.0.1:2181?reads=stale",
		"zookeeper://127.0.0.1:2181?timeout=1s"} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: got %v, want an error naming it", bad, err)
		}
	}
}

// upZookeeper stands up a ZooKeeper cluster of spec for a test.
func upZookeeper(t *testing.T, ctx context.Context, spec string) *cluster.Cluster {
	t.Helper()
	sp, err := cluster.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.Up(ctx, sp, "", nil)
	if err != nil {
		if strings.Contains(err.Error(), "(Debian: ") {
			t.Fatalf("%v\ninstall what the tests need with: make setup (scripts/setup.sh)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	return cl
}

// TestZookeeperAdapter runs the adapter against a real ZooKeeper server:
// Reset makes a marked znode and refuses one it did not make; of two
// compare-and-sets from one version, the second to commit aborts, as
// does a create of a znode made since it was read absent; a transaction
// over several znodes commits atomically, and aborts whole when a znode
// it only read changed (a read-only one too) or appeared; appends build
// a list; a blind write and a delete take effect.
func TestZookeeperAdapter(t *testing.T) {
	t.Parallel() // it stands up its own server, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := upZookeeper(t, ctx, "zookeeper:1")
	d, err := Open(ctx, cl.DSNs()[0], "zk_adapter_test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.Version(ctx); err != nil || !strings.HasPrefix(v, "ZooKeeper 3.") {
		t.Errorf("version %q, %v", v, err)
	}
	if d.Supports(Serializable) != nil || d.Supports(ReadCommitted) == nil {
		t.Errorf("want serializable alone")
	}
	if err := d.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	conn := func() Conn {
		c, err := d.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := conn(), conn()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	aborts := func(err error, what string) {
		t.Helper()
		if class, _ := d.Classify(err); class != Aborted || !d.(Answerer).Answered(err) {
			t.Fatalf("%s: %v (%v), want an abort", what, err, class)
		}
	}
	read := func(c Conn, k int64, want ...int64) {
		t.Helper()
		must(c.Begin(ctx, Serializable))
		if vs, err := c.Read(ctx, k); err != nil || !slices.Equal(vs, want) {
			t.Fatalf("read %d: %v, %v; want %v", k, vs, err, want)
		}
		must(c.Commit(ctx))
	}
	// A blind write creates the znode, a second one sets it.
	for _, v := range []int64{9, 10} {
		must(a.Begin(ctx, Serializable))
		must(a.Write(ctx, 1, v))
		must(a.Commit(ctx))
	}
	read(b, 1, 10)
	// Two compare-and-sets from one version: the second aborts.
	must(a.Begin(ctx, Serializable))
	must(b.Begin(ctx, Serializable))
	if ok, err := a.CompareAndSet(ctx, 1, 10, 11); !ok || err != nil {
		t.Fatalf("cas: %v %v", ok, err)
	}
	if ok, err := b.CompareAndSet(ctx, 1, 10, 12); !ok || err != nil {
		t.Fatalf("cas: %v %v", ok, err)
	}
	must(a.Commit(ctx))
	aborts(b.Commit(ctx), "the second compare-and-set from one version")
	read(a, 1, 11)
	// Two inserts into an absent key: the second aborts.
	must(a.Begin(ctx, Serializable))
	must(b.Begin(ctx, Serializable))
	if ok, err := a.InsertIfAbsent(ctx, 3, 30); !ok || err != nil {
		t.Fatalf("insert: %v %v", ok, err)
	}
	if ok, err := b.InsertIfAbsent(ctx, 3, 31); !ok || err != nil {
		t.Fatalf("insert: %v %v", ok, err)
	}
	must(b.Commit(ctx))
	aborts(a.Commit(ctx), "the second insert")
	read(a, 3, 31)
	// A transaction over two keys commits both writes at once.
	must(a.Begin(ctx, Serializable))
	if _, err := a.Read(ctx, 1); err != nil {
		t.Fatal(err)
	}
	must(a.Write(ctx, 1, 100))
	must(a.Write(ctx, 4, 40))
	must(a.Commit(ctx))
	read(b, 1, 100)
	read(b, 4, 40)
	// A write skew: each reads both keys and writes one; the second to
	// commit aborts, since a key it only read changed.
	must(a.Begin(ctx, Serializable))
	must(b.Begin(ctx, Serializable))
	for _, c := range []Conn{a, b} {
		for _, k := range []int64{1, 4} {
			if _, err := c.Read(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	must(a.Write(ctx, 1, 101))
	must(b.Write(ctx, 4, 41))
	must(a.Commit(ctx))
	aborts(b.Commit(ctx), "the second of a write skew")
	read(b, 4, 40)
	// A read-only transaction over two keys aborts when one changed
	// before it committed (its reads were not of one state).
	must(b.Begin(ctx, Serializable))
	if _, err := b.Read(ctx, 1); err != nil {
		t.Fatal(err)
	}
	must(a.Begin(ctx, Serializable))
	must(a.Write(ctx, 1, 102))
	must(a.Commit(ctx))
	if _, err := b.Read(ctx, 4); err != nil {
		t.Fatal(err)
	}
	aborts(b.Commit(ctx), "a read-only transaction whose first read changed")
	// A transaction that read a key absent aborts when it appeared.
	must(b.Begin(ctx, Serializable))
	if vs, err := b.Read(ctx, 5); err != nil || len(vs) != 0 {
		t.Fatalf("read 5: %v, %v", vs, err)
	}
	must(b.Write(ctx, 6, 60))
	must(a.Begin(ctx, Serializable))
	must(a.Write(ctx, 5, 50))
	must(a.Commit(ctx))
	aborts(b.Commit(ctx), "a transaction whose absent read appeared")
	read(b, 6)
	// A delete.
	must(a.Begin(ctx, Serializable))
	if found, err := a.Delete(ctx, 5); !found || err != nil {
		t.Fatalf("delete: %v %v", found, err)
	}
	must(a.Commit(ctx))
	read(b, 5)
	// Appends.
	for e := int64(1); e <= 3; e++ {
		must(a.Begin(ctx, Serializable))
		must(a.Append(ctx, 7, e))
		must(a.Commit(ctx))
	}
	must(a.Begin(ctx, Serializable))
	if l, err := a.ReadList(ctx, 7); err != nil || !slices.Equal(l, []int64{1, 2, 3}) {
		t.Fatalf("list %v, %v", l, err)
	}
	must(a.Commit(ctx))
	// A znode isoscope did not make is not reset.
	admin := d.(*zkDB).admin
	if _, err := admin.Create(zkRoot+"/zk_not_ours", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, cl.DSNs()[0], "zk_not_ours")
	must(err)
	defer other.Close()
	var notOurs *NotOursError
	if err := other.Reset(ctx); !errors.As(err, &notOurs) {
		t.Fatalf("reset of a znode isoscope did not make: %v", err)
	}
}

// TestZookeeperLock holds a table with an ephemeral znode: a second lock
// is refused at once, naming the holder; after release the table can be
// locked again; a holder whose session ends (a crashed run) loses it.
func TestZookeeperLock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := upZookeeper(t, ctx, "zookeeper:1")
	open := func() Database {
		d, err := Open(ctx, cl.DSNs()[0], "zk_lock_test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	one, two := open(), open()
	l, err := one.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = two.Lock(ctx)
	var inUse *InUseError
	if !errors.As(err, &inUse) || !strings.Contains(inUse.Holder, "isoscope pid") {
		t.Fatalf("a second lock: %v, want an InUseError naming the holder", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("the second lock was refused after %s", time.Since(start))
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := two.Lock(ctx)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	defer l2.Release()
	if _, err := one.Lock(ctx); !errors.As(err, &inUse) {
		t.Fatalf("a lock while the second holds it: %v", err)
	}
}

// zkLeader is the index of the node that leads the ensemble (srvr's
// mode), or -1.
func zkLeader(cl *cluster.Cluster) int {
	for i, dsn := range cl.DSNs() {
		addr := strings.TrimSuffix(strings.TrimPrefix(dsn, "zookeeper://"), "?reads=sync")
		st, err := zkSrvr(context.Background(), addr)
		if err == nil && st["Mode"] == "leader" {
			return i
		}
	}
	return -1
}

// TestZookeeperStaleReads shows what ZooKeeper promises of reads: a
// follower cut off from its leader keeps answering reads from its own
// state until it notices (syncLimit ticks), so a write the others commit
// meanwhile is not seen through it without sync — a stale read, which
// sequential consistency allows and linearizability does not; with
// reads=sync the same read waits for the leader, and fails rather than
// answer stale.
func TestZookeeperStaleReads(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := upZookeeper(t, ctx, "zookeeper:3")
	leader := zkLeader(cl)
	if leader < 0 {
		t.Fatal("no server says it leads")
	}
	follower, other := (leader+1)%3, (leader+2)%3
	dsn := cl.DSNs()
	w, err := Open(ctx, dsn[leader], "zk_stale_test")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	session := func(addr string) Conn {
		d, err := Open(ctx, addr, "zk_stale_test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		c, err := d.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	writer := session(dsn[other])
	local, synced := session(dsn[follower]), session(dsn[follower]+"?reads=sync")
	write := func(v int64) {
		t.Helper()
		if err := writer.Begin(ctx, Serializable); err != nil {
			t.Fatal(err)
		}
		if err := writer.Write(ctx, 1, v); err != nil {
			t.Fatal(err)
		}
		if err := writer.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	readOn := func(c Conn) ([]int64, error) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := c.Begin(rctx, Serializable); err != nil {
			return nil, err
		}
		vs, err := c.Read(rctx, 1)
		if err == nil {
			err = c.Commit(rctx)
		}
		return vs, err
	}
	write(1)
	for _, c := range []Conn{local, synced} {
		if !waitUntil(5*time.Second, func() bool { vs, err := readOn(c); return err == nil && slices.Equal(vs, []int64{1}) }) {
			t.Fatal("the follower does not serve the first write")
		}
	}
	if err := cl.Isolate(follower); err != nil {
		t.Fatal(err)
	}
	write(2)
	vs, err := readOn(local)
	if err != nil || !slices.Equal(vs, []int64{1}) {
		t.Errorf("a read without sync on the cut-off follower: %v, %v; want the stale [1]", vs, err)
	}
	if vs, err := readOn(synced); err == nil {
		t.Errorf("a read after a sync on the cut-off follower answered %v, want no answer", vs)
	}
	cl.Heal()
}

// waitUntil polls cond every 100 ms for at most d.
func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
