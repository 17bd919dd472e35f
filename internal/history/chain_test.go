package history

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRepeatedValueIndexesInLinearTime: 100,000 writes of one value to one
// key index in well under a second, every write on the value's chain in
// file order. Each write used to walk the chain to its end (5·10⁹ steps
// here, and 10.8 s on a 100,000-transaction general history with
// --duplicates 0.5).
func TestRepeatedValueIndexesInLinearTime(t *testing.T) {
	const n = 100_000
	h := New()
	x := h.Key(IntValue(0))
	h.Sessions = append(h.Sessions, IntValue(0))
	for i := range n {
		h.Txns = append(h.Txns, Txn{ID: IntValue(int64(i)), Ops: []Op{{Kind: Write, Key: x, Value: IntValue(7)}}})
	}
	h.Txns = append(h.Txns, Txn{ID: IntValue(n), Ops: []Op{{Kind: Read, Key: x, Value: IntValue(7)}}})
	start := time.Now()
	ix := NewIndex(h)
	took := time.Since(start)
	i := 0
	ix.Writers(x, IntValue(7), func(w OpRef, final bool) {
		if w.Txn != TxnID(i) || !final {
			t.Fatalf("write %d of the chain is %v (final %v)", i, w, final)
		}
		i++
	})
	if i != n {
		t.Fatalf("%d writes on the chain, want %d", i, n)
	}
	if took > 2*time.Second {
		t.Errorf("indexing %d writes of one value took %v", n, took)
	}
}

// TestIndexStopsWithItsContext: indexing gives up with the context's
// error once it has ended, and indexes as NewIndex does with a live one.
func TestIndexStopsWithItsContext(t *testing.T) {
	h := New()
	x := h.Key(IntValue(0))
	h.Sessions = append(h.Sessions, IntValue(0))
	h.Txns = append(h.Txns,
		Txn{ID: IntValue(1), Status: Unknown, Ops: []Op{{Kind: Write, Key: x, Value: IntValue(1)}}},
		Txn{ID: IntValue(2), Status: Committed, Ops: []Op{{Kind: Read, Key: x, Value: IntValue(1)}}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ix, err := NewIndexContext(ctx, h, MustReadOwn); ix != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled index: %v, %v", ix, err)
	}
	ix, err := NewIndexContext(context.Background(), h, MustReadOwn)
	if err != nil || !ix.Effective(0) {
		t.Fatalf("an index: %v, the observed unknown writer effective: %v", err, err == nil && ix.Effective(0))
	}
}
