package polygraph

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// staleReads makes some reads return an older or newer value written to
// the same key, which breaks serializability more often than not.
func staleReads(r *rand.Rand, h *history.History, n int) {
	written := map[history.KeyID][]history.Value{}
	for _, t := range h.Txns {
		for _, op := range t.Ops {
			if op.Kind == history.Write {
				written[op.Key] = append(written[op.Key], op.Value)
			}
		}
	}
	for range n {
		t := &h.Txns[r.IntN(len(h.Txns))]
		for j := range t.Ops {
			if op := &t.Ops[j]; op.Kind == history.Read && len(written[op.Key]) > 0 {
				vs := written[op.Key]
				op.Value = vs[r.IntN(len(vs))]
				break
			}
		}
	}
}

// TestSparseAgreesWithDense: on generated general histories, some with
// stale reads planted, the sparse construction (pairs only for writers the
// known graph leaves unordered) and the dense one (every two writers a
// pair) reach the same verdict at SER, SI and SSER, with and without
// repeated values.
func TestSparseAgreesWithDense(t *testing.T) {
	violations := 0
	for seed := range uint64(120) {
		r := rand.New(rand.NewPCG(seed, 7))
		h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 40 + r.IntN(200), Sessions: 2 + r.IntN(6), Keys: 3 + r.IntN(20),
			Dist: workload.Uniform, Ops: 1 + r.IntN(6), ReadRatio: 0.5, DuplicateKeys: float64(seed%3) / 4, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if seed%4 != 0 {
			staleReads(r, h, 1+r.IntN(3))
		}
		ix := history.NewIndex(h)
		for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation, level.StrictSerializable} {
			lv := level.Get(id)
			sparse, stS, err1 := Checker{}.Run(context.Background(), ix, lv)
			dense, stD, err2 := Checker{Dense: true}.Run(context.Background(), ix, lv)
			if err1 != nil || err2 != nil {
				t.Fatalf("seed %d %s: %v / %v", seed, id, err1, err2)
			}
			if (len(sparse) == 0) != (len(dense) == 0) {
				t.Fatalf("seed %d %s: sparse found %d anomalies (%d pairs), dense %d (%d pairs)\n%s",
					seed, id, len(sparse), stS.Pairs, len(dense), stD.Pairs, history.Notation(h))
			}
			if stS.Pairs > stD.Pairs {
				t.Errorf("seed %d %s: sparse made %d pairs, dense %d", seed, id, stS.Pairs, stD.Pairs)
			}
			if len(sparse) > 0 {
				violations++
			}
		}
	}
	t.Logf("%d verdicts were violations", violations)
	if violations < 60 {
		t.Errorf("only %d violations: the test does not exercise them", violations)
	}
}
