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

// BenchmarkGeneral checks generated general histories (docs/benchmarks.md):
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
	general, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 10_000, Sessions: 24, Keys: 2000, Dist: workload.Uniform,
		Ops: 8, ReadRatio: 0.5, DuplicateKeys: 0.5, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rr, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.RandomRange, Mode: gen.SnapshotIsolation, Txns: 10_000, Sessions: 24, Keys: 1000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name string
		h    *history.History
		id   level.ID
	}{{"general-dup/ser", general, level.Serializable}, {"randomrange/si", rr, level.SnapshotIsolation}} {
		ix := history.NewIndex(w.h)
		for _, o := range []struct {
			name string
			c    Checker
		}{{"all", Checker{}}, {"no-prune", Checker{NoPrune: true}}, {"no-phase", Checker{NoPhase: true}},
			{"no-2width", Checker{NoTwoWidth: true}}, {"no-chrono", Checker{NoChrono: true}}, {"dense", Checker{Dense: true}}} {
			if o.c.NoPrune && w.id == level.SnapshotIsolation {
				continue // RandomRange SI unpruned: the encoding passed 17 GB, no verdict
			}
			b.Run(w.name+"/"+o.name, func(b *testing.B) {
				for range b.N {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					_, st, err := o.c.Run(ctx, ix, level.Get(w.id))
					cancel()
					if err != nil {
						b.Logf("no verdict within 60 s: %v", err)
						b.ReportMetric(60, "solve-s")
						return
					}
					b.ReportMetric(st.Prune.Seconds(), "prune-s")
					b.ReportMetric(st.Encode.Seconds(), "encode-s")
					b.ReportMetric(st.Solve.Seconds(), "solve-s")
					b.ReportMetric(float64(st.Solver.Conflicts), "conflicts")
					b.ReportMetric(float64(st.Solver.Decisions), "decisions")
					b.ReportMetric(st.Prune.Seconds()+st.Build.Seconds()+st.Encode.Seconds()+st.Solve.Seconds(), "total-s")
					b.ReportMetric(float64(st.TwoWidth), "2width-clauses")
				}
			})
		}
	}
}

// BenchmarkBoomslang checks Boomslang's workloads (docs/benchmarks.md) as the
// simulator generates them under snapshot isolation: RandomRange and
// RandomBench with 10,000 transactions, BlindW with 50,000, checked for
// SI on the split graph and on the BC graph (and SER, which the SI
// histories may violate: only the time counts).
func BenchmarkBoomslang(b *testing.B) {
	cases := []struct {
		w    gen.RangeWorkload
		n    int
		keys int
	}{
		{gen.RandomRange, 10_000, 1000},
		{gen.RandomBench, 10_000, 1000},
		{gen.RandomRMWRange, 10_000, 1000},
		{gen.BlindW, 50_000, 10_000},
	}
	for _, c := range cases {
		h, err := gen.GenerateRange(gen.RangeConfig{Workload: c.w, Mode: gen.SnapshotIsolation, Txns: c.n, Sessions: 24, Keys: c.keys, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range []struct {
			name string
			id   level.ID
			bc   bool
		}{{"si", level.SnapshotIsolation, false}, {"si-bc", level.SnapshotIsolation, true}, {"ser", level.Serializable, false}} {
			id := v.id
			b.Run(fmt.Sprintf("%s/%s/txns=%d", c.w, v.name, c.n), func(b *testing.B) {
				for b.Loop() {
					start := time.Now()
					ix := history.NewIndex(h)
					index := time.Since(start)
					found, st, err := Checker{NoShrink: true, BCGraph: v.bc}.Run(context.Background(), ix, level.Get(id))
					if err != nil || id == level.SnapshotIsolation && len(found) > 0 {
						b.Fatalf("%v %v", err, found)
					}
					b.ReportMetric(index.Seconds(), "index-s")
					b.ReportMetric(st.Build.Seconds(), "build-s")
					b.ReportMetric(st.Prune.Seconds(), "prune-s")
					b.ReportMetric(st.Encode.Seconds(), "encode-s")
					b.ReportMetric(st.Solve.Seconds(), "solve-s")
					b.ReportMetric(float64(st.Reads), "reads")
					b.ReportMetric(float64(st.Pairs), "pairs")
					b.ReportMetric(float64(st.Vars), "vars")
					b.ReportMetric(float64(st.Edges), "edges")
					b.ReportMetric(float64(st.Clauses), "clauses")
					b.ReportMetric(float64(st.Solver.Conflicts), "conflicts")
					b.ReportMetric(float64(st.Solver.Decisions), "decisions")
					b.ReportMetric(float64(st.Solver.Chrono), "chrono")
					b.ReportMetric(float64(st.Solver.Restarts), "restarts")
				}
			})
		}
	}
}

// BenchmarkWeakLevels checks RandomRange and RandomBench histories from
// the snapshot-isolation simulator at the levels between read committed
// and snapshot isolation: cursor stability (lost-update clauses on plain
// acyclicity) and PL-2+ and repeatable read (the classed theory). The
// simulator's histories may violate repeatable read (write skew): only
// the time counts.
func BenchmarkWeakLevels(b *testing.B) {
	for _, w := range []gen.RangeWorkload{gen.RandomRange, gen.RandomBench} {
		for _, n := range []int{1000} {
			h, err := gen.GenerateRange(gen.RangeConfig{Workload: w, Mode: gen.SnapshotIsolation, Txns: n, Sessions: 24, Keys: n / 10, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range []level.ID{level.CursorStability, level.PL2Plus, level.RepeatableRead} {
				b.Run(fmt.Sprintf("%s/%s/txns=%d", w, level.Get(id).Short, n), func(b *testing.B) {
					for b.Loop() {
						_, st, err := Checker{NoShrink: true}.Run(context.Background(), history.NewIndex(h), level.Get(id))
						if err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(st.Build.Seconds(), "build-s")
						b.ReportMetric(st.Prune.Seconds(), "prune-s")
						b.ReportMetric(st.Encode.Seconds(), "encode-s")
						b.ReportMetric(st.Solve.Seconds(), "solve-s")
						b.ReportMetric(float64(st.Clauses), "clauses")
						b.ReportMetric(float64(st.Solver.Conflicts), "conflicts")
					}
				})
			}
		}
	}
}
