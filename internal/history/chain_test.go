package history

import (
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
