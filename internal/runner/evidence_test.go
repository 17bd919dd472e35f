package runner

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/report/runplot"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/workload"
)

// The experiments behind docs/databases.md and docs/benchmarks.md.
// They take minutes, so they run only when asked:
//
//	go test ./internal/runner -run TestEvidence -evidence -v -timeout 60m
//	go test ./internal/runner -run TestThroughput -throughput -v -timeout 60m
//
// Both print markdown tables (to the file -out names, else to the log).
// With -examples DIR the evidence experiment also writes, for each
// experiment and level, the first history that violates the level to
// DIR/DB-ISOLATION-WORKLOAD-LEVEL.jsonl (for `isoscope check` to print
// its counterexamples); -evidence-only picks experiments by name
// (DB-ISOLATION-WORKLOAD, e.g. -evidence-only 'random|blindw' for
// Boomslang's workloads alone).
// With -plots DIR the throughput experiment also draws the run plots of
// each configuration's median traced run (transactions per second,
// latency percentiles, abort reasons; SVG and PNG) into
// DIR/ISOLATION-WORKLOAD-SESSIONS/; -throughput-txns shortens the runs
// (a quick try: -throughput-txns 300), -throughput-txns-for shortens
// single configurations (general at 64 sessions spends most of its time
// in lock waits: repeatable-read-general-64=150), -throughput-only picks
// configurations by name, -throughput-runs sets the runs per median, and
// -throughput-file streams the traced runs' histories to a file.
var (
	evidence       = flag.Bool("evidence", false, "run the 20-run isolation experiments")
	throughput     = flag.Bool("throughput", false, "run the throughput experiments")
	runs           = flag.Int("runs", 20, "runs per experiment")
	outFile        = flag.String("out", "", "write the experiments' tables to this file")
	plotDir        = flag.String("plots", "", "write the throughput experiments' run plots under this directory")
	examplesDir    = flag.String("examples", "", "write each experiment's first violating history per level under this directory")
	evidenceOnly   = flag.String("evidence-only", "", "run only the evidence experiments DB-ISOLATION-WORKLOAD whose names match this regular expression")
	throughputTxns = flag.Int("throughput-txns", 0, "transactions per throughput run (0: 6000 for mt, 1500 for general)")
	throughputFor  = flag.String("throughput-txns-for", "", "per-configuration transactions, overriding -throughput-txns: ISOLATION-WORKLOAD-SESSIONS=N,… (e.g. repeatable-read-general-64=500)")
	throughputRuns = flag.Int("throughput-runs", 3, "traced and untraced runs per throughput configuration (the medians are reported)")
	throughputFile = flag.Bool("throughput-file", false, "traced throughput runs also stream their history to a file")
	throughputOnly = flag.String("throughput-only", "", "run only the throughput configurations ISOLATION-WORKLOAD-SESSIONS whose names match this regular expression")
)

type experiment struct {
	db     string // "postgres", "mariadb", "sqlite", "badger"
	iso    db.Isolation
	pc     workload.PlanConfig
	levels []string
}

func (e experiment) addr(t *testing.T) string {
	switch e.db {
	case "postgres":
		return testservice.Postgres(t)
	case "mariadb":
		return testservice.MySQL(t)
	case "badger":
		return db.BadgerMemory
	}
	return "sqlite::memory:"
}

func params(pc workload.PlanConfig) string {
	s := fmt.Sprintf("%d sessions, %d txns, %d keys %s", pc.Sessions, pc.Txns, pc.Keys, pc.Dist)
	switch {
	case pc.Workload == workload.General:
		s += ", 8 ops"
	case pc.Workload.Paper():
		pc = pc.WithDefaults()
		s += fmt.Sprintf(", %d ops", pc.Ops)
		if pc.Workload != workload.BlindW {
			s += fmt.Sprintf(", ranges ≤ %d keys", pc.Span)
		}
		if pc.Values > 0 {
			s += fmt.Sprintf(", values 1–%d", pc.Values)
		}
	}
	return s
}

// paperExperiments are the rows of Boomslang's workloads: each database
// at its serializable level and at REPEATABLE READ.
func paperExperiments() []experiment {
	bench := workload.PlanConfig{Workload: workload.RandomBench, Sessions: 8, Txns: 300, Keys: 200, Dist: workload.Uniform}
	rng := workload.PlanConfig{Workload: workload.RandomRange, Sessions: 8, Txns: 300, Keys: 200, Dist: workload.Uniform}
	rmw := workload.PlanConfig{Workload: workload.RandomRMWRange, Sessions: 8, Txns: 300, Keys: 200, Dist: workload.Uniform}
	blind := workload.PlanConfig{Workload: workload.BlindW, Sessions: 8, Txns: 1000, Keys: 1000, Dist: workload.Uniform}
	var out []experiment
	for _, pc := range []workload.PlanConfig{bench, rng, rmw, blind} {
		out = append(out,
			experiment{"postgres", db.Serializable, pc, []string{"ser", "sser"}},
			experiment{"postgres", db.RepeatableRead, pc, []string{"si", "ser"}},
			experiment{"mariadb", db.Serializable, pc, []string{"ser", "sser"}},
			experiment{"mariadb", db.RepeatableRead, pc, []string{"si", "rc", "ser"}},
			experiment{"sqlite", db.Serializable, pc, []string{"ser", "sser"}})
	}
	return out
}

// badgerExperiments are Badger's rows: its one level (serializable
// snapshot isolation) on every kind of workload, each history checked at
// SER and at SI twice: by the checker auto picks (the timestamp checker
// where the history allows) and by the black-box sat checker, which
// ignores the timestamps ("si@sat").
func badgerExperiments() []experiment {
	return []experiment{
		{"badger", db.Serializable, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 2000, Keys: 20, Dist: workload.Zipfian}, []string{"ser", "sser", "si"}},
		{"badger", db.Serializable, workload.PlanConfig{Workload: workload.General, Sessions: 8, Txns: 400, Keys: 200, Dist: workload.Uniform}, []string{"ser", "si", "si@sat"}},
		{"badger", db.Serializable, workload.PlanConfig{Workload: workload.ListAppend, Sessions: 8, Txns: 1000, Keys: 10, Dist: workload.Zipfian}, []string{"ser", "si"}},
		{"badger", db.Serializable, workload.PlanConfig{Workload: workload.LWT, Sessions: 16, Txns: 2000, Keys: 10, Dist: workload.Zipfian}, []string{"sser"}},
		{"badger", db.Serializable, workload.PlanConfig{Workload: workload.RandomRange, Sessions: 8, Txns: 300, Keys: 200, Dist: workload.Uniform}, []string{"ser", "si"}},
		{"badger", db.Serializable, workload.PlanConfig{Workload: workload.RandomRMWRange, Sessions: 8, Txns: 300, Keys: 200, Dist: workload.Uniform}, []string{"ser", "si"}},
		{"badger", db.Serializable, workload.PlanConfig{Workload: workload.BlindW, Sessions: 8, Txns: 1000, Keys: 1000, Dist: workload.Uniform}, []string{"ser", "si", "si@sat"}},
	}
}

func experiments() []experiment {
	mt := workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 2000, Keys: 20, Dist: workload.Zipfian}
	general := workload.PlanConfig{Workload: workload.General, Sessions: 8, Txns: 400, Keys: 200, Dist: workload.Uniform}
	appends := workload.PlanConfig{Workload: workload.ListAppend, Sessions: 8, Txns: 1000, Keys: 10, Dist: workload.Zipfian}
	lwt := workload.PlanConfig{Workload: workload.LWT, Sessions: 16, Txns: 2000, Keys: 10, Dist: workload.Zipfian}
	rc := workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 16, Txns: 1000, Keys: 10, Dist: workload.Zipfian}
	return append([]experiment{
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
	}, append(paperExperiments(), badgerExperiments()...)...)
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
	only, err := regexp.Compile(*evidenceOnly)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, e := range experiments() {
		if !only.MatchString(fmt.Sprintf("%s-%s-%s", e.db, e.iso, e.pc.Workload)) {
			continue
		}
		addr := e.addr(t)
		tallies := make([]tally, len(e.levels))
		committed, aborted, total, incomplete := 0, 0, 0, 0
		for run := 1; run <= *runs; run++ {
			d := testservice.Open(t, addr)
			if versions[e.db] == "" {
				versions[e.db], _ = d.Version(context.Background())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			res, err := Run(ctx, Config{DB: d, Isolation: e.iso, Plan: newPlan(t, e.pc, uint64(run))})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			// A run that stopped early (a timeout, a lost database)
			// would count as evidence it is not: report it.
			if s := res.Summary; s.Interrupted || len(s.Errors) > 0 || s.Done != s.Planned {
				t.Errorf("%s %s %s run %d ended early: %+v", e.db, e.iso, e.pc.Workload, run, s)
				incomplete++
			}
			// The checks below run on the history in memory; the rows
			// must stand for histories a reader accepts too.
			var buf bytes.Buffer
			if err := native.Write(&buf, res.History); err != nil {
				t.Fatal(err)
			}
			if _, err := native.Read(&buf, "run"); err != nil {
				t.Errorf("%s %s %s run %d: the history does not read back: %v", e.db, e.iso, e.pc.Workload, run, err)
			}
			committed += res.Summary.Committed
			aborted += res.Summary.Aborted
			total += res.Summary.Committed + res.Summary.Aborted + res.Summary.Unknown
			for i, l := range e.levels {
				r := verdict(t, res.History, l)
				if r.Outcome == check.Violated && tallies[i].violated == 0 && *examplesDir != "" {
					writeExample(t, filepath.Join(*examplesDir, fmt.Sprintf("%s-%s-%s-%s.jsonl", e.db, e.iso, e.pc.Workload, l)), res.History)
				}
				tallies[i].add(res.History, r)
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
			// A checker that could not decide is not a "holds".
			if tl.unknown > 0 {
				s += fmt.Sprintf(", %d undecided", tl.unknown)
			}
			lv = append(lv, s)
			if example == "" && tl.example != "" {
				example = l + ": `" + tl.example + "`"
			}
		}
		if incomplete > 0 {
			lv = append(lv, fmt.Sprintf("%d runs ended early", incomplete))
		}
		row := fmt.Sprintf("| %s | %s | %s | %s | %d | %d | %.0f%% | %s | %s |\n", versions[e.db], e.iso, e.pc.Workload, params(e.pc), *runs,
			committed / *runs, 100*float64(aborted)/float64(max(1, total)), strings.Join(lv, "; "), example)
		t.Log(row)
		b.WriteString(row)
	}
	emit(t, b.String())
}

// writeExample writes h to file in isoscope's own format.
func writeExample(t *testing.T, file string, h *history.History) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := native.Write(&b, h); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (tl *tally) add(h *history.History, r check.Result) {
	switch r.Outcome {
	case check.Violated:
		tl.violated++
	case check.Undecided:
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
// -throughput-runs runs each, traced and untraced runs alternating).
func TestThroughput(t *testing.T) {
	if !*throughput {
		t.Skip("run with -throughput")
	}
	addr := testservice.Postgres(t)
	txnsFor := map[string]int{}
	for _, f := range strings.Split(*throughputFor, ",") {
		if f == "" {
			continue
		}
		name, n, ok := strings.Cut(f, "=")
		k, err := strconv.Atoi(n)
		if !ok || err != nil || k <= 0 {
			t.Fatalf("-throughput-txns-for: %q is not NAME=N", f)
		}
		txnsFor[name] = k
	}
	only, err := regexp.Compile(*throughputOnly)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| isolation | workload | sessions | txns/run | committed/s traced | committed/s untraced | tracing overhead | abort rate |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, iso := range []db.Isolation{db.Serializable, db.RepeatableRead} {
		for _, w := range []workload.Workload{workload.MiniTxn, workload.General} {
			for _, sessions := range []int{8, 24, 64} {
				pc := workload.PlanConfig{Workload: w, Sessions: sessions, Txns: 6000, Keys: 1000, Dist: workload.Zipfian}
				if w == workload.General {
					pc.Txns = 1500
				}
				name := fmt.Sprintf("%s-%s-%d", iso, w, sessions)
				if !only.MatchString(name) {
					continue
				}
				if *throughputTxns > 0 {
					pc.Txns = *throughputTxns
				}
				if n := txnsFor[name]; n > 0 {
					pc.Txns = n
				}
				traced, untraced, abortRate, median := measure(t, addr, iso, pc)
				if *plotDir != "" {
					plot(t, filepath.Join(*plotDir, name), median,
						fmt.Sprintf("%s on PostgreSQL at %s, %d sessions (the median of %d runs)", w, iso, sessions, *throughputRuns))
				}
				row := fmt.Sprintf("| %s | %s | %d | %d | %.0f | %.0f | %+.1f%% | %.1f%% |\n", iso, w, sessions, pc.Txns, traced, untraced,
					100*(untraced-traced)/untraced, 100*abortRate)
				t.Log(row)
				b.WriteString(row)
			}
		}
	}
	emit(t, b.String())
}

// measure runs pc -throughput-runs times traced and as many times
// untraced, alternating (so that drift in the machine's load hits both
// alike), and returns the median throughput of each, the traced runs'
// abort rate, and the median traced run. With -throughput-file the traced
// runs also stream their history to a file, as isoscope run does.
func measure(t *testing.T, addr string, iso db.Isolation, pc workload.PlanConfig) (traced, untraced, abortRate float64, median *Result) {
	var tr, un []*Result
	aborted, total := 0, 0
	for run := range *throughputRuns {
		for _, noTrace := range []bool{false, true} {
			d := testservice.Open(t, addr)
			c := Config{DB: d, Isolation: iso, Plan: newPlan(t, pc, uint64(run+1)), NoTrace: noTrace}
			if !noTrace && *throughputFile {
				f, err := os.Create(filepath.Join(t.TempDir(), "history.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				c.Out = f
			}
			res, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if s := res.Summary; len(s.Errors) > 0 || s.Done != s.Planned {
				t.Errorf("%s %s %d sessions ended early: %+v", iso, pc.Workload, pc.Sessions, s)
			}
			if noTrace {
				un = append(un, res)
				continue
			}
			tr = append(tr, res)
			aborted += res.Summary.Aborted
			total += res.Summary.Committed + res.Summary.Aborted
		}
	}
	byThroughput := func(a, b *Result) int { return cmp.Compare(a.Summary.Throughput(), b.Summary.Throughput()) }
	slices.SortFunc(tr, byThroughput)
	slices.SortFunc(un, byThroughput)
	m := len(tr) / 2
	return tr[m].Summary.Throughput(), un[m].Summary.Throughput(), float64(aborted) / float64(total), tr[m]
}

// plot draws a run's plots into dir.
func plot(t *testing.T, dir string, res *Result, label string) {
	t.Helper()
	figs, err := runplot.Draw(runplot.FromOutcomes(label, res.Start, res.Summary.Elapsed, res.Outcomes))
	if err != nil {
		t.Fatal(err)
	}
	files, err := runplot.WriteFiles(dir, figs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plots: %s", strings.Join(files, " "))
}
