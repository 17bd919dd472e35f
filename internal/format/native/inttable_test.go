package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIntTableMatchesMap puts random integers, small and dense, large,
// negative and extreme, into an intTable and a map, and looks up both
// the integers put and others, across resets.
func TestIntTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func() int64 {
		switch rng.IntN(6) {
		case 0:
			return rng.Int64N(1000)
		case 1:
			return rng.Int64N(1 << 20)
		case 2:
			return rng.Int64N(1 << 40)
		case 3:
			return -rng.Int64N(1 << 30)
		case 4:
			return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1 << 16}[rng.IntN(5)]
		}
		return int64(rng.Uint64())
	}
	var tab intTable
	for round := range 20 {
		want := map[int64]int32{}
		// A bound past the count lets the dense table grow under the
		// hash table's integers, which then move.
		bonus := []int{0, 1 << 12, 1 << 19}[round%3]
		n := rng.IntN(50000)
		for range n {
			k := draw()
			if id, ok := tab.get(k); ok != (want[k] != 0) || ok && id != want[k]-1 {
				t.Fatalf("round %d: get(%d) = %d, %v before put; want %d, %v", round, k, id, ok, want[k]-1, want[k] != 0)
			}
			if want[k] == 0 {
				id := int32(len(want))
				tab.put(k, id, len(want)+bonus)
				want[k] = id + 1
			}
		}
		for k, id := range want {
			if got, ok := tab.get(k); !ok || got != id-1 {
				t.Fatalf("round %d: get(%d) = %d, %v; want %d", round, k, got, ok, id-1)
			}
		}
		for range 1000 {
			k := draw()
			if _, ok := tab.get(k); ok != (want[k] != 0) {
				t.Fatalf("round %d: get(%d) found %v; want %v", round, k, ok, want[k] != 0)
			}
		}
		tab.reset()
		for k := range want {
			if _, ok := tab.get(k); ok {
				t.Fatalf("round %d: get(%d) found after reset", round, k)
			}
		}
	}
}
