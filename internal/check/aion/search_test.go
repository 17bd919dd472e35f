package aion

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestSearchBack: the galloping search answers as sort.Search does.
func TestSearchBack(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := r.IntN(70)
		cut := r.IntN(n + 1)
		f := func(i int) bool { return i >= cut }
		if got, want := searchBack(n, f), sort.Search(n, f); got != want {
			t.Fatalf("n=%d cut=%d: %d, want %d", n, cut, got, want)
		}
	}
}
