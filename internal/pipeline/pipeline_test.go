package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/workload"
)

// config is a run of txns mini-transactions on addr ("" the default
// database, in-memory SQLite), recorded to a file of the test's own and
// checked at lvl by checker.
func config(t *testing.T, addr, lvl, checker string, txns int) Config {
	t.Helper()
	l, err := level.Lookup(lvl)
	if err != nil {
		t.Fatal(err)
	}
	const seed = 7
	plan, err := workload.NewPlan(workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 4, Txns: txns, Keys: 20, Dist: workload.Zipfian, ReadRatio: -1},
		rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Plan: plan, Seed: seed, Isolation: db.Serializable, Retries: 3, Table: db.DefaultTable,
		Out:   filepath.Join(t.TempDir(), "run.jsonl"),
		Level: l, LevelChosen: true, Check: check.Options{Checker: checker, Holds: true}, Shown: report.TextOptions{PerKind: 3},
	}
	if addr != "" {
		cfg.DBs = []string{addr}
	}
	return cfg
}

// TestRunHolds runs mini-transactions on SQLite in memory, serializable,
// without the command line: the level holds, the verdict is on standard
// output as JSON, what ran on standard error, and the history file holds
// every transaction the run reports.
func TestRunHolds(t *testing.T) {
	cfg := config(t, "", "ser", "auto", 200)
	cfg.JSON = true
	var out, errs bytes.Buffer
	res, err := Run(context.Background(), cfg, IO{Stdout: &out, Stderr: &errs})
	if err != nil || res.Status != Holds {
		t.Fatalf("status %d, error %v\n%s%s", res.Status, err, errs.String(), out.String())
	}
	var doc struct {
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Outcome != "satisfied" {
		t.Fatalf("stdout %s (%v)", out.String(), err)
	}
	if !strings.Contains(errs.String(), "ran mt on SQLite") || !strings.Contains(errs.String(), "history: "+cfg.Out) {
		t.Errorf("stderr %s", errs.String())
	}
	f, err := os.Open(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := native.Read(f, cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Txns) < 200 {
		t.Errorf("the history holds %d transactions, want the 200 planned and their retries", len(h.Txns))
	}
}

// TestRunHistoryHook plants, through Hooks.History, a snapshot taken at
// the start of time in a few of session 2's reads on Badger: the run's
// own check judges what it recorded and holds, while the history file
// holds the planted lines, which Chronos finds violate snapshot
// isolation.
func TestRunHistoryHook(t *testing.T) {
	cfg := config(t, "badger::memory:", "si", "chronos", 400)
	startTS := regexp.MustCompile(`"start_ts":\d+`)
	readsValue := regexp.MustCompile(`\["r",\d+,\d+\]`)
	planted := 0
	cfg.Hooks.History = func(line []byte) []byte {
		if planted < 4 && readsValue.Match(line) && bytes.Contains(line, []byte(`"commit_ts"`)) && bytes.Contains(line, []byte(`"session":2`)) {
			planted++
			return startTS.ReplaceAll(line, []byte(`"start_ts":1`))
		}
		return line
	}
	var out, errs bytes.Buffer
	res, err := Run(context.Background(), cfg, IO{Stdout: &out, Stderr: &errs})
	if err != nil || res.Status != Holds || planted == 0 {
		t.Fatalf("status %d, error %v, %d planted\n%s%s", res.Status, err, planted, errs.String(), out.String())
	}
	b, err := os.ReadFile(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte(`"start_ts":1,`)); n != planted {
		t.Errorf("the history file holds %d planted lines, want %d", n, planted)
	}
	h, err := native.Read(bytes.NewReader(b), cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	r, err := check.Run(context.Background(), h, cfg.Level, cfg.Check)
	if err != nil || r.Outcome != check.Violated {
		t.Fatalf("the file's history: %s (%v), want a violation", r.Outcome, err)
	}
}

// TestRunRefusesCollectorWithoutTrace: a collector publishes the history,
// which NoTrace does not record: an error, and nothing checked.
func TestRunRefusesCollectorWithoutTrace(t *testing.T) {
	cfg := config(t, "", "ser", "auto", 10)
	cfg.NoTrace = true
	cfg.Collector = Collector{URL: "http://127.0.0.1:1"}
	var out, errs bytes.Buffer
	_, err := Run(context.Background(), cfg, IO{Stdout: &out, Stderr: &errs})
	if err == nil || !strings.Contains(err.Error(), "--no-trace") || out.Len() > 0 {
		t.Fatalf("error %v, stdout %q", err, out.String())
	}
}
