package polygraph

import (
	"context"
	"testing"

	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestRankSparesTheSearch: on a generated general history (serial, so
// every write order the search decides has a right answer), the theory's
// initial order by how the transactions ran — by their begin and end, or
// without them by the history's order — lets the search decide every
// write order without a conflict, at serializability and on snapshot
// isolation's split graph. A breadth-first order needs hundreds.
func TestRankSparesTheSearch(t *testing.T) {
	h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 3000, Sessions: 24, Keys: 1000, Dist: workload.Zipfian,
		Ops: 8, ReadRatio: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	untimed := *h
	untimed.Txns = append([]history.Txn(nil), h.Txns...)
	for i := range untimed.Txns {
		untimed.Txns[i].HasTime = false
	}
	for _, c := range []struct {
		name string
		h    *history.History
	}{{"timed", h}, {"untimed", &untimed}} {
		for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation} {
			found, st, err := Checker{}.Run(context.Background(), history.NewIndex(c.h), level.Get(id))
			if err != nil || len(found) > 0 {
				t.Fatalf("%s %s: %v %v", c.name, level.Get(id).Short, err, found)
			}
			if st.Vars == 0 {
				t.Fatalf("%s %s: no search", c.name, level.Get(id).Short)
			}
			if st.Solver.Conflicts > 0 {
				t.Errorf("%s %s: %d conflicts over %d variables, want none", c.name, level.Get(id).Short, st.Solver.Conflicts, st.Vars)
			}
		}
	}
}
