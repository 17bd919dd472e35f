package chronos

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortEventsParallel: the halves sorted at once and merged give the
// order of one sort.
func TestSortEventsParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{parallelSort, parallelSort + 3, 3 * parallelSort} {
		es := make([]event, n)
		for i := range es {
			es[i] = event{ts: uint64(r.IntN(n / 4)), ord: uint64(r.IntN(3))<<32 | uint64(i)}
		}
		want := slices.Clone(es)
		slices.SortFunc(want, cmpEvents)
		sortEvents(es)
		if !slices.Equal(es, want) {
			t.Fatalf("%d events: the parallel sort differs", n)
		}
	}
}
