package aion

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestTxnTable: random puts, gets and removes, over ids that collide
// often, agree with a Go map, through growth and deletions that shift
// entries back.
func TestTxnTable(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		tt := newTxnTable()
		want := map[int64]*txn{}
		span := int64(50 + r.IntN(5000))
		for range 20000 {
			id := r.Int64N(span) - span/2
			switch r.IntN(3) {
			case 0:
				x := &txn{id: history.IntValue(id)}
				tt.put(x)
				want[id] = x
			case 1:
				tt.remove(history.IntValue(id))
				delete(want, id)
			}
			if got := tt.get(history.IntValue(id)); got != want[id] {
				t.Fatalf("seed %d: id %d: got %v, want %v", seed, id, got, want[id])
			}
		}
		if tt.len() != len(want) {
			t.Fatalf("seed %d: %d held, want %d", seed, tt.len(), len(want))
		}
		for id, x := range want {
			if tt.get(history.IntValue(id)) != x {
				t.Fatalf("seed %d: id %d lost", seed, id)
			}
		}
	}
}
