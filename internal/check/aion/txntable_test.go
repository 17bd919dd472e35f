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

// TestTxnTableRun: ids that mostly grow with gaps, some arriving late,
// some put again, removed oldest first and at random, agree with a Go
// map — the run and the table sharing the ids.
func TestTxnTableRun(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 2))
		tt := newTxnTable()
		want := map[int64]*txn{}
		next, oldest := int64(r.IntN(1000)), int64(0)
		oldest = next
		for range 30000 {
			var id int64
			switch r.IntN(20) {
			case 0, 1: // late, or again
				id = next - r.Int64N(300)
			case 2: // ahead of the run by more than maxGap: to the table
				id = next + maxGap + 1 + r.Int64N(100)
			case 3:
				if r.IntN(100) == 0 { // a jump: the run stops
					next += 1000
				}
				id = next
			default:
				next += 1 + r.Int64N(int64(1+seed%8))
				id = next
			}
			switch r.IntN(6) {
			case 0:
				tt.remove(history.IntValue(id))
				delete(want, id)
			case 1:
				tt.remove(history.IntValue(oldest))
				delete(want, oldest)
				oldest++
			default:
				x := &txn{id: history.IntValue(id)}
				tt.put(x)
				want[id] = x
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
