package check_test

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// newLevels are the axiomatic levels and the levels without session order.
var newLevels = []level.ID{level.RCSession, level.ReadAtomic, level.Causal, level.Prefix, level.GSI, level.PlainSerializable}

// latticeLevels are the levels whose verdicts TestDifferentialAxiomaticSAT
// holds to the implications, with the new ones.
var latticeLevels = []level.ID{level.ReadCommitted, level.SnapshotIsolation, level.Serializable}

// TestDifferentialAxiomaticSAT: on thousands of small histories — unique
// values with sessions, aborts and unknown outcomes; repeated values;
// deletes, scans and iterators — the solver checker agrees with the
// oracle's enumeration of commit orders at rc-session, read atomic,
// causal, prefix, generalized SI and plain serializability, and every
// verdict respects the implications between these levels and read
// committed, snapshot isolation and serializability.
func TestDifferentialAxiomaticSAT(t *testing.T) {
	n := differentialRuns / 2
	if testing.Short() {
		n = 300
	}
	held := map[level.ID]int{}
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 61))
		var h *history.History
		switch seed % 3 {
		case 0:
			h = randomMT(r, 2+r.IntN(6), 1+r.IntN(3), 1+r.IntN(3))
		case 1:
			h = randomRW(r, 2+r.IntN(5), 1+r.IntN(3))
			if seed%4 == 1 {
				h.Txns[r.IntN(len(h.Txns))].Status = history.Unknown
			}
		default:
			h = randomRange(r, 2+r.IntN(5), 2+r.IntN(3), seed%2 == 0)
		}
		got := map[level.ID]bool{}
		for _, id := range newLevels {
			got[id] = satAgrees(t, h, seed, id)
			if got[id] {
				held[id]++
			}
		}
		for _, id := range latticeLevels {
			got[id] = satAgrees(t, h, seed, id)
		}
		for id, ok := range got {
			for _, w := range level.Get(id).WeakerLevels() {
				if weak, known := got[w.ID]; known && ok && !weak {
					t.Fatalf("seed %d: %s holds, but not %s, which it implies\n%s", seed, id, w.Name, history.Notation(h))
				}
			}
		}
	}
	t.Logf("histories holding, of %d: %v", n, held)
	for _, id := range newLevels {
		if held[id] < n/20 || held[id] > n*19/20 {
			t.Errorf("%s holds on %d of %d histories: the generators are lopsided for it", level.Get(id).Name, held[id], n)
		}
	}
}
