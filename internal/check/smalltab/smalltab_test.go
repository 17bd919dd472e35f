package smalltab

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTableMatchesMap fills a Table and a map with the same random
// entries, small and extreme keys among them, through many resets, and
// compares every lookup, of keys put and of others.
func TestTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tab Table
	for round := range 2000 {
		n := rng.IntN(200)
		// Sized for n, or fewer: the table grows.
		tab.Reset([]int{n, n / 3, 0}[round%3])
		want := map[int32]int32{}
		draw := func() int32 {
			switch rng.IntN(4) {
			case 0:
				return int32(rng.IntN(64))
			case 1:
				return []int32{math.MinInt32, math.MaxInt32, -1, 0}[rng.IntN(4)]
			}
			return int32(rng.Uint32())
		}
		for len(want) < n {
			k := draw()
			if _, ok := want[k]; ok {
				continue
			}
			if _, ok := tab.Get(k); ok {
				t.Fatalf("round %d: %d found before it was put", round, k)
			}
			v := int32(rng.IntN(math.MaxInt32))
			tab.Put(k, v)
			want[k] = v
		}
		for k, v := range want {
			if got, ok := tab.Get(k); !ok || got != v {
				t.Fatalf("round %d: Get(%d) = %d, %v; want %d", round, k, got, ok, v)
			}
		}
		for range 100 {
			k := draw()
			v, in := want[k]
			if got, ok := tab.Get(k); ok != in || ok && got != v {
				t.Fatalf("round %d: Get(%d) = %d, %v; want %d, %v", round, k, got, ok, v, in)
			}
		}
	}
}
