package check_test

import (
	"context"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestHotKeyLostUpdates: a causal store's 10,000-transaction history with
// a Zipfian key choice (5,280 writers of its hottest key) has read-modify-
// writes of the same version. At cursor stability the solver's
// construction ran out of its memory share on the hot key's pairs of
// writers (undecided after 70 s), and PL-2+ took 29 s; the lost updates
// every version order shows decide each level that forbids them before
// any pair is built. The count is the transactions' (key, version read)
// groups with two read-modify-writes, counted independently below.
func TestHotKeyLostUpdates(t *testing.T) {
	h, err := gen.GenerateCausal(gen.CausalConfig{Txns: 10000, Sessions: 24, Keys: 1000, Dist: workload.Zipfian,
		Ops: 8, ReadRatio: 0.5, Sync: gen.DefaultSync, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The groups, from the operations: a transaction's reads of a key
	// before its first write of it, by the value read (unique values).
	type version struct {
		k history.KeyID
		v history.Value
	}
	readers := map[version]map[int]bool{}
	for i, tx := range h.Txns {
		writes := map[history.KeyID]bool{}
		for _, op := range tx.Ops {
			if op.Kind == history.Write {
				writes[op.Key] = true
			}
		}
		own := map[history.KeyID]bool{}
		for _, op := range tx.Ops {
			switch {
			case op.Kind == history.Read && writes[op.Key] && !own[op.Key]:
				v := version{op.Key, op.Value}
				if readers[v] == nil {
					readers[v] = map[int]bool{}
				}
				readers[v][i] = true
			case op.Kind == history.Write:
				own[op.Key] = true
			}
		}
	}
	want := 0
	for _, rs := range readers {
		if len(rs) > 1 {
			want++
		}
	}
	if want == 0 {
		t.Fatal("the history has no lost update to find")
	}
	for _, id := range []level.ID{level.CursorStability, level.PL2Plus, level.RepeatableRead, level.SnapshotIsolation, level.Serializable} {
		res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "sat"})
		if err != nil {
			t.Fatalf("%s: %v", level.Get(id).Name, err)
		}
		lost := 0
		for _, a := range res.Anomalies {
			if a.Kind == anomaly.LostUpdate {
				lost++
			}
		}
		if res.Outcome != check.Violated || lost != want {
			t.Errorf("%s: %v with %d lost updates, want a violation with %d", level.Get(id).Name, res.Outcome, lost, want)
		}
	}
}
