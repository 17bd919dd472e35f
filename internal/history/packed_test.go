package history

import (
	"math/rand/v2"
	"testing"
)

// TestPackedTable: the table agrees with a Go map through inserts,
// overwrites, lookups of absent words and growth from a small size.
func TestPackedTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	tab, want := newPackedTable(4), map[uint64]int32{}
	for i := range 200_000 {
		w := uint64(r.IntN(5000))<<40 | uint64(r.IntN(50))
		if r.IntN(3) == 0 {
			w = ^uint64(0) - 1 - uint64(r.IntN(3)) // words near the top
		}
		if r.IntN(2) == 0 {
			tab.put(w, int32(i))
			want[w] = int32(i)
		} else {
			got, found := tab.putIfAbsent(w, int32(i))
			prev, had := want[w]
			if found != had || found && got != prev {
				t.Fatalf("putIfAbsent(%x) = %d, %v; want %d, %v", w, got, found, prev, had)
			}
			if !had {
				want[w] = int32(i)
			}
		}
		q := uint64(r.IntN(6000))<<40 | uint64(r.IntN(60))
		got, ok := tab.get(q)
		if w2, ok2 := want[q]; ok != ok2 || got != w2 {
			t.Fatalf("get(%x) = %d, %v; want %d, %v", q, got, ok, w2, ok2)
		}
	}
	if tab.n != len(want) {
		t.Fatalf("%d entries, want %d", tab.n, len(want))
	}
	for w, id := range want {
		if got, ok := tab.get(w); !ok || got != id {
			t.Fatalf("get(%x) = %d, %v; want %d", w, got, ok, id)
		}
	}
}

// TestResolveReadsParallel: on a history large enough to split the read
// resolution across processors, the parts agree with one sequential pass.
func TestResolveReadsParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	h := New()
	for k := range 500 {
		h.Key(IntValue(int64(k)))
	}
	h.Sessions = append(h.Sessions, IntValue(0))
	for i := range parallelReads + 1000 {
		var ops []Op
		for range 4 {
			k := KeyID(r.IntN(500))
			if r.IntN(2) == 0 {
				ops = append(ops, Op{Kind: Write, Key: k, Value: IntValue(int64(r.IntN(2000)))})
			} else {
				ops = append(ops, Op{Kind: Read, Key: k, Value: IntValue(int64(r.IntN(2000)))})
			}
		}
		h.Txns = append(h.Txns, Txn{ID: IntValue(int64(i)), Ops: ops})
	}
	ix := NewIndex(h)
	got := append([]int32(nil), ix.readFrom...)
	ix.resolveReadsOf(0, len(h.Txns))
	for i := range got {
		if got[i] != ix.readFrom[i] {
			t.Fatalf("operation %d: parallel %d, sequential %d", i, got[i], ix.readFrom[i])
		}
	}
}
