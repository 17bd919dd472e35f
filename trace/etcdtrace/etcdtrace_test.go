package etcdtrace_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/isoscopetest"
	"github.com/isoscope/isoscope/trace/etcdtrace"
)

// startEtcd starts a one-member etcd on loopback, stopped when the test
// ends, and returns a client of it.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := cluster.Up(ctx, cluster.Spec{Kind: cluster.Etcd, Nodes: 1}, "", nil)
	if err != nil {
		testservice.Unavailable(t, "etcd: "+err.Error()+testservice.HowToInstall(err.Error()))
	}
	t.Cleanup(c.Stop)
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + strings.TrimPrefix(c.DSNs()[0], "etcd://")},
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// TestConcurrentProgram runs a concurrent program through the wrapper on
// a real etcd: eight sessions put, get, delete, scan (whole, and limited
// to two keys), and run compare-and-set transactions that read two keys
// and write one, over a few keys of a prefix of their own. Every call is
// in the history, and the history is strictly serializable, as etcd's
// linearizable reads and writes promise, with etcd's revisions as its
// version order.
func TestConcurrentProgram(t *testing.T) {
	cl := startEtcd(t)
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Source: "etcdtrace test"})
	if err != nil {
		t.Fatal(err)
	}
	kv := etcdtrace.New(cl, rec)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("etcdtrace-%d/", time.Now().UnixNano())
	var calls atomic.Int64
	var wg sync.WaitGroup
	for s := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := kv.Session(isoscope.Int(int64(s)))
			rng := rand.New(rand.NewPCG(11, uint64(s)))
			key := func() string { return prefix + string(rune('a'+rng.IntN(5))) }
			for n := range 40 {
				value := fmt.Sprintf("%d-%d", s, n)
				var err error
				switch rng.IntN(7) {
				case 0, 1:
					_, err = session.Put(ctx, key(), value)
				case 2:
					_, err = session.Get(ctx, key())
				case 3:
					_, err = session.Delete(ctx, key())
				case 4:
					_, err = session.Get(ctx, prefix, clientv3.WithPrefix())
				case 5:
					_, err = kv.Get(ctx, key(), clientv3.WithRange(prefix+"z"), clientv3.WithLimit(2)) // a session of its own
				default:
					k1, k2 := key(), key()
					var r *clientv3.GetResponse
					if r, err = session.Get(ctx, k1); err != nil {
						break
					}
					calls.Add(1)
					cmp := clientv3.Compare(clientv3.ModRevision(k1), "=", 0)
					if len(r.Kvs) > 0 {
						cmp = clientv3.Compare(clientv3.ModRevision(k1), "=", r.Kvs[0].ModRevision)
					}
					_, err = session.Txn(ctx).If(cmp).
						Then(clientv3.OpGet(k1), clientv3.OpGet(k2), clientv3.OpPut(k1, value)).
						Else(clientv3.OpGet(k1)).Commit()
				}
				if err != nil {
					t.Error(err)
					return
				}
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	h, err := rec.History()
	if err != nil {
		t.Fatal(err)
	}
	st := h.Stats()
	if int64(st.Committed) != calls.Load() || st.Transactions != st.Committed {
		t.Fatalf("recorded %d transactions, %d committed; the program made %d calls", st.Transactions, st.Committed, calls.Load())
	}
	if kv.Unrecorded() != 0 {
		t.Fatalf("%d calls not recorded", kv.Unrecorded())
	}
	res := isoscopetest.RequireLevel(t, h, isoscope.StrictSerializable)
	t.Logf("%d transactions, %d operations: %v by %s", st.Transactions, st.Operations, res.Outcome, res.Checker)
}
