package aion_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
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
	"github.com/isoscope/isoscope/internal/serve/spillfile"
	"github.com/isoscope/isoscope/internal/workload"
)

// benchTxns is the length of the benchmark's pre-recorded stream: the
// issue's 1,000,000, or AION_BENCH_TXNS to watch a longer steady state.
var benchTxns = func() int {
	if n, err := strconv.Atoi(os.Getenv("AION_BENCH_TXNS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}()

// benchLimit is the memory the checking may use: Go's heap beyond the
// stream itself is held under it by the collector's soft memory limit
// (runtime/debug.SetMemoryLimit), as `isoscope serve --memory-mb` does.
// benchBound is the checker's own bound on its state, 5/8 of it, the rest
// being room for garbage between collections.
const (
	benchLimit = 1 << 30
	benchBound = benchLimit * 5 / 8
)

var benchStream = sync.OnceValues(func() (*recording, error) {
	// The Chronos benchmark's history: transactions of 8
	// operations (reads and blind writes) from the snapshot-isolation
	// simulator with timestamps, 24 sessions, 10,000 uniform keys.
	h, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.BlindW, BlindWMixed: true, Mode: gen.SnapshotIsolation,
		Txns: benchTxns, Sessions: 24, Keys: 10000, Dist: workload.Uniform, Ops: 8, Seed: 1, Timestamps: true})
	if err != nil {
		return nil, err
	}
	return record(h)
})

// recording is a pre-recorded stream held as a service receives it from
// the network — bytes, not a heap of pointers. As a []history.Txn the
// million transactions are 665 MB of objects that Go's collector would
// mark on every cycle, a cost of the harness, not of the checker; here
// they are flat arrays (integer ids and values, which is what the
// benchmark history has), unpacked batch by batch into one reused batch.
type recording struct {
	src  *history.History // keys and sessions, no transactions
	txns []recTxn
	ops  []recOp
}

type recTxn struct {
	id, sts, cts  int64
	sess, line    int32
	firstOp, nOps int32
	status        history.Status
	hasTS         bool
}

type recOp struct {
	key  int32
	kind history.OpKind
	val  int64
	null bool
}

// record packs h, whose ids and values must be integers or null.
func record(h *history.History) (*recording, error) {
	r := &recording{src: &history.History{Keys: h.Keys, Sessions: h.Sessions}, txns: make([]recTxn, 0, len(h.Txns))}
	nops := 0
	for i := range h.Txns {
		nops += len(h.Txns[i].Ops)
	}
	r.ops = make([]recOp, 0, nops)
	for i := range h.Txns {
		t := &h.Txns[i]
		if t.ID.Kind != history.Int {
			return nil, fmt.Errorf("transaction %d: id %s is not an integer", i, t.ID)
		}
		r.txns = append(r.txns, recTxn{id: t.ID.N, sts: int64(t.StartTS), cts: int64(t.CommitTS), sess: t.Session, line: int32(t.Line),
			firstOp: int32(len(r.ops)), nOps: int32(len(t.Ops)), status: t.Status, hasTS: t.HasStartTS && t.HasCommitTS})
		for _, o := range t.Ops {
			if o.Value.Kind == history.String || o.List != nil || o.Range != nil {
				return nil, fmt.Errorf("transaction %d: an operation the recording does not pack", i)
			}
			r.ops = append(r.ops, recOp{key: int32(o.Key), kind: o.Kind, val: o.Value.N, null: o.Value.Kind == history.Null})
		}
	}
	return r, nil
}

// batch unpacks transactions [lo, hi) into buf, reusing its transactions
// and ops (Add keeps neither).
func (r *recording) batch(buf *[]history.Txn, ops *[]history.Op, lo, hi int) []history.Txn {
	*buf, *ops = (*buf)[:0], (*ops)[:0]
	for i := lo; i < hi; i++ {
		rt := &r.txns[i]
		for _, o := range r.ops[rt.firstOp : rt.firstOp+rt.nOps] {
			v := history.IntValue(o.val)
			if o.null {
				v = history.Value{Kind: history.Null, N: o.val}
			}
			*ops = append(*ops, history.Op{Kind: o.kind, Key: history.KeyID(o.key), Value: v})
		}
	}
	n := 0
	for i := lo; i < hi; i++ {
		rt := &r.txns[i]
		*buf = append(*buf, history.Txn{ID: history.IntValue(rt.id), Session: rt.sess, Status: rt.status,
			StartTS: uint64(rt.sts), CommitTS: uint64(rt.cts), HasStartTS: rt.hasTS, HasCommitTS: rt.hasTS,
			Ops: (*ops)[n : n+int(rt.nOps) : n+int(rt.nOps)], Line: int(rt.line)})
		n += int(rt.nOps)
	}
	return *buf
}

// BenchmarkAion feeds a pre-recorded stream of 1,000,000 transactions to
// Aion in batches of 500, on the real clock with the default 5 s timeout
// and a 1 GiB memory limit (the checker spilling to files past 640 MiB),
// at SI and SER. It reports
// transactions per second (of wall time and of CPU time) and the peak heap
// in use beyond the stream's own (sampled every 50 batches), and logs
// both over time; with AION_PLOTS=DIR it draws them as PNG files there.
func BenchmarkAion(b *testing.B) {
	rec, err := benchStream()
	if err != nil {
		b.Fatal(err)
	}
	var buf []history.Txn
	var bufOps []history.Op
	series := map[string][]sample{}
	for _, ser := range []bool{false, true} {
		name := "si"
		if ser {
			name = "ser"
		}
		b.Run(name, func(b *testing.B) {
			var rate, cpuRate, peak float64
			var spills uint64
			for b.Loop() {
				store, err := spillfile.New(b.TempDir())
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
				debug.SetMemoryLimit(int64(base) + benchLimit)
				start, c0 := time.Now(), cpu(b)
				last, lastN := start, 0
				var samples []sample
				found := 0
				for i := 0; i < len(rec.txns); i += 500 {
					if err := c.Add(rec.src, rec.batch(&buf, &bufOps, i, min(i+500, len(rec.txns)))); err != nil {
						b.Fatal(err)
					}
					found += len(c.Take()) // as a service hands them on
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
				debug.SetMemoryLimit(math.MaxInt64)
				series[name] = samples
				spills = c.Stats().Spills
				rate = float64(len(rec.txns)) / time.Since(start).Seconds()
				cpuRate = float64(len(rec.txns)) / (cpu(b) - c0)
				// The simulated database runs snapshot isolation: valid at SI,
				// not at SER (its write skews are SER violations).
				if n := found + len(c.Take()); n != 0 && !ser {
					b.Fatalf("%d violations in a valid history", n)
				}
			}
			b.ReportMetric(rate, "txn/s")
			b.ReportMetric(cpuRate, "txn/cpu-s")
			b.ReportMetric(peak/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(spills), "spills")
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
	tp.Title.Text = fmt.Sprintf("Aion: throughput over time (%d transactions in batches of 500, 5 s timeout, 1 GiB limit)", benchTxns)
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
	if ss := series["si"]; len(ss) > 0 {
		limit, err := plotter.NewLine(plotter.XYs{{X: 0, Y: benchLimit / (1 << 20)}, {X: ss[len(ss)-1].t, Y: benchLimit / (1 << 20)}})
		if err != nil {
			return err
		}
		limit.Dashes = plotutil.Dashes(2)
		mem.Add(limit)
		mem.Legend.Add("limit (1 GiB)", limit)
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
