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
