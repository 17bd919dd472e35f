package db

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/cluster"
)

func TestParseRedis(t *testing.T) {
	tg, err := ParseTarget("redis-sentinel://127.0.0.1:26379,localhost:26380/mymaster?wait=1&wait-timeout=250ms&reads=replica")
	if err != nil || tg.Kind != Redis || len(tg.redis.addrs) != 2 || tg.redis.master != "mymaster" || tg.redis.wait != 1 ||
		tg.redis.waitTimeout != 250*time.Millisecond || !tg.redis.replicaReads {
		t.Fatalf("got %+v, %v", tg, err)
	}
	if tg.Display != "redis-sentinel://127.0.0.1:26379,localhost:26380/mymaster?wait=1&wait-timeout=250ms&reads=replica" {
		t.Errorf("display %q", tg.Display)
	}
	if tg, err := ParseTarget("redis://127.0.0.1:6379"); err != nil || tg.redis.master != "" || tg.redis.wait != 0 || tg.Display != "redis://127.0.0.1:6379" {
		t.Fatalf("got %+v, %v", tg, err)
	}
	for _, bad := range []string{"redis://", "redis:127.0.0.1:6379", "redis://127.0.0.1", "redis://127.0.0.1:6379/x",
		"redis://127.0.0.1:6379,127.0.0.1:6380", "redis://127.0.0.1:6379?wait=1", "redis-sentinel://127.0.0.1:26379",
		"redis-sentinel://u:p@127.0.0.1:26379/m", "redis-sentinel://127.0.0.1:26379/m?wait=x", "redis-sentinel://127.0.0.1:26379/m?wait=-1",
		"redis-sentinel://127.0.0.1:26379/m?reads=any", "redis-sentinel://127.0.0.1:26379/m?wait-timeout=0s",
		"redis-sentinel://127.0.0.1:26379/m?timeout=1s", "redis-sentinel://127.0.0.1:26379/a/b"} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: got %v, want an error naming it", bad, err)
		}
	}
}

// upRedis stands up a Redis cluster of spec for a test.
func upRedis(t *testing.T, ctx context.Context, spec string) *cluster.Cluster {
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

// TestRedisAdapter runs the adapter against a primary, a replica and
// three sentinels: Reset marks the table and refuses keys it did not
// mark; of two read-modify-writes from one version the second aborts
// (EXEC answers nil), as does a transaction that only read when a key it
// read changed before its end; lists are RPUSHed and read with the
// transaction's own appends; a range read is refused; a second run's lock
// on the table is refused at once, naming the holder; with reads=replica a
// transaction that only reads runs on the replica; with wait=2 and one
// replica, a write ends unknown; with wait=1, a write WAIT acknowledged
// survives the primary's SIGKILL, and the adapter commits again on the
// replica the sentinels promote (without wait: it has no replica left).
func TestRedisAdapter(t *testing.T) {
	t.Parallel() // it stands up its own servers, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := upRedis(t, ctx, "redis:2")
	dsn := cl.DSNs()[0]
	d, err := Open(ctx, dsn+"?wait=1", "redis_adapter_test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.Version(ctx); err != nil || !strings.HasPrefix(v, "Redis 7.") {
		t.Errorf("version %q, %v", v, err)
	}
	if d.Supports(Serializable) != nil || d.Supports(RepeatableRead) == nil {
		t.Errorf("want serializable alone")
	}
	lock, err := d.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, dsn, "redis_adapter_test")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	start := time.Now()
	var inUse *InUseError
	if _, err := other.Lock(ctx); !errors.As(err, &inUse) || !strings.Contains(err.Error(), "isoscope pid") || time.Since(start) > time.Second {
		t.Fatalf("a second lock: %v after %s; want an InUseError naming the holder within a second", err, time.Since(start))
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	if l, err := other.Lock(ctx); err != nil {
		t.Fatalf("the lock after its release: %v", err)
	} else if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	rd := d.(*redisDB)
	if err := rd.primary.Set(ctx, "redis_foreign:v:1", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	foreign, err := Open(ctx, dsn, "redis_foreign")
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	var notOurs *NotOursError
	if err := foreign.Reset(ctx); !errors.As(err, &notOurs) {
		t.Errorf("Reset of unmarked keys: %v, want a NotOursError", err)
	}
	conn := func(d Database) Conn {
		c, err := d.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	a, b := conn(d), conn(d)
	must(a.Begin(ctx, Serializable))
	must(a.Write(ctx, 1, 10))
	if err := a.Commit(ctx); err != nil {
		t.Fatalf("%#v", err)
	}
	// Two read-modify-writes from one version: the second aborts.
	must(a.Begin(ctx, Serializable))
	must(b.Begin(ctx, Serializable))
	if ok, err := a.CompareAndSet(ctx, 1, 10, 11); !ok || err != nil {
		t.Fatalf("cas: %v %v", ok, err)
	}
	if ok, err := b.CompareAndSet(ctx, 1, 10, 12); !ok || err != nil {
		t.Fatalf("cas: %v %v", ok, err)
	}
	must(a.Commit(ctx))
	err = b.Commit(ctx)
	if class, _ := d.Classify(err); class != Aborted || !d.(Answerer).Answered(err) {
		t.Fatalf("the second read-modify-write from one version: %v (%v), want an abort", err, class)
	}
	// A transaction that only read aborts when what it read changed.
	must(a.Begin(ctx, Serializable))
	if vs, err := a.Read(ctx, 1); err != nil || !slices.Equal(vs, []int64{11}) {
		t.Fatalf("read %v, %v; want [11]", vs, err)
	}
	must(b.Begin(ctx, Serializable))
	must(b.Write(ctx, 1, 13))
	must(b.Commit(ctx))
	if vs, err := a.Read(ctx, 2); err != nil || len(vs) != 0 {
		t.Fatalf("read of an absent key: %v, %v", vs, err)
	}
	if err := a.Commit(ctx); !errors.Is(err, errRedisConflict) {
		t.Fatalf("a reader whose key changed committed: %v", err)
	}
	// Rollback drops the watches: the connection's next transaction is
	// not aborted by them.
	must(a.Begin(ctx, Serializable))
	if _, err := a.Read(ctx, 1); err != nil {
		t.Fatal(err)
	}
	must(a.Rollback(ctx))
	// Lists, with the transaction's own appends.
	must(a.Begin(ctx, Serializable))
	must(a.Append(ctx, 5, 1))
	must(a.Append(ctx, 5, 2))
	must(a.Commit(ctx))
	must(a.Begin(ctx, Serializable))
	must(a.Append(ctx, 5, 3))
	if l, err := a.ReadList(ctx, 5); err != nil || !slices.Equal(l, []int64{1, 2, 3}) {
		t.Fatalf("list %v, %v; want [1 2 3]", l, err)
	}
	must(a.Commit(ctx))
	if n, err := rd.primary.LLen(ctx, "redis_adapter_test:l:5").Result(); err != nil || n != 3 {
		t.Fatalf("LLEN %d, %v; want 3", n, err)
	}
	// Deletes, inserts and range reads.
	must(a.Begin(ctx, Serializable))
	if found, err := a.Delete(ctx, 1); !found || err != nil {
		t.Fatalf("delete: %v %v", found, err)
	}
	if ok, err := a.InsertIfAbsent(ctx, 1, 20); !ok || err != nil {
		t.Fatalf("insert after delete: %v %v", ok, err)
	}
	must(a.Commit(ctx))
	if _, err := a.Scan(ctx, 0, 10, 0); !errors.Is(err, errRedisNoRange) {
		t.Errorf("scan: %v", err)
	}

	// wait=2 with one replica: too few, the outcome is unknown.
	d2, err := Open(ctx, dsn+"?wait=2&wait-timeout=100ms", "redis_adapter_test")
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	c2 := conn(d2)
	must(c2.Begin(ctx, Serializable))
	must(c2.Write(ctx, 7, 1))
	err = c2.Commit(ctx)
	if class, _ := d2.Classify(err); class != Disconnected || d2.(Answerer).Answered(err) {
		t.Errorf("a write two replicas did not acknowledge: %v (%v), want an unknown outcome", err, class)
	}

	// reads=replica: a transaction that only reads runs on the replica.
	dr, err := Open(ctx, dsn+"?reads=replica", "redis_adapter_test")
	if err != nil {
		t.Fatal(err)
	}
	defer dr.Close()
	cr := conn(dr).(*redisConn)
	for _, ro := range []bool{true, false} {
		cr.RouteReadOnly(ro)
		must(cr.Begin(ctx, Serializable))
		if vs, err := cr.Read(ctx, 1); err != nil || !slices.Equal(vs, []int64{20}) {
			t.Fatalf("read %v, %v", vs, err)
		}
		role, err := cr.conn.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "slave", false: "master"}[ro]; role[0] != want {
			t.Errorf("read-only %v: ran on a %v, want a %s", ro, role[0], want)
		}
		must(cr.Commit(ctx))
	}

	// wait=1: an acknowledged write survives the primary's SIGKILL.
	must(a.Begin(ctx, Serializable))
	must(a.Write(ctx, 9, 99))
	must(a.Commit(ctx))
	if err := cl.Kill(0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var vs []int64
		c, err := other.Connect(ctx) // no wait: the new primary has no replica

		if err == nil {
			err = c.Begin(ctx, Serializable)
		}
		if err == nil {
			if vs, err = c.Read(ctx, 9); err == nil {
				if err = c.Write(ctx, 9, 100); err == nil {
					err = c.Commit(ctx)
				}
			}
		}
		if c != nil {
			_ = c.Rollback(ctx)
			_ = c.Close()
		}
		if err == nil {
			if !slices.Equal(vs, []int64{99}) {
				t.Fatalf("after the failover key 9 read %v, want the write WAIT acknowledged, [99]", vs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no commit within a minute of the primary's SIGKILL: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRedisLock: a held lock is renewed (with a TTL of 1 s, a second run
// is still refused after 2.5 s, naming the holder); a lock whose holder
// stopped renewing it expires; after release the table can be locked
// again. Run it under -race: the renewal is a goroutine.
func TestRedisLock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := upRedis(t, ctx, "redis:1")
	oldTTL, oldRenew := redisLockTTL, redisLockRenew
	redisLockTTL, redisLockRenew = time.Second, 200*time.Millisecond
	defer func() { redisLockTTL, redisLockRenew = oldTTL, oldRenew }()
	open := func() Database {
		d, err := Open(ctx, cl.DSNs()[0], "redis_lock_test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a, b := open(), open()
	la, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	var inUse *InUseError
	if _, err := b.Lock(ctx); !errors.As(err, &inUse) || !strings.Contains(inUse.Holder, "isoscope pid") {
		t.Fatalf("a lock renewed for 2.5 s: the second run got %v", err)
	}
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Lock(ctx)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if err := lb.Release(); err != nil {
		t.Fatal(err)
	}
	// A holder that crashed renews nothing: its key expires after the TTL.
	if err := a.(*redisDB).primary.Set(ctx, redisLockKey("redis_lock_test"), "a crashed run", redisLockTTL).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lock(ctx); !errors.As(err, &inUse) || !strings.Contains(inUse.Holder, "a crashed run") {
		t.Fatalf("a crashed run's lock: %v, want the table held by it", err)
	}
	time.Sleep(1500 * time.Millisecond)
	lc, err := a.Lock(ctx)
	if err != nil {
		t.Fatalf("after the TTL without renewal: %v", err)
	}
	if err := lc.Release(); err != nil {
		t.Fatal(err)
	}
}
