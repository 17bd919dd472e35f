package precheck

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestRunParallel: on a history large enough to be checked in parts, Run
// finds what one pass finds, in the same order.
func TestRunParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	h := history.New()
	for k := range 50 {
		h.Key(history.IntValue(int64(k)))
	}
	h.Sessions = append(h.Sessions, history.IntValue(0))
	for i := range parallelTxns + 500 {
		var ops []history.Op
		for range 4 {
			k := history.KeyID(r.IntN(50))
			v := history.IntValue(int64(r.IntN(3 * (i + 1))))
			if r.IntN(2) == 0 {
				ops = append(ops, history.Op{Kind: history.Write, Key: k, Value: v})
			} else {
				ops = append(ops, history.Op{Kind: history.Read, Key: k, Value: v})
			}
		}
		st := history.Committed
		if r.IntN(10) == 0 {
			st = history.Aborted
		}
		h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(i)), Status: st, Ops: ops})
	}
	ix := history.NewIndex(h)
	for _, name := range []string{"ser", "rc"} {
		l, err := level.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		got := Run(ix, l)
		want, err := run(context.Background(), ix, l, 0, len(h.Txns))
		if err != nil || len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %d anomalies in parts, %d in one pass", name, len(got), len(want))
		}
	}
}

// TestAlike: levels the shared checks judge alike get the same findings
// on random histories with every kind of shared-check anomaly (reads of
// aborted, intermediate, unwritten and own later values, non-repeatable
// reads, unknown transactions), and Alike is not trivially true.
func TestAlike(t *testing.T) {
	pairs, unlike := 0, 0
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 9))
		h := history.New()
		for k := range 4 {
			h.Key(history.IntValue(int64(k)))
		}
		h.Sessions = append(h.Sessions, history.IntValue(0))
		for i := range 30 {
			var ops []history.Op
			for range 1 + r.IntN(5) {
				k := history.KeyID(r.IntN(4))
				v := history.IntValue(int64(r.IntN(40)))
				kind := history.Read
				if r.IntN(2) == 0 {
					kind = history.Write
				}
				ops = append(ops, history.Op{Kind: kind, Key: k, Value: v})
			}
			st := []history.Status{history.Committed, history.Committed, history.Aborted, history.Unknown}[r.IntN(4)]
			h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(i)), Status: st, Ops: ops})
		}
		ix := history.NewIndex(h)
		for _, a := range level.All() {
			for _, b := range level.All() {
				if !Alike(a, b) {
					unlike++
					continue
				}
				pairs++
				if got, want := Run(ix, b), Run(ix, a); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d: %s and %s are judged alike, but find %d and %d anomalies", seed, a.Name, b.Name, len(want), len(got))
				}
			}
		}
	}
	if unlike == 0 {
		t.Fatal("every pair of levels alike")
	}
	t.Logf("%d pairs alike, %d not", pairs, unlike)
}
