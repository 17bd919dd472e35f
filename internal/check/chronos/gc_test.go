package chronos

import (
	"context"
	"testing"

	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestGarbageCollection: the ongoing map holds only running writers —
// nodes are recycled at commit — so over 20,000 transactions of 8
// operations in 12 sessions it never needs more nodes than 12 running
// transactions can write keys, and none is left at the end.
func TestGarbageCollection(t *testing.T) {
	const sessions, ops = 12, 8
	h, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.BlindW, BlindWMixed: true, Mode: gen.SnapshotIsolation,
		Txns: 20000, Sessions: sessions, Keys: 1000, Dist: workload.Uniform, Ops: ops, Seed: 7, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	ix := history.NewIndex(h)
	kinds, eff, err := shape(ix)
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(ix, kinds, eff, false)
	found, err := s.run(context.Background())
	if err != nil || len(found) > 0 {
		t.Fatalf("%v, %d findings", err, len(found))
	}
	if len(s.nodes) > sessions*ops {
		t.Errorf("%d ongoing nodes allocated, more than %d running transactions' keys", len(s.nodes), sessions*ops)
	}
	live := 0
	for n := s.free; n >= 0; n = s.nodes[n].next {
		live++
	}
	if live != len(s.nodes) {
		t.Errorf("%d of %d nodes back on the free list at the end", live, len(s.nodes))
	}
	for k, n := range s.head {
		if n >= 0 {
			t.Errorf("key %d still has ongoing writers", k)
		}
	}
}
