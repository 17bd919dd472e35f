package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/cluster"
)

func TestParseNatsKV(t *testing.T) {
	tg, err := ParseTarget("nats-kv://127.0.0.1:4222,localhost:4223?replicas=3&reads=leader")
	if err != nil || tg.Kind != NatsKV || len(tg.natsKV.servers) != 2 || tg.natsKV.servers[1] != "nats://localhost:4223" ||
		tg.natsKV.replicas != 3 || !tg.natsKV.leaderReads {
		t.Fatalf("got %+v, %v", tg, err)
	}
	if tg.Display != "nats-kv://127.0.0.1:4222,localhost:4223?replicas=3&reads=leader" {
		t.Errorf("display %q", tg.Display)
	}
	if tg, err := ParseTarget("nats-kv://127.0.0.1:4222"); err != nil || tg.natsKV.replicas != 1 || tg.natsKV.leaderReads {
		t.Fatalf("got %+v, %v", tg, err)
	}
	for _, bad := range []string{"nats-kv://", "nats-kv:127.0.0.1:4222", "nats-kv://127.0.0.1", "nats-kv://127.0.0.1:4222/x",
		"nats-kv://u:p@127.0.0.1:4222", "nats-kv://127.0.0.1:4222?replicas=6", "nats-kv://127.0.0.1:4222?replicas=x",
		"nats-kv://127.0.0.1:4222?reads=stale", "nats-kv://127.0.0.1:4222?timeout=1s"} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: got %v, want an error naming it", bad, err)
		}
	}
}

// upNats stands up one nats-server (JetStream, standalone) for a test.
func upNats(t *testing.T, ctx context.Context) *cluster.Cluster {
	t.Helper()
	cl, err := cluster.Up(ctx, cluster.Spec{Kind: cluster.NatsKV, Nodes: 1}, "", nil)
	if err != nil {
		if strings.Contains(err.Error(), "(Debian: ") {
			t.Fatalf("%v\ninstall what the tests need with: make setup (scripts/setup.sh)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	return cl
}

// TestNatsKVAdapter runs the adapter against a real nats-server: Reset
// makes a marked bucket and refuses one it did not make; a transaction
// is one key's read-modify-write, and a second key is refused; of two
// read-modify-writes from one revision, the second to commit aborts
// (JetStream's wrong last sequence), as does a Create of a key made
// since it was read absent; appends build a list.
func TestNatsKVAdapter(t *testing.T) {
	t.Parallel() // it stands up its own server, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := upNats(t, ctx)
	d, err := Open(ctx, cl.DSNs()[0], "natskv_adapter_test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if v, err := d.Version(ctx); err != nil || !strings.HasPrefix(v, "NATS 2.") {
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
	// Two read-modify-writes from one revision: the second aborts.
	must(a.Begin(ctx, Serializable))
	must(a.Write(ctx, 1, 10))
	must(a.Commit(ctx))
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
		t.Fatalf("the second compare-and-set from one revision: %v (%v), want an abort", err, class)
	}
	must(a.Begin(ctx, Serializable))
	if vs, err := a.Read(ctx, 1); err != nil || !slices.Equal(vs, []int64{11}) {
		t.Fatalf("read %v, %v; want [11]", vs, err)
	}
	// A second key is refused.
	err = a.Write(ctx, 2, 5)
	if class, _ := d.Classify(err); !errors.Is(err, errNatsMultiKey) || class != Failed {
		t.Fatalf("a second key: %v (%v)", err, class)
	}
	must(a.Rollback(ctx))
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
	if class, _ := d.Classify(a.Commit(ctx)); class != Aborted {
		t.Fatalf("the second insert: %v, want an abort", class)
	}
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
	// A bucket isoscope did not make is not reset.
	js, err := jetstream.New(d.(*natsKVDB).admin)
	must(err)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "natskv_not_ours"}); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, cl.DSNs()[0], "natskv_not_ours")
	must(err)
	defer other.Close()
	var notOurs *NotOursError
	if err := other.Reset(ctx); !errors.As(err, &notOurs) {
		t.Fatalf("reset of a bucket isoscope did not make: %v", err)
	}
}

// TestNatsKVLock holds a table with a key of the lock bucket: a second
// lock finds it held and names its holder, also after the bucket's TTL
// has passed (the holder renews it); after release the table can be
// locked again; a holder that stops renewing (a crashed run) loses it
// when the TTL runs out.
func TestNatsKVLock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	natsLockTTL, natsLockRenew = 2*time.Second, 200*time.Millisecond
	cl := upNats(t, ctx)
	d, err := Open(ctx, cl.DSNs()[0], "natskv_lock_test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	nd := d.(*natsKVDB)
	release, held, err := nd.lockTable(ctx, "run one")
	if err != nil || held != "" {
		t.Fatalf("lock: %q, %v", held, err)
	}
	time.Sleep(2 * natsLockTTL)
	if _, held, err := nd.lockTable(ctx, "run two"); err != nil || !strings.Contains(held, "run one") {
		t.Fatalf("a second lock after the TTL: held %q, %v; want run one's", held, err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	release, held, err = nd.lockTable(ctx, "run three")
	if err != nil || held != "" {
		t.Fatalf("lock after release: %q, %v", held, err)
	}
	// Run three crashes: its connection goes, its renewals fail, its key
	// stays until the TTL runs out.
	nd2, err := Open(ctx, cl.DSNs()[0], "natskv_lock_test")
	if err != nil {
		t.Fatal(err)
	}
	defer nd2.Close()
	nd.admin.Close()
	defer release()
	crashed := time.Now()
	deadline := time.Now().Add(4 * natsLockTTL)
	for {
		_, held, err := nd2.(*natsKVDB).lockTable(ctx, "run four")
		if err != nil {
			t.Fatal(err)
		}
		if held == "" {
			if time.Since(crashed) < natsLockTTL/2 {
				t.Fatalf("the crashed run's lock went after %s, before its TTL of %s", time.Since(crashed), natsLockTTL)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a lock no longer renewed: still held after %s", 4*natsLockTTL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNatsKVClassify: a stale revision aborts, and is JetStream's
// answer; "JetStream system temporarily unavailable" (503: no leader
// for the stream or the meta group during a fault) loses the connection,
// so that the session reconnects with back-off, and a COMMIT that got it
// is unknown; a second key fails.
func TestNatsKVClassify(t *testing.T) {
	d := &natsKVDB{}
	for _, c := range []struct {
		err      error
		class    ErrorClass
		answered bool
	}{
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 5"}, Aborted, true},
		{fmt.Errorf("%w: %w", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant}, jetstream.ErrKeyExists), Aborted, true},
		{fmt.Errorf("%w: x", errNatsConflict), Aborted, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, Disconnected, false},
		{nats.ErrNoResponders, Disconnected, false},
		{nats.ErrTimeout, Disconnected, false},
		{context.DeadlineExceeded, Disconnected, false},
		{errNatsMultiKey, Failed, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10059, Description: "stream not found"}, Failed, true},
	} {
		if class, why := d.Classify(c.err); class != c.class || d.Answered(c.err) != c.answered {
			t.Errorf("%v: %v (%s), answered %v; want %v, answered %v", c.err, class, why, d.Answered(c.err), c.class, c.answered)
		}
	}
}
