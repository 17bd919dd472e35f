package runner

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/db/dbtest"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/report/runplot"
	"github.com/isoscope/isoscope/internal/workload"
)

// The experiments behind docs/databases.md and docs/benchmarks-run.md.
// They take minutes, so they run only when asked:
//
//	go test ./internal/runner -run TestEvidence -evidence -v -timeout 30m
//	go test ./internal/runner -run TestThroughput -throughput -v -timeout 30m
//
// Both print markdown tables (to the file -out names, else to the log).
// With -plots DIR the throughput experiment also draws the run plots of
// each configuration's median traced run (transactions per second,
// latency percentiles, abort reasons; SVG and PNG) into
// DIR/ISOLATION-WORKLOAD-SESSIONS/; -throughput-txns shortens the runs
// (a quick try: -throughput-txns 300).
var (
	evidence       = flag.Bool("evidence", false, "run the 20-run isolation experiments")
	throughput     = flag.Bool("throughput", false, "run the throughput experiments")
	runs           = flag.Int("runs", 20, "runs per experiment")
	outFile        = flag.String("out", "", "write the experiments' tables to this file")
	plotDir        = flag.String("plots", "", "write the throughput experiments' run plots under this directory")
	throughputTxns = flag.Int("throughput-txns", 0, "transactions per throughput run (0: 6000 for mt, 1500 for general)")
)

type experiment struct {
	db     string // "postgres", "mariadb", "sqlite"
	iso    db.Isolation
	pc     workload.PlanConfig
	levels []string
}

func (e experiment) addr(t *testing.T) string {
	switch e.db {
	case "postgres":
		return dbtest.Postgres(t)
	case "mariadb":
		return dbtest.MySQL(t)
	}
	return "sqlite::memory:"
}

func params(pc workload.PlanConfig) string {
	s := fmt.Sprintf("%d sessions, %d txns, %d keys %s", pc.Sessions, pc.Txns, pc.Keys, pc.Dist)
	if pc.Workload == workload.General {
		s += ", 8 ops"
	}
	return s
}

func experiments() []experiment {
	mt := workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 2000, Keys: 20, Dist: workload.Zipfian}
	general := workload.PlanConfig{Workload: workload.General, Sessions: 8, Txns: 400, Keys: 200, Dist: workload.Uniform}
	appends := workload.PlanConfig{Workload: workload.ListAppend, Sessions: 8, Txns: 1000, Keys: 10, Dist: workload.Zipfian}
	lwt := workload.PlanConfig{Workload: workload.LWT, Sessions: 16, Txns: 2000, Keys: 10, Dist: workload.Zipfian}
	rc := workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 1000, Keys: 10, Dist: workload.Zipfian}
	return []experiment{
		{"postgres", db.Serializable, mt, []string{"ser", "sser"}},
		{"postgres", db.Serializable, general, []string{"ser"}},
		{"postgres", db.Serializable, appends, []string{"ser"}},
		{"postgres", db.Serializable, lwt, []string{"sser"}},
		{"postgres", db.RepeatableRead, contended, []string{"si", "ser"}},
		{"postgres", db.RepeatableRead, appends, []string{"si", "ser"}},
		{"postgres", db.ReadCommitted, rc, []string{"rc", "si"}},
		{"mariadb", db.Serializable, mt, []string{"ser", "sser"}},
		{"mariadb", db.Serializable, general, []string{"ser"}},
		{"mariadb", db.RepeatableRead, contended, []string{"si", "rc", "ser"}},
		{"mariadb", db.RepeatableRead, appends, []string{"si", "rc"}},
		{"mariadb", db.ReadCommitted, rc, []string{"rc", "si"}},
		{"sqlite", db.Serializable, mt, []string{"ser", "sser"}},
	}
}

// tally is one experiment's findings at one level.
type tally struct {
	violated, unknown int
	kinds             map[string]int
	example           string
}

func TestEvidence(t *testing.T) {
	if !*evidence {
		t.Skip("run with -evidence")
	}
	var b strings.Builder
	b.WriteString("| database | isolation | workload | parameters | runs | committed/run | aborted | level: violation rate (anomalies found) | example counterexample |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	versions := map[string]string{}
	for _, e := range experiments() {
		addr := e.addr(t)
		tallies := make([]tally, len(e.levels))
		committed, aborted, total := 0, 0, 0
		for run := 1; run <= *runs; run++ {
			d := dbtest.Open(t, addr)
			if versions[e.db] == "" {
				versions[e.db], _ = d.Version(context.Background())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			res, err := Run(ctx, Config{DB: d, Isolation: e.iso, Plan: newPlan(t, e.pc, uint64(run))})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			committed += res.Summary.Committed
			aborted += res.Summary.Aborted
			total += res.Summary.Committed + res.Summary.Aborted + res.Summary.Unknown
			for i, l := range e.levels {
				tallies[i].add(res.History, verdict(t, res.History, l))
			}
		}
		var lv []string
		example := ""
		for i, l := range e.levels {
			tl := tallies[i]
			s := fmt.Sprintf("%s: %d/%d", l, tl.violated, *runs)
			if len(tl.kinds) > 0 {
				s += " (" + kindList(tl.kinds) + ")"
			}
			lv = append(lv, s)
			if example == "" && tl.example != "" {
				example = l + ": `" + tl.example + "`"
			}
		}
		row := fmt.Sprintf("| %s | %s | %s | %s | %d | %d | %.0f%% | %s | %s |\n", versions[e.db], e.iso, e.pc.Workload, params(e.pc), *runs,
			committed / *runs, 100*float64(aborted)/float64(max(1, total)), strings.Join(lv, "; "), example)
		t.Log(row)
		b.WriteString(row)
	}
	emit(t, b.String())
}

func (tl *tally) add(h *history.History, r check.Result) {
	switch r.Outcome {
	case check.Violation:
		tl.violated++
	case check.Unknown:
		tl.unknown++
	}
	if tl.kinds == nil {
		tl.kinds = map[string]int{}
	}
	for _, a := range r.Anomalies {
		tl.kinds[a.Kind.String()]++
		if tl.example == "" && a.IsCycle() && len(a.Cycle) <= 4 {
			tl.example = report.Chain(h, a.Cycle)
		}
	}
}

func kindList(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int { return m[b] - m[a] })
	for i, k := range ks {
		ks[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return strings.Join(ks, ", ")
}

func emit(t *testing.T, s string) {
	if *outFile == "" {
		t.Log("\n" + s)
		return
	}
	if err := os.WriteFile(*outFile, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestThroughput measures committed transactions per second and abort
// rates of mt and general on PostgreSQL at SERIALIZABLE and REPEATABLE
// READ with 8, 24 and 64 sessions, traced and untraced (the median of
// three runs each).
func TestThroughput(t *testing.T) {
	if !*throughput {
		t.Skip("run with -throughput")
	}
	addr := dbtest.Postgres(t)
	var b strings.Builder
	b.WriteString("| isolation | workload | sessions | committed/s traced | committed/s untraced | tracing overhead | abort rate |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, iso := range []db.Isolation{db.Serializable, db.RepeatableRead} {
		for _, w := range []workload.Workload{workload.MiniTxn, workload.General} {
			for _, sessions := range []int{8, 24, 64} {
				pc := workload.PlanConfig{Workload: w, Sessions: sessions, Txns: 6000, Keys: 1000, Dist: workload.Zipfian}
				if w == workload.General {
					pc.Txns = 1500
				}
				if *throughputTxns > 0 {
					pc.Txns = *throughputTxns
				}
				traced, abortRate, median := measure(t, addr, iso, pc, false)
				untraced, _, _ := measure(t, addr, iso, pc, true)
				if *plotDir != "" {
					plot(t, filepath.Join(*plotDir, fmt.Sprintf("%s-%s-%d", iso, w, sessions)), median,
						fmt.Sprintf("%s on PostgreSQL at %s, %d sessions (median of 3 runs)", w, iso, sessions))
				}
				row := fmt.Sprintf("| %s | %s | %d | %.0f | %.0f | %+.1f%% | %.1f%% |\n", iso, w, sessions, traced, untraced,
					100*(untraced-traced)/untraced, 100*abortRate)
				t.Log(row)
				b.WriteString(row)
			}
		}
	}
	emit(t, b.String())
}

// measure returns the median throughput of three runs, their abort rate,
// and the median run.
func measure(t *testing.T, addr string, iso db.Isolation, pc workload.PlanConfig, noTrace bool) (float64, float64, *Result) {
	var results []*Result
	aborted, total := 0, 0
	for run := range 3 {
		d := dbtest.Open(t, addr)
		res, err := Run(context.Background(), Config{DB: d, Isolation: iso, Plan: newPlan(t, pc, uint64(run+1)), NoTrace: noTrace})
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
		aborted += res.Summary.Aborted
		total += res.Summary.Committed + res.Summary.Aborted
	}
	slices.SortFunc(results, func(a, b *Result) int { return cmp.Compare(a.Summary.Throughput(), b.Summary.Throughput()) })
	return results[1].Summary.Throughput(), float64(aborted) / float64(total), results[1]
}

// plot draws a run's plots into dir.
func plot(t *testing.T, dir string, res *Result, label string) {
	t.Helper()
	figs, err := runplot.Draw(res.PlotData(label))
	if err != nil {
		t.Fatal(err)
	}
	files, err := runplot.WriteFiles(dir, figs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plots: %s", strings.Join(files, " "))
}
