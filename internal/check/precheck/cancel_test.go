package precheck

import (
	"context"
	"errors"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// repeated returns a history of n transactions on one key: each even one
// writes value i%3 and is aborted every fourth time, each odd one reads
// value i%3 (so reads of aborted values are found), with every value
// written thousands of times.
func repeated(n int) *history.History {
	h := history.New()
	x := h.Key(history.IntValue(0))
	h.Sessions = append(h.Sessions, history.IntValue(0))
	for i := range n {
		op := history.Op{Kind: history.Read, Key: x, Value: history.IntValue(int64(i % 3))}
		st := history.Committed
		if i%2 == 0 {
			op.Kind = history.Write
			if i%8 == 0 {
				st = history.Aborted
			}
		}
		h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(i)), Status: st, Ops: []history.Op{op}})
	}
	return h
}

// TestRunContextStops: the shared checks stop with the context's error
// once it ends, on a history large enough to be checked in parts and on a
// small one, and find what Run finds with a live context.
func TestRunContextStops(t *testing.T) {
	for _, n := range []int{100, parallelTxns + 10} {
		ix := history.NewIndex(repeated(n))
		l := level.Get(level.Serializable)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := RunContext(ctx, ix, l); !errors.Is(err, context.Canceled) {
			t.Fatalf("%d transactions, a cancelled context: %v", n, err)
		}
		found, err := RunContext(context.Background(), ix, l)
		if err != nil || len(found) != len(Run(ix, l)) {
			t.Fatalf("%d transactions: %v, %d anomalies, Run %d", n, err, len(found), len(Run(ix, l)))
		}
	}
}
