package online

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// withRegisterFences returns h with register fences inserted as the
// convention says: each reads the fence key's last value and writes a
// fresh one.
func withRegisterFences(h *history.History, n int) *history.History {
	out := history.New()
	out.Header = h.Header
	out.Sessions = slices.Clone(h.Sessions)
	for _, k := range h.Keys {
		out.Key(k)
	}
	fence := out.Key(fenceName)
	last := history.NullValue
	since := make([]int, len(h.Sessions))
	started := make([]bool, len(h.Sessions))
	id, val := int64(1<<40), int64(1<<40)
	for _, t := range h.Txns {
		s := t.Session
		if !started[s] || since[s] >= n {
			started[s], since[s] = true, 0
			id++
			val++
			v := history.IntValue(val)
			out.Txns = append(out.Txns, history.Txn{ID: history.IntValue(id), Session: s,
				Ops: []history.Op{{Kind: history.Read, Key: fence, Value: last}, {Kind: history.Write, Key: fence, Value: v}}})
			last = v
		}
		since[s]++
		out.Txns = append(out.Txns, t)
	}
	return out
}

// TestDifferentialRegisters streams gen's read/write register histories
// (unique values, with planted anomalies and register fences) the same
// way as the list-append ones and holds them against the offline
// checker: registers are held in full (no garbage collection), their
// findings reported online from the read-closed window.
func TestDifferentialRegisters(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 40
	}
	kinds := gen.PlantableKinds()
	var violated, online int
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 38))
		cfg := gen.Config{Txns: 100 + r.IntN(300), Sessions: 2 + r.IntN(4), Keys: 3 + r.IntN(8), ReadOnlyRatio: 0.3, Seed: uint64(i)}
		if r.IntN(2) == 0 {
			cfg.Mode = gen.SnapshotIsolation
		}
		if r.IntN(2) == 0 {
			cfg.Plant = []anomaly.Kind{kinds[r.IntN(len(kinds))]}
		}
		g, _, err := gen.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := arrival(r, withRegisterFences(g, 1+r.IntN(10)))
		l := level.Get(levels[r.IntN(len(levels))])
		res, err := stream(t, r, h, l, true, 16+r.IntN(32), false, 0)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := disagree(h, l, res); d != "" {
			t.Fatalf("case %d (%s, mode %s, plant %v): %s", i, l.Name, cfg.Mode, cfg.Plant, d)
		}
		if res.Outcome == check.Violated {
			violated++
		}
		for _, f := range res.Findings {
			if f.Arrived < uint64(len(h.Txns)) {
				online++
				break
			}
		}
	}
	t.Logf("%d histories, %d violated, %d with a finding reported before the stream ended", n, violated, online)
	if violated == 0 || online == 0 {
		t.Fatalf("the cases do not exercise the checker: %d violated, %d found online", violated, online)
	}
}
