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

// subViolates checks the sub-history of set the way the shrinker builds it.
func subViolates(t *testing.T, ix *history.Index, l level.Level, set []history.TxnID) bool {
	t.Helper()
	return newShrinker(context.Background(), ix, l, Checker{}).violates(set)
}

// TestShrinkMinimal: when the solver refutes a generated history with
// repeated values and planted stale reads, the counterexample comes with a
// core of transactions that violates the level on its own and, when marked
// minimal, stops violating without any one of them; its cycle stays
// within the core.
func TestShrinkMinimal(t *testing.T) {
	shrunk, minimal, sizes := 0, 0, 0
	for seed := uint64(0); seed < 400 && shrunk < 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 60 + r.IntN(120), Sessions: 2 + r.IntN(4), Keys: 6 + r.IntN(10),
			Dist: workload.Uniform, Ops: 2 + r.IntN(4), ReadRatio: 0.5, DuplicateKeys: 0.5, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		staleReads(r, h, 1+r.IntN(2))
		ix := history.NewIndex(h)
		lv := level.Get(level.Serializable)
		found, st, err := Checker{}.Run(context.Background(), ix, lv)
		if err != nil {
			t.Fatal(err)
		}
		if len(found) == 0 || st.Result != 2 { // only refutations by the solver shrink
			continue
		}
		a := found[0]
		if len(a.Core) == 0 {
			continue // nothing smaller violates (within the budget)
		}
		shrunk++
		if len(a.Core) >= len(h.Txns) {
			t.Fatalf("seed %d: core of %d of %d transactions", seed, len(a.Core), len(h.Txns))
		}
		if !subViolates(t, ix, lv, a.Core) {
			t.Fatalf("seed %d: the core %v does not violate on its own", seed, a.Core)
		}
		in := map[history.TxnID]bool{}
		for _, c := range a.Core {
			in[c] = true
		}
		for _, s := range a.Cycle {
			if !in[s.From] {
				t.Fatalf("seed %d: cycle step %v leaves the core %v", seed, s, a.Core)
			}
		}
		sizes += len(a.Core)
		if a.Minimal {
			minimal++
			for i := range a.Core {
				rest := append(append([]history.TxnID(nil), a.Core[:i]...), a.Core[i+1:]...)
				if subViolates(t, ix, lv, rest) {
					t.Fatalf("seed %d: core %v marked minimal, yet it violates without %v", seed, a.Core, a.Core[i])
				}
			}
		}
	}
	t.Logf("%d counterexamples shrunk, %d to a 1-minimal core, %.1f transactions on average", shrunk, minimal, float64(sizes)/float64(max(shrunk, 1)))
	if shrunk < 5 || minimal < shrunk/2 {
		t.Errorf("only %d histories went through the shrinker", shrunk)
	}
}
