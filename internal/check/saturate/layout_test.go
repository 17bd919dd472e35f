package saturate

import (
	"context"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestDenseAndSparseAgree: the causal inference infers the same edges
// with the dense layout of the keys' last writers and without it, on
// simulated causal stores with stale reads.
func TestDenseAndSparseAgree(t *testing.T) {
	defer func() { denseKeys = true }()
	for seed := range uint64(12) {
		h, err := gen.GenerateCausal(gen.CausalConfig{Txns: 400, Sessions: 3 + int(seed%6), Keys: 5 + int(seed%9),
			Dist: workload.Uniform, Ops: 2 + int(seed%5), ReadRatio: 0.6, Sync: 0.2, Stale: 0.03, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		ix := history.NewIndex(h)
		var got [2][]inference
		for i, dense := range []bool{true, false} {
			denseKeys = dense
			s := newState(ix, level.AxiomCC)
			if found, err := s.sessionAndReads(context.Background()); found != nil || err != nil {
				t.Fatalf("seed %d: %v %v", seed, found, err)
			}
			if err := s.inferCC(context.Background()); err != nil {
				t.Fatal(err)
			}
			got[i] = s.inf
		}
		// The dense scan visits a key's sessions in session order, as the
		// groups are: the same inferences in the same order.
		if !slices.Equal(got[0], got[1]) {
			t.Fatalf("seed %d: dense %d inferences, sparse %d", seed, len(got[0]), len(got[1]))
		}
		if len(got[0]) == 0 {
			t.Fatalf("seed %d: nothing inferred", seed)
		}
	}
}
