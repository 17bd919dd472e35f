package gen_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// fenced is one generated history with fences and what made it.
type fenced struct {
	name     string
	h        *history.History
	every    int
	workload int            // workload transactions asked for
	holds    level.ID       // the level its simulated database gives
	retries  bool           // a retried workload transaction may delay a fence
	plants   map[int32]bool // the planted groups' sessions, which run no fences
}

// fencedHistories generates histories with fences from every generator
// that takes them, in both modes where there are two.
func fencedHistories(t *testing.T, seed uint64, every, txns, sessions, keys int, plant bool) []fenced {
	t.Helper()
	var out []fenced
	for _, m := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
		holds := level.StrictSerializable
		if m == gen.SnapshotIsolation {
			holds = level.SnapshotIsolation
		}
		c := gen.Config{Txns: txns, Sessions: sessions, Keys: keys, Dist: workload.Zipfian, Mode: m, ReadOnlyRatio: 0.2,
			AbortRatio: 0.05, Seed: seed, FenceEvery: every}
		if plant {
			c.Plant = []anomaly.Kind{anomaly.LostUpdate, anomaly.WriteSkew}
		}
		h, _, err := gen.Generate(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fenced{name: "mt/" + m.String(), h: h, every: every, workload: txns, holds: holds,
			retries: m == gen.SnapshotIsolation, plants: sessionsFrom(h, sessions)})
		lc := gen.ListAppendConfig{Txns: txns, Sessions: sessions, ActiveKeys: keys, AppendsPerKey: 8, MaxOps: 4, ReadRatio: 0.5,
			Dist: workload.Uniform, Mode: m, AbortRatio: 0.05, UnknownRatio: 0.05, Seed: seed, FenceEvery: every}
		if plant {
			lc.Plant = []gen.ListPlant{gen.PlantG2Item, gen.PlantLostUpdate}
		}
		h, _, err = gen.GenerateListAppend(lc)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fenced{name: "list-append/" + m.String(), h: h, every: every, workload: txns, holds: holds,
			plants: sessionsFrom(h, sessions)})
	}
	if !plant {
		h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: txns, Sessions: sessions, Keys: keys, Dist: workload.Zipfian, Ops: 4,
			ReadRatio: 0.5, Seed: seed, FenceEvery: every})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fenced{name: "general", h: h, every: every, workload: txns, holds: level.StrictSerializable,
			plants: map[int32]bool{}})
	}
	return out
}

// sessionsFrom returns the history's sessions whose labels are from n on
// (the planted groups').
func sessionsFrom(h *history.History, n int) map[int32]bool {
	out := map[int32]bool{}
	for i, s := range h.Sessions {
		if s.N >= int64(n) {
			out[int32(i)] = true
		}
	}
	return out
}

// isFence reports whether t is a fence of key f: a read of f, then a write
// of or an append to f, nothing else.
func isFence(t *history.Txn, f history.KeyID) bool {
	return len(t.Ops) == 2 && t.Ops[0].Key == f && t.Ops[1].Key == f &&
		(t.Ops[0].Kind == history.Read || t.Ops[0].Kind == history.ReadList) &&
		(t.Ops[1].Kind == history.Write || t.Ops[1].Kind == history.Append)
}

// checkFenceShape holds a fenced history to the convention: the header
// names the fence key; only fences touch it; every workload session runs a
// fence first and then after every `every` of its own workload
// transactions (later only after a retry); fences come on top of the
// workload's transactions.
func checkFenceShape(t *testing.T, f fenced) {
	t.Helper()
	h := f.h
	if h.Header.FenceKey.IsNull() {
		t.Fatalf("%s: no fence_key in the header", f.name)
	}
	fk, ok := h.LookupKey(h.Header.FenceKey)
	if !ok {
		t.Fatalf("%s: fence key %v is in no operation", f.name, h.Header.FenceKey)
	}
	since := map[int32]int{}
	fencedOnce := map[int32]bool{}
	work, fences := 0, 0
	for i := range h.Txns {
		tx := &h.Txns[i]
		touches := false
		for _, op := range tx.Ops {
			touches = touches || op.Key == fk
		}
		if f.plants[tx.Session] {
			if touches {
				t.Fatalf("%s: planted transaction %v touches the fence key", f.name, tx.ID)
			}
			continue
		}
		if touches {
			if !isFence(tx, fk) {
				t.Fatalf("%s: transaction %v touches the fence key but is no fence: %v", f.name, tx.ID, tx.Ops)
			}
			fences++
			if tx.Status == history.Committed {
				fencedOnce[tx.Session], since[tx.Session] = true, 0
			}
			continue
		}
		work++
		if !fencedOnce[tx.Session] {
			t.Fatalf("%s: session %v's transaction %v runs before its first fence", f.name, h.Sessions[tx.Session], tx.ID)
		}
		if since[tx.Session] >= f.every && !f.retries {
			t.Fatalf("%s: session %v's transaction %v is its %d-th since its last fence (every %d)", f.name, h.Sessions[tx.Session], tx.ID,
				since[tx.Session]+1, f.every)
		}
		since[tx.Session]++
	}
	if work != f.workload {
		t.Fatalf("%s: %d workload transactions, want %d", f.name, work, f.workload)
	}
	if fences < len(since) {
		t.Fatalf("%s: %d fences for %d sessions", f.name, fences, len(since))
	}
}

// TestFencesShape: every generator with fences follows the convention,
// and without them writes no fence key.
func TestFencesShape(t *testing.T) {
	for seed := range uint64(4) {
		for _, every := range []int{1, 3, 10} {
			for _, f := range fencedHistories(t, seed, every, 600, 6, 8, seed%2 == 1) {
				t.Run(fmt.Sprintf("%s/every=%d/seed=%d", f.name, every, seed), func(t *testing.T) { checkFenceShape(t, f) })
			}
		}
	}
	for _, f := range fencedHistories(t, 1, 0, 300, 4, 8, false) {
		if !f.h.Header.FenceKey.IsNull() {
			t.Errorf("%s without fences: fence_key %v", f.name, f.h.Header.FenceKey)
		}
	}
}

// TestFencesCheckOffline: fenced histories check offline as their
// simulated database promises (strictly serializable or snapshot
// isolation), and planted anomalies are still found; tiny ones agree with
// the brute-force oracle at SER and SI.
func TestFencesCheckOffline(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(3) {
		for _, plant := range []bool{false, true} {
			for _, f := range fencedHistories(t, seed, 4, 3000, 8, 10, plant) {
				res, err := check.Run(ctx, f.h, level.Get(f.holds), check.Options{})
				if err != nil {
					t.Fatalf("%s seed %d: %v", f.name, seed, err)
				}
				want := check.Satisfied
				if plant {
					want = check.Violated
				}
				if res.Outcome != want {
					t.Errorf("%s seed %d plant %v at %s: %v, want %v: %v", f.name, seed, plant, f.holds, res.Outcome, want, res.Anomalies)
				}
			}
		}
	}
	for seed := range uint64(150) {
		for _, f := range fencedHistories(t, seed, 1+int(seed%2), 3, 2, 2, false) {
			for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation} {
				want, err := reference.Check(f.h, id)
				if err != nil {
					t.Fatalf("%s seed %d: oracle: %v\n%s", f.name, seed, err, history.Notation(f.h))
				}
				res, err := check.Run(ctx, f.h, level.Get(id), check.Options{})
				if err != nil {
					t.Fatalf("%s seed %d at %s: %v", f.name, seed, id, err)
				}
				if (res.Outcome == check.Satisfied) != want {
					t.Fatalf("%s seed %d at %s: checker %v, oracle %v\n%s", f.name, seed, id, res.Outcome, want, history.Notation(f.h))
				}
			}
		}
	}
}
