package check_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
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
			h = checktest.MT(r, 2+r.IntN(6), 1+r.IntN(3), 1+r.IntN(3))
		case 1:
			h = checktest.RepeatedRW(r, 2+r.IntN(5), 1+r.IntN(3))
			if seed%4 == 1 {
				h.Txns[r.IntN(len(h.Txns))].Status = history.Unknown
			}
		default:
			h = checktest.Range(r, 2+r.IntN(5), 2+r.IntN(3), seed%2 == 0)
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

// TestDifferentialSaturate: on thousands of small histories with unique
// values, sessions, aborted and unknown transactions, the saturation
// checker agrees with the oracle and with the solver checker at
// rc-session, read atomic and causal, decides every one of them, reports
// cycles that connect, and its verdicts respect the implications.
func TestDifferentialSaturate(t *testing.T) {
	n := differentialRuns
	if testing.Short() {
		n = 300
	}
	levels := []level.ID{level.RCSession, level.ReadAtomic, level.Causal}
	held := map[level.ID]int{}
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 67))
		h := checktest.UniqueRW(r, 2+r.IntN(7), 1+r.IntN(3), 1+r.IntN(4))
		got := map[level.ID]bool{}
		for _, id := range levels {
			want := satAgrees(t, h, seed, id)
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "saturate"})
			if err != nil {
				t.Fatalf("seed %d %s: %v\n%s", seed, id, err, history.Notation(h))
			}
			if got := res.Outcome == check.Satisfied; got != want {
				t.Fatalf("seed %d %s: saturate says satisfied=%v, oracle %v; %s\n%s", seed, id, got, want, kinds(res), history.Notation(h))
			}
			cyclesConnect(t, res)
			if got[id] = want; want {
				held[id]++
			}
		}
		// Across the lattice: whatever violates read atomic violates
		// causal consistency, whatever violates rc-session both.
		if got[level.Causal] && !got[level.ReadAtomic] || got[level.ReadAtomic] && !got[level.RCSession] {
			t.Fatalf("seed %d: %v breaks the implications\n%s", seed, got, history.Notation(h))
		}
	}
	t.Logf("histories holding, of %d: %v", n, held)
	for _, id := range levels {
		if held[id] < n/20 || held[id] > n*19/20 {
			t.Errorf("%s holds on %d of %d histories: the generator is lopsided for it", level.Get(id).Name, held[id], n)
		}
	}
}
