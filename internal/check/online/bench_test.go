package online

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// BenchmarkOnlineStream streams ONLINE_BENCH_TXNS (default 1,000,000)
// generated list-append transactions (listStream, a serial list store: 10
// sessions, 10 active keys retired after 100 appends, 1–4 operations,
// half reads; a fence every ONLINE_BENCH_FENCE of a session's
// transactions, default 200: a list fence reads the whole fence list, so
// the history grows with the square of the fences) to a checker
// at SER in batches of 256 (memory bound 256 MiB), with a lost update planted every
// ONLINE_BENCH_PLANT transactions (default 1,000,000) on keys of its own.
// It samples the process's RSS, Go's heap in use and the checker's
// estimate every 250,000 transactions (ONLINE_BENCH_CSV names a file for
// the samples, ONLINE_PLOTS a directory for online-memory.png), and
// reports transactions per CPU-second and the latency from each planted
// anomaly's arrival to its report, in transactions and seconds.
func BenchmarkOnlineStream(b *testing.B) {
	n := envInt("ONLINE_BENCH_TXNS", 1000000)
	plantEvery := envInt("ONLINE_BENCH_PLANT", 1000000)
	fenceEvery := envInt("ONLINE_BENCH_FENCE", 200)
	var csv, latCSV *bufio.Writer
	if name := os.Getenv("ONLINE_BENCH_CSV"); name != "" {
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		csv = bufio.NewWriter(f)
		defer csv.Flush()
		fmt.Fprintln(csv, "seconds,cpu_seconds,transactions,rss_mib,heap_mib,estimate_mib,held")
		lf, err := os.Create(strings.TrimSuffix(name, ".csv") + "-latency.csv")
		if err != nil {
			b.Fatal(err)
		}
		defer lf.Close()
		latCSV = bufio.NewWriter(lf)
		defer latCSV.Flush()
		fmt.Fprintln(latCSV, "arrived_transactions,reported_transactions,latency_transactions,latency_seconds")
	}
	for range b.N {
		f := fenceName
		c, err := New(Config{Level: level.Get(level.Serializable), FenceKey: &f, MemoryBytes: 256 << 20})
		if err != nil {
			b.Fatal(err)
		}
		// Each batch has a table of keys of its own (the checker keeps
		// keys by name), so the stream's producer holds no table that
		// grows with the keys retired.
		newSrc := func() *history.History {
			h := history.New()
			for i := range 10 {
				h.Sessions = append(h.Sessions, history.IntValue(int64(i)))
			}
			return h
		}
		src := newSrc()
		var (
			batch   []history.Txn
			fed     int
			planted = map[history.Value]plantedAt{}
			lat     []plantedAt
			samples []memSample
		)
		start, cpu0 := time.Now(), cpuSeconds(b)
		flush := func() error {
			got, err := c.Add(src, batch)
			if err != nil {
				return err
			}
			fed += len(batch)
			batch = batch[:0]
			src = newSrc()
			for _, f := range got {
				for _, t := range f.Anomaly.Txns {
					if p, ok := planted[f.History.Txns[t].ID]; ok {
						p.reportedTxns, p.reportedAt = fed, time.Now()
						lat = append(lat, p)
						if latCSV != nil {
							fmt.Fprintf(latCSV, "%d,%d,%d,%.3f\n", p.arrivedTxns, p.reportedTxns, p.reportedTxns-p.arrivedTxns, p.reportedAt.Sub(p.arrivedAt).Seconds())
							latCSV.Flush()
						}
						for _, id := range p.group {
							delete(planted, id)
						}
					}
				}
			}
			return nil
		}
		sample := func() {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s := memSample{t: time.Since(start).Seconds(), cpu: cpuSeconds(b) - cpu0, txns: fed, rss: rssMiB(b),
				heap: float64(ms.HeapInuse) / (1 << 20), est: float64(c.Stats().Bytes) / (1 << 20), held: int(c.Stats().Held)}
			samples = append(samples, s)
			if csv != nil {
				fmt.Fprintf(csv, "%.2f,%.2f,%d,%.1f,%.1f,%.1f,%d\n", s.t, s.cpu, s.txns, s.rss, s.heap, s.est, s.held)
				csv.Flush()
			}
		}
		g := newListStream(1, 10, 10, 100, fenceEvery)
		nextSample, nextPlant, plants := 0, plantEvery, 0
		for produced := 0; produced < n; produced++ {
			batch = append(batch, g.next(src)...)
			if fed+len(batch) >= nextPlant && nextPlant+plantEvery/2 < n {
				// A lost update on a key of its own: two transactions of
				// sessions 0 and 1 read it empty and append, a third
				// (session 0) reads both appends.
				plants++
				nextPlant += plantEvery
				k := src.Key(history.StringValue("plant-" + strconv.Itoa(plants)))
				base := int64(1)<<50 + int64(plants)*4
				mk := func(id int64, sess int32, ops ...history.Op) history.Txn {
					return history.Txn{ID: history.IntValue(id), Session: sess, Ops: ops}
				}
				a, bb := history.IntValue(1), history.IntValue(2)
				batch = append(batch,
					mk(base, 0, history.Op{Kind: history.ReadList, Key: k}, history.Op{Kind: history.Append, Key: k, Value: a}),
					mk(base+1, 1, history.Op{Kind: history.ReadList, Key: k}, history.Op{Kind: history.Append, Key: k, Value: bb}),
					mk(base+2, 0, history.Op{Kind: history.ReadList, Key: k, List: []history.Value{a, bb}}))
				p := plantedAt{arrivedTxns: fed + len(batch), arrivedAt: time.Now(),
					group: []history.Value{history.IntValue(base), history.IntValue(base + 1), history.IntValue(base + 2)}}
				for _, id := range p.group {
					planted[id] = p
				}
			}
			if len(batch) >= 256 {
				if err := flush(); err != nil {
					b.Fatal(err)
				}
				if fed >= nextSample {
					sample()
					nextSample += 250000
				}
			}
		}
		if err := flush(); err != nil {
			b.Fatal(err)
		}
		sample()
		cpu := cpuSeconds(b) - cpu0
		res, err := c.Drain(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if res.Outcome != check.Violated && plants > 0 || len(planted) > 0 {
			b.Fatalf("%s (%s); %d planted anomalies not reported online", res.Outcome, res.Reason, len(planted))
		}
		if got := len(res.Findings); got != plants {
			b.Fatalf("%d findings, %d planted: %v", got, plants, names(res.Findings[0]))
		}
		var maxTxns int
		var maxDur time.Duration
		for _, p := range lat {
			maxTxns = max(maxTxns, p.reportedTxns-p.arrivedTxns)
			maxDur = max(maxDur, p.reportedAt.Sub(p.arrivedAt))
		}
		st := c.Stats()
		b.ReportMetric(float64(fed)/cpu, "txn/cpu-s")
		b.ReportMetric(float64(fed)/time.Since(start).Seconds(), "txn/s")
		b.ReportMetric(float64(maxTxns), "max-latency-txns")
		b.ReportMetric(maxDur.Seconds(), "max-latency-s")
		var peak float64
		for _, s := range samples {
			peak = max(peak, s.rss)
		}
		b.ReportMetric(peak, "peak-rss-MiB")
		b.ReportMetric(float64(st.Forgotten), "forgotten")
		if dir := os.Getenv("ONLINE_PLOTS"); dir != "" {
			if err := plotMemory(dir, samples, fed); err != nil {
				b.Fatal(err)
			}
		}
	}
}

type plantedAt struct {
	group                     []history.Value
	arrivedTxns, reportedTxns int
	arrivedAt, reportedAt     time.Time
}

type memSample struct {
	t, cpu         float64
	txns, held     int
	rss, heap, est float64
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// rssMiB reads the process's resident set size from /proc/self/status.
func rssMiB(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// plotMemory draws RSS, heap in use and the checker's estimate against
// the transactions streamed, as online-memory.png in dir.
func plotMemory(dir string, samples []memSample, n int) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("online black-box checking at SER: memory over a stream of %s list-append transactions", strconv.Itoa(n))
	p.X.Label.Text, p.Y.Label.Text = "millions of transactions streamed", "MiB"
	var rss, heap, est plotter.XYs
	for _, s := range samples {
		x := float64(s.txns) / 1e6
		rss = append(rss, plotter.XY{X: x, Y: s.rss})
		heap = append(heap, plotter.XY{X: x, Y: s.heap})
		est = append(est, plotter.XY{X: x, Y: s.est})
	}
	for i, l := range []struct {
		xy   plotter.XYs
		name string
	}{{rss, "RSS"}, {heap, "Go heap in use"}, {est, "checker's estimate"}} {
		line, err := plotter.NewLine(l.xy)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		p.Add(line)
		p.Legend.Add(l.name, line)
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p.Save(20*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, "online-memory.png"))
}

// TestPlotOnlineMemory redraws online-memory.png in ONLINE_PLOTS from
// the samples BenchmarkOnlineStream wrote to ONLINE_PLOT_CSV (a run cut
// short included); skipped unless both are set.
func TestPlotOnlineMemory(t *testing.T) {
	name, dir := os.Getenv("ONLINE_PLOT_CSV"), os.Getenv("ONLINE_PLOTS")
	if name == "" || dir == "" {
		t.Skip("ONLINE_PLOT_CSV and ONLINE_PLOTS unset")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var samples []memSample
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i == 0 {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 7 {
			t.Fatalf("%s:%d: %d fields, want 7", name, i+1, len(f))
		}
		var v [7]float64
		for j := range f {
			if v[j], err = strconv.ParseFloat(f[j], 64); err != nil {
				t.Fatalf("%s:%d: %v", name, i+1, err)
			}
		}
		samples = append(samples, memSample{t: v[0], cpu: v[1], txns: int(v[2]), rss: v[3], heap: v[4], est: v[5], held: int(v[6])})
	}
	if len(samples) == 0 {
		t.Fatalf("%s: no samples", name)
	}
	if err := plotMemory(dir, samples, samples[len(samples)-1].txns); err != nil {
		t.Fatal(err)
	}
}
