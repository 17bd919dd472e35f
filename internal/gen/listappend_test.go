package gen_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

func listAppend(t testing.TB, c gen.ListAppendConfig) (*history.History, []gen.ListPlanted) {
	t.Helper()
	h, p, err := gen.GenerateListAppend(c)
	if err != nil {
		t.Fatalf("GenerateListAppend(%+v): %v", c, err)
	}
	return h, p
}

func runAt(t testing.TB, h *history.History, id level.ID) check.Result {
	t.Helper()
	res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "list-append"})
	if err != nil {
		t.Fatalf("check at %s: %v", id, err)
	}
	return res
}

// TestListAppendHolds: serial histories are strictly serializable and
// snapshot-isolation ones satisfy SI, as the list-append checker decides,
// with aborts, unknown outcomes, key rotation and every distribution.
func TestListAppendHolds(t *testing.T) {
	for _, d := range workload.Distributions() {
		for seed := range uint64(3) {
			base := gen.ListAppendConfig{Txns: 2000, Sessions: 10, ActiveKeys: 5, AppendsPerKey: 30, MaxOps: 4,
				ReadRatio: 0.5, Dist: d, AbortRatio: 0.05, UnknownRatio: 0.05, Seed: seed}
			ser := base
			h, _ := listAppend(t, ser)
			if res := runAt(t, h, level.StrictSerializable); res.Outcome != check.Satisfied {
				t.Errorf("%s seed %d: serial history at SSER: %v %v", d, seed, res.Outcome, res.Anomalies)
			}
			si := base
			si.Mode = gen.SnapshotIsolation
			h, _ = listAppend(t, si)
			if res := runAt(t, h, level.SnapshotIsolation); res.Outcome != check.Satisfied {
				t.Errorf("%s seed %d: SI history at SI: %v %v", d, seed, res.Outcome, res.Anomalies)
			}
		}
	}
}

// TestListAppendShape: keys rotate after their appends, operations per
// transaction stay within bounds, elements are unique per key, and reads
// of a key are prefixes of one another (one order per key).
func TestListAppendShape(t *testing.T) {
	c := gen.ListAppendConfig{Txns: 3000, Sessions: 20, ActiveKeys: 4, AppendsPerKey: 10, MaxOps: 3, ReadRatio: 0.5, Mode: gen.SnapshotIsolation, Seed: 5}
	h, _ := listAppend(t, c)
	appends := map[history.KeyID]map[int64]bool{}
	longest := map[history.KeyID][]history.Value{}
	for _, tx := range h.Txns {
		if n := len(tx.Ops); n < 1 || n > c.MaxOps {
			t.Fatalf("a transaction with %d operations", n)
		}
		for _, op := range tx.Ops {
			switch op.Kind {
			case history.Append:
				if appends[op.Key] == nil {
					appends[op.Key] = map[int64]bool{}
				}
				if appends[op.Key][op.Value.N] {
					t.Fatalf("element %d appended twice to key %d", op.Value.N, op.Key)
				}
				appends[op.Key][op.Value.N] = true
			case history.ReadList:
				if ownAppends(tx, op.Key) == 0 && len(op.List) > len(longest[op.Key]) {
					longest[op.Key] = op.List
				}
			}
		}
	}
	for k, a := range appends {
		if len(a) > c.AppendsPerKey {
			t.Errorf("key %d got %d appends, more than %d", k, len(a), c.AppendsPerKey)
		}
	}
	if len(appends) < 100 {
		t.Errorf("only %d keys used: keys do not rotate", len(appends))
	}
	for _, tx := range h.Txns {
		for _, op := range tx.Ops {
			if op.Kind == history.ReadList && ownAppends(tx, op.Key) == 0 {
				if !slices.Equal(op.List, longest[op.Key][:len(op.List)]) {
					t.Fatalf("a read of key %d is no prefix of its longest read", op.Key)
				}
			}
		}
	}
}

// ownAppends counts tx's appends to k.
func ownAppends(tx history.Txn, k history.KeyID) int {
	n := 0
	for _, o := range tx.Ops {
		if o.Kind == history.Append && o.Key == k {
			n++
		}
	}
	return n
}

// TestListAppendAgainstOracle holds tiny generated histories to the
// brute-force oracle: serial ones satisfy serializability, SI ones
// snapshot isolation.
func TestListAppendAgainstOracle(t *testing.T) {
	for seed := range uint64(300) {
		for _, m := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
			c := gen.ListAppendConfig{Txns: 5, Sessions: 3, ActiveKeys: 2, AppendsPerKey: 3, MaxOps: 3, ReadRatio: 0.5, Mode: m, AbortRatio: 0.1, Seed: seed}
			h, _ := listAppend(t, c)
			id := level.Serializable
			if m == gen.SnapshotIsolation {
				id = level.SnapshotIsolation
			}
			ok, err := reference.Check(h, id)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v\n%s", seed, err, history.Notation(h))
			}
			if !ok {
				t.Fatalf("seed %d: a %s-mode history violates %s by the oracle\n%s", seed, m, id, history.Notation(h))
			}
		}
	}
}

// TestListAppendPlanted: every plantable anomaly, planted into a large
// history, is found with its transactions, and the level it violates is
// the weakest that forbids it.
func TestListAppendPlanted(t *testing.T) {
	want := map[gen.ListPlant]struct {
		phenomenon anomaly.Phenomenon
		kind       anomaly.Kind // or Cycle when only the phenomenon says
		weakest    level.ID
	}{
		gen.PlantG0:               {anomaly.G0, anomaly.Cycle, level.ReadCommitted},
		gen.PlantAbortedRead:      {anomaly.G1a, anomaly.AbortedRead, level.ReadCommitted},
		gen.PlantIntermediateRead: {anomaly.G1b, anomaly.IntermediateRead, level.ReadCommitted},
		gen.PlantG1c:              {anomaly.G1c, anomaly.Cycle, level.ReadCommitted},
		gen.PlantGSingle:          {anomaly.GSingle, anomaly.Cycle, level.SnapshotIsolation},
		gen.PlantG2Item:           {anomaly.G2Item, anomaly.WriteSkew, level.Serializable},
		gen.PlantLostUpdate:       {anomaly.None, anomaly.LostUpdate, level.SnapshotIsolation},
		gen.PlantInternal:         {anomaly.None, anomaly.NotMyOwnWrite, level.ReadCommitted},
	}
	for _, p := range gen.ListPlants() {
		w, ok := want[p]
		if !ok {
			t.Fatalf("no expectation for %s", p)
		}
		c := gen.ListAppendConfig{Txns: 20000, Sessions: 20, ActiveKeys: 10, AppendsPerKey: 100, MaxOps: 4, ReadRatio: 0.5, Seed: 11,
			Plant: []gen.ListPlant{p}}
		h, planted := listAppend(t, c)
		if len(planted) != 1 || planted[0].Plant != p {
			t.Fatalf("%s: planted %v", p, planted)
		}
		res := runAt(t, h, w.weakest)
		if res.Outcome != check.Violated {
			t.Errorf("%s: %s holds", p, w.weakest)
			continue
		}
		found := false
		for _, a := range res.Anomalies {
			inGroup := true
			for _, tx := range a.Txns {
				if tx != history.Init && !slices.Contains(planted[0].Txns, tx) {
					inGroup = false
				}
			}
			if inGroup && (a.Kind == w.kind || (w.phenomenon != anomaly.None && a.Phenomenon == w.phenomenon)) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s/%s among %d anomalies on the planted transactions %v: %v", p, w.kind, w.phenomenon, len(res.Anomalies), planted[0].Txns, res.Anomalies)
		}
		// Without the plant the same history holds at SSER.
		c.Plant = nil
		clean, _ := listAppend(t, c)
		if res := runAt(t, clean, level.StrictSerializable); res.Outcome != check.Satisfied {
			t.Errorf("%s: the unplanted history violates SSER: %v", p, res.Anomalies)
		}
	}
}

// TestListAppendRefusesNonsense: sizes and ratios out of range are errors.
func TestListAppendRefusesNonsense(t *testing.T) {
	for _, c := range []gen.ListAppendConfig{
		{Txns: 0, Sessions: 1, ActiveKeys: 1, MaxOps: 1},
		{Txns: 1, Sessions: 0, ActiveKeys: 1, MaxOps: 1},
		{Txns: 1, Sessions: 1, ActiveKeys: 1, MaxOps: 0},
		{Txns: 1, Sessions: 1, ActiveKeys: 1, MaxOps: 1, ReadRatio: 1.5},
		{Txns: 1, Sessions: 1, ActiveKeys: 1, MaxOps: 1, AbortRatio: 0.6, UnknownRatio: 0.6},
		{Txns: 1, Sessions: 1, ActiveKeys: 1, MaxOps: 1, AppendsPerKey: -1},
	} {
		if _, _, err := gen.GenerateListAppend(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := gen.ParseListPlant("lost-updat"); err == nil {
		t.Error("a misspelt plant accepted")
	}
	for _, p := range gen.ListPlants() {
		if q, err := gen.ParseListPlant(p.String()); err != nil || q != p {
			t.Errorf("%s does not parse back: %v %v", p, q, err)
		}
	}
}

// TestListAppendEmit: with Emit set, the transactions handed out, in
// order, are those the history holds without it (same ids, sessions,
// statuses and operations, list reads included), the history returned
// holds none, and an error from Emit ends the generation with it.
func TestListAppendEmit(t *testing.T) {
	for _, mode := range []gen.Mode{gen.Serial, gen.SnapshotIsolation} {
		c := gen.ListAppendConfig{Txns: 3000, Sessions: 7, ActiveKeys: 4, AppendsPerKey: 20, MaxOps: 4, ReadRatio: 0.5,
			Mode: mode, AbortRatio: 0.1, UnknownRatio: 0.1, Plant: gen.ListPlants(), Seed: 5}
		want, wantPlanted := listAppend(t, c)
		var got []history.Txn
		c.Emit = func(h *history.History, tx *history.Txn) error {
			if len(h.Txns) != 0 {
				t.Fatalf("the history holds %d transactions while emitting", len(h.Txns))
			}
			got = append(got, *tx)
			return nil
		}
		h, planted := listAppend(t, c)
		if len(h.Txns) != 0 || len(got) != len(want.Txns) || !slices.EqualFunc(planted, wantPlanted, func(a, b gen.ListPlanted) bool {
			return a.Plant == b.Plant && slices.Equal(a.Txns, b.Txns)
		}) {
			t.Fatalf("%s: %d kept, %d emitted, planted %v; want 0, %d, %v", mode, len(h.Txns), len(got), planted, len(want.Txns), wantPlanted)
		}
		sub := *want
		sub.Txns = got
		if a, b := history.Notation(want), history.Notation(&sub); a != b {
			t.Fatalf("%s: emitted transactions differ from the history's", mode)
		}
		stop := errors.New("disk full")
		n := 0
		c.Emit = func(*history.History, *history.Txn) error {
			if n++; n == 100 {
				return stop
			}
			return nil
		}
		if _, _, err := gen.GenerateListAppend(c); !errors.Is(err, stop) || n != 100 {
			t.Fatalf("%s: Emit failing at its 100th call: %v after %d calls", mode, err, n)
		}
	}
}
