package precheck

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
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

// TestRepeatedValueReadsInLinearTime: 50,000 reads of a value written
// 50,000 times are checked in well under a second: a read's sources are
// enumerated only up to the first final write that took effect. Every
// read walked all of them before (2.5·10⁹ steps here; 136 s on a
// 100,000-transaction general history with --duplicates 0.5).
func TestRepeatedValueReadsInLinearTime(t *testing.T) {
	const n = 100_000
	h := history.New()
	x := h.Key(history.IntValue(0))
	h.Sessions = append(h.Sessions, history.IntValue(0))
	for i := range n {
		op := history.Op{Kind: history.Write, Key: x, Value: history.IntValue(7)}
		if i%2 == 1 {
			op.Kind = history.Read
		}
		h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(i)), Status: history.Committed, Ops: []history.Op{op}})
	}
	// A read of a value only an aborted transaction wrote is still found.
	y := h.Key(history.IntValue(1))
	h.Txns = append(h.Txns,
		history.Txn{ID: history.IntValue(n), Status: history.Aborted, Ops: []history.Op{{Kind: history.Write, Key: y, Value: history.IntValue(1)}}},
		history.Txn{ID: history.IntValue(n + 1), Status: history.Committed, Ops: []history.Op{{Kind: history.Read, Key: y, Value: history.IntValue(1)}}})
	ix := history.NewIndex(h)
	start := time.Now()
	found := Run(ix, level.Get(level.Serializable))
	took := time.Since(start)
	if len(found) != 1 || found[0].Kind != anomaly.AbortedRead {
		t.Fatalf("found %v", found)
	}
	if took > 2*time.Second {
		t.Errorf("checking %d reads of a value written %d times took %v", n/2, n/2, took)
	}
}
