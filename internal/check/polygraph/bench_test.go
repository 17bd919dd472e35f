package polygraph

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// BenchmarkGeneral checks generated general histories (issue 3 targets):
// 24 sessions, 8 operations per transaction, half reads, 2,000 keys; with
// unique values and with half of the keys drawing values from a small
// zipfian domain. It reports the split between building, pruning,
// encoding and solving.
func BenchmarkGeneral(b *testing.B) {
	for _, n := range []int{10_000, 30_000, 100_000} {
		for _, dup := range []float64{0, 0.5} {
			h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: n, Sessions: 24, Keys: 2000, Dist: workload.Uniform,
				Ops: 8, ReadRatio: 0.5, DuplicateKeys: dup, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			ix := history.NewIndex(h)
			for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation} {
				b.Run(fmt.Sprintf("%s/txns=%d/dup=%g", level.Get(id).Short, n, dup), func(b *testing.B) {
					for b.Loop() {
						found, st, err := Checker{}.Run(context.Background(), ix, level.Get(id))
						if err != nil || len(found) > 0 {
							b.Fatalf("%v %v", err, found)
						}
						b.ReportMetric(st.Build.Seconds(), "build-s")
						b.ReportMetric(st.Prune.Seconds(), "prune-s")
						b.ReportMetric(st.Encode.Seconds(), "encode-s")
						b.ReportMetric(st.Solve.Seconds(), "solve-s")
						b.ReportMetric(float64(st.Pairs), "pairs")
						b.ReportMetric(float64(st.PrunedPairs), "pruned")
						b.ReportMetric(float64(st.Vars), "vars")
						b.ReportMetric(float64(st.Solver.Conflicts), "conflicts")
						b.ReportMetric(float64(st.Solver.Decisions), "decisions")
					}
				})
			}
		}
	}
}

// BenchmarkAblation switches pruning and the order-guided polarity off in
// turn on the 10k general history, half the keys with repeated values.
func BenchmarkAblation(b *testing.B) {
	h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 10_000, Sessions: 24, Keys: 2000, Dist: workload.Uniform,
		Ops: 8, ReadRatio: 0.5, DuplicateKeys: 0.5, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	ix := history.NewIndex(h)
	for name, c := range map[string]Checker{"all": {}, "no-prune": {NoPrune: true}, "no-phase": {NoPhase: true},
		"no-2width": {NoTwoWidth: true}, "dense": {Dense: true}} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				_, st, err := c.Run(ctx, ix, level.Get(level.Serializable))
				cancel()
				if err != nil {
					b.Logf("no verdict within 60 s: %v", err)
					b.ReportMetric(60, "solve-s")
					return
				}
				b.ReportMetric(st.Solve.Seconds(), "solve-s")
				b.ReportMetric(float64(st.Solver.Conflicts), "conflicts")
				b.ReportMetric(st.Prune.Seconds()+st.Build.Seconds()+st.Encode.Seconds()+st.Solve.Seconds(), "total-s")
				b.ReportMetric(float64(st.TwoWidth), "2width-clauses")
			}
		})
	}
}
