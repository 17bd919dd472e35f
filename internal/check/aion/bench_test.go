package aion_test

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// benchTxns is the length of the benchmark's pre-recorded stream.
const benchTxns = 1_000_000

// benchBound is the checker's memory bound in the benchmark: half the
// 1 GiB the process may use for checking, since Go's heap holds garbage
// up to the size of the live data between collections.
const benchBound = 512 << 20

var benchStream = sync.OnceValues(func() (*history.History, error) {
	// Issue 5's benchmark history (as Chronos's): transactions of 8
	// operations (reads and blind writes) from the snapshot-isolation
	// simulator with timestamps, 24 sessions, 10,000 uniform keys.
	h, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.BlindW, BlindWMixed: true, Mode: gen.SnapshotIsolation,
		Txns: benchTxns, Sessions: 24, Keys: 10000, Dist: workload.Uniform, Ops: 8, Seed: 1, Timestamps: true})
	return h, err
})

// BenchmarkAion feeds a pre-recorded stream of 1,000,000 transactions to
// Aion in batches of 500, on the real clock with the default 5 s timeout
// and a 512 MiB memory bound spilling to files, at SI and SER. It reports
// transactions per second (of wall time and of CPU time) and the peak heap
// in use beyond the stream's own (sampled every 50 batches), and logs
// both over time; with AION_PLOTS=DIR it draws them as PNG files there.
func BenchmarkAion(b *testing.B) {
	h, err := benchStream()
	if err != nil {
		b.Fatal(err)
	}
	series := map[string][]sample{}
	for _, ser := range []bool{false, true} {
		name := "si"
		if ser {
			name = "ser"
		}
		b.Run(name, func(b *testing.B) {
			var rate, cpuRate, peak float64
			for b.Loop() {
				store, err := aion.NewFileStore(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				c, err := aion.New(aion.Config{Serializable: ser, MemoryBound: benchBound, Store: store})
				if err != nil {
					b.Fatal(err)
				}
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				base := float64(ms.HeapInuse) // the stream itself
				start, c0 := time.Now(), cpu(b)
				last, lastN := start, 0
				var samples []sample
				for i := 0; i < len(h.Txns); i += 500 {
					if err := c.Add(h, h.Txns[i:min(i+500, len(h.Txns))]); err != nil {
						b.Fatal(err)
					}
					if n := i/500 + 1; n%50 == 0 {
						runtime.ReadMemStats(&ms)
						heap := float64(ms.HeapInuse) - base
						peak = max(peak, heap)
						now := time.Now()
						samples = append(samples, sample{t: now.Sub(start).Seconds(), txns: i + 500, heap: heap / (1 << 20), est: float64(c.Stats().Memory) / (1 << 20)})
						if n%200 == 0 {
							now := time.Now()
							st := c.Stats()
							b.Logf("%s t=%5.2fs txns=%7d rate=%6.0f/s heap=%4.0f MiB estimate=%4.0f MiB pending=%d spills=%d", name,
								now.Sub(start).Seconds(), i+500, float64(i+500-lastN)/now.Sub(last).Seconds(),
								heap/(1<<20), float64(st.Memory)/(1<<20), st.Pending, st.Spills)
							last, lastN = now, i+500
						}
					}
				}
				if err := c.Finish(); err != nil {
					b.Fatal(err)
				}
				series[name] = samples
				rate = float64(len(h.Txns)) / time.Since(start).Seconds()
				cpuRate = float64(len(h.Txns)) / (cpu(b) - c0)
				// The simulated database runs snapshot isolation: valid at SI,
				// not at SER (its write skews are SER violations).
				if n := len(c.Take()); n != 0 && !ser {
					b.Fatalf("%d violations in a valid history", n)
				}
			}
			b.ReportMetric(rate, "txn/s")
			b.ReportMetric(cpuRate, "txn/cpu-s")
			b.ReportMetric(peak/(1<<20), "peak-heap-MiB")
		})
	}
	if dir := os.Getenv("AION_PLOTS"); dir != "" && len(series) == 2 {
		if err := plotSeries(dir, series); err != nil {
			b.Fatal(err)
		}
	}
}

// sample is one point of the benchmark's time series: seconds since the
// start, transactions fed, heap beyond the stream and the checker's
// estimate (MiB).
type sample struct {
	t         float64
	txns      int
	heap, est float64
}

// plotSeries draws throughput (over each 100,000 transactions) and memory
// over time, at SI and SER, as aion-throughput.png and aion-memory.png in
// dir.
func plotSeries(dir string, series map[string][]sample) error {
	tp, mem := plot.New(), plot.New()
	tp.Title.Text = "Aion: throughput over time (batches of 500, 5 s timeout, 512 MiB bound)"
	tp.X.Label.Text, tp.Y.Label.Text = "seconds", "transactions per second (over 100,000)"
	mem.Title.Text = "Aion: memory over time"
	mem.X.Label.Text, mem.Y.Label.Text = "seconds", "MiB"
	for i, name := range []string{"si", "ser"} {
		ss := series[name]
		var rate, heap, est plotter.XYs
		j := 0
		for k, s := range ss {
			heap = append(heap, plotter.XY{X: s.t, Y: s.heap})
			est = append(est, plotter.XY{X: s.t, Y: s.est})
			if s.txns-ss[j].txns >= 100000 || k == len(ss)-1 && k > j {
				rate = append(rate, plotter.XY{X: s.t, Y: float64(s.txns-ss[j].txns) / (s.t - ss[j].t)})
				j = k
			}
		}
		for _, l := range []struct {
			p    *plot.Plot
			xy   plotter.XYs
			name string
			dash bool
		}{{tp, rate, name, false}, {mem, heap, name + " heap in use", false}, {mem, est, name + " estimate", true}} {
			line, err := plotter.NewLine(l.xy)
			if err != nil {
				return err
			}
			line.Color = plotutil.Color(i)
			if l.dash {
				line.Dashes = plotutil.Dashes(1)
			}
			l.p.Add(line)
			l.p.Legend.Add(l.name, line)
		}
	}
	tp.Legend.Top, mem.Legend.Top = true, true
	if err := tp.Save(20*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "aion-throughput.png")); err != nil {
		return err
	}
	return mem.Save(20*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "aion-memory.png"))
}

// cpu returns the process's user and system CPU time so far, in seconds:
// on a shared machine a steadier figure than wall time (it counts the
// collector's work on the second core too).
func cpu(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
