package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// runRun runs `isoscope run args…` as Main would, with the same exit
// statuses.
func runRun(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runRunWith(t, ctx, &runCommand{}, args...)
}

// runRunWith is runRun with c's unexported settings (its io is replaced).
func runRunWith(t *testing.T, ctx context.Context, c *runCommand, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	c.io = IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}
	cmd := runCommandFor(c)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	err := cmd.ExecuteContext(ctx)
	var ee *exitError
	switch {
	case err == nil:
		code = ExitHolds
	case errors.As(err, &ee):
		code = ee.code
		if ee.err != nil {
			errb.WriteString("isoscope: " + ee.err.Error() + "\n")
		}
	default:
		code = ExitBadInput
		errb.WriteString("isoscope: " + err.Error() + "\n")
	}
	return code, out.String(), errb.String()
}

// readHistoryFile reads a history the run wrote.
func readHistoryFile(t *testing.T, name string) *history.History {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := native.Read(f, name)
	if err != nil {
		t.Fatalf("the run's history does not read back: %v", err)
	}
	return h
}

// TestRunWithoutFlags is the fresh machine's first command: mini-
// transactions on the embedded database, a verdict within seconds, and
// the history in the current directory.
func TestRunWithoutFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	start := time.Now()
	code, out, errs := runRun(t, context.Background())
	if code != ExitHolds || !strings.Contains(out, "serializable holds (checker mt; ") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if d := time.Since(start); d > 10*time.Second*raceSlowdown {
		t.Errorf("took %v", d)
	}
	if !strings.Contains(errs, "ran mt on SQLite") || !strings.Contains(errs, "10000 committed") {
		t.Errorf("stderr %s", errs)
	}
	files, _ := filepath.Glob("isoscope-run-*.jsonl")
	if len(files) != 1 {
		t.Fatalf("history files %v", files)
	}
	h := readHistoryFile(t, files[0])
	if st := h.Stats(); st.Committed != 10000 || st.Sessions != 8 || !h.Header.UniqueValues || !strings.Contains(h.Header.Source, "workload=mt") {
		t.Errorf("history %+v, header %+v", st, h.Header)
	}
}

func TestRunExitStatuses(t *testing.T) {
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"lwt at sser", []string{"--workload", "lwt", "--level", "sser", "--txns", "500", "-o", out("lwt.jsonl")}, ExitHolds, "strict-serializable holds (checker lwt", "ran lwt"},
		{"list-append", []string{"--workload", "list-append", "--txns", "500", "-o", out("la.jsonl")}, ExitHolds, "serializable holds (checker list-append", ""},
		{"general", []string{"--workload", "general", "--txns", "300", "--keys", "50", "-o", out("g.jsonl")}, ExitHolds, "serializable holds (checker sat", ""},
		{"range checked", []string{"--workload", "range", "--txns", "300", "-o", out("r.jsonl")}, ExitHolds, "serializable holds", ""},
		{"range at cursor stability", []string{"--workload", "range", "--txns", "300", "--level", "cursor-stability", "-o", out("r2.jsonl")}, ExitHolds, "cursor-stability holds (checker sat", ""},
		{"list-append at read uncommitted", []string{"--workload", "list-append", "--txns", "100", "--level", "read-uncommitted", "-o", out("la2.jsonl")}, ExitHolds, "read-uncommitted holds (checker list-append", ""},
		{"list-append with a module no list checker runs", []string{"--workload", "list-append", "--txns", "100", "--level", "ser", "--module", "real-time", "-o", out("la3.jsonl")}, ExitBadInput, "", "no checker can decide"},
		{"no trace", []string{"--no-trace", "--txns", "300", "-o", out("none.jsonl")}, ExitHolds, "", "300 committed"},
		{"sqlite rr", []string{"--isolation", "repeatable-read"}, ExitBadInput, "", "only serializable"},
		{"bad isolation", []string{"--isolation", "snapshot"}, ExitBadInput, "", "unknown isolation"},
		{"bad workload", []string{"--workload", "tpcc"}, ExitBadInput, "", "unknown workload"},
		{"bad db", []string{"--db", "cockroach://x"}, ExitBadInput, "", "unknown database address"},
		{"bad level", []string{"--level", "nope"}, ExitBadInput, "", "unknown isolation level"},
		{"bad table", []string{"--table", "a-b"}, ExitBadInput, "", "table name"},
		{"duplicates on mt", []string{"--duplicates", "0.5"}, ExitBadInput, "", "duplicates"},
		{"unreachable", []string{"--db", "postgres://x@127.0.0.1:1/none?connect_timeout=2"}, ExitBadInput, "", "cannot reach"},
		{"arguments", []string{"extra"}, ExitBadInput, "", "run takes no arguments, only flags (got \"extra\")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runRun(t, context.Background(), tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, want %d\nstdout %q (want %q)\nstderr %q (want %q)", code, tc.code, stdout, tc.stdout, stderr, tc.stderr)
			}
		})
	}
	if _, err := os.Stat(out("none.jsonl")); err == nil {
		t.Error("--no-trace wrote a history")
	}
}

func TestRunJSON(t *testing.T) {
	code, out, _ := runRun(t, context.Background(), "--txns", "200", "--json", "-o", filepath.Join(t.TempDir(), "h.jsonl"))
	var doc struct {
		Level, Outcome string
		History        struct{ Committed int }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitHolds {
		t.Fatalf("exit %d, %v: %q", code, err, out)
	}
	if doc.Level != "serializable" || doc.Outcome != "satisfied" || doc.History.Committed != 200 {
		t.Errorf("%+v", doc)
	}
}

// dropAfter drops the table of a run against a server when the test ends.
func dropAfter(t *testing.T, addr, table string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if d, err := db.Open(ctx, addr, table); err == nil {
			_ = d.Drop(ctx)
			_ = d.Close()
		}
	})
}

// TestRunMariaDBRepeatableRead runs mini-transactions on MariaDB at
// REPEATABLE READ and checks them, by default, at snapshot isolation:
// InnoDB loses updates, and run exits 1 with the lost update's cycle.
func TestRunMariaDBRepeatableRead(t *testing.T) {
	addr := testservice.MySQL(t)
	table := testservice.Table()
	dropAfter(t, addr, table)
	for try := 1; ; try++ {
		code, out, errs := runRun(t, context.Background(), "--db", addr, "--table", table, "--isolation", "repeatable-read",
			"--sessions", "16", "--keys", "8", "--txns", "1000", "-o", filepath.Join(t.TempDir(), "rr.jsonl"))
		if code == ExitViolation && strings.Contains(out, "snapshot-isolation VIOLATED") && strings.Contains(out, "lost-update") {
			break
		}
		if code != ExitViolation && code != ExitHolds || try == 5 {
			t.Fatalf("try %d: exit %d\nstdout %s\nstderr %s", try, code, out, errs)
		}
	}
}

// TestRunDatabaseGoesAway cuts every connection to PostgreSQL in the
// middle of a run and refuses new ones for good: after --reconnect-for,
// run ends with exit 3 and a clear message, and the history of what happened until then is complete and
// still serializable (in-flight commits are unknown, not committed).
func TestRunDatabaseGoesAway(t *testing.T) {
	addr := testservice.Postgres(t)
	proxy, via := testservice.NewProxy(t, addr)
	table := testservice.Table()
	dropAfter(t, addr, table)
	file := filepath.Join(t.TempDir(), "cut.jsonl")
	go func() {
		// Cut once transactions are being traced — every session
		// connected — however long setting up took on a loaded machine.
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if fi, err := os.Stat(file); err == nil && fi.Size() > 64<<10 {
				break
			}
		}
		proxy.Cut()
	}()
	start := time.Now()
	code, out, errs := runRun(t, context.Background(), "--db", via, "--table", table, "--sessions", "8", "--keys", "200",
		"--txns", "1000000", "--reconnect-for", "1s", "-o", file)
	if code != ExitUnknown || !strings.Contains(errs, "the run stopped early") || !strings.Contains(errs, "could not reconnect within 1s") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %v to end", d)
	}
	if !strings.Contains(out, "serializable holds") {
		t.Errorf("stdout %s", out)
	}
	h := readHistoryFile(t, file)
	st := h.Stats()
	if st.Committed == 0 {
		t.Errorf("history %+v", st)
	}
	t.Logf("cut after %d committed, %d aborted, %d unknown transactions\n%s", st.Committed, st.Aborted, st.Unknown, errs)
}

// TestRunReport runs a contended workload on PostgreSQL at SERIALIZABLE
// with --report: the directory holds the three plots as SVG and PNG, the
// page and the result; the page shows the verdict, then the run with the
// plots inline, and the abort-reason plot counts the serialization
// failures the run reported.
func TestRunReport(t *testing.T) {
	addr := testservice.Postgres(t)
	table := testservice.Table()
	dropAfter(t, addr, table)
	dir := t.TempDir()
	rep := filepath.Join(dir, "report")
	code, out, errs := runRun(t, context.Background(), "--db", addr, "--table", table, "--sessions", "8", "--keys", "20",
		"--txns", "2000", "-o", filepath.Join(dir, "h.jsonl"), "--report", rep)
	if code != ExitHolds || !strings.Contains(out, "serializable holds") || !strings.Contains(errs, "report: "+filepath.Join(rep, "index.html")) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	for _, name := range []string{"throughput", "latency", "aborts"} {
		b := readFile(t, filepath.Join(rep, name+".png"))
		img, err := png.Decode(strings.NewReader(b))
		if err != nil {
			t.Fatalf("%s.png: %v", name, err)
		}
		if sz := img.Bounds().Size(); sz.X < 600 || sz.Y < 300 {
			t.Errorf("%s.png is %v", name, sz)
		}
		svg := readFile(t, filepath.Join(rep, name+".svg"))
		if !strings.Contains(svg, "<svg") || !strings.Contains(svg, "PostgreSQL") {
			t.Errorf("%s.svg: %.200s", name, svg)
		}
	}
	page := readFile(t, filepath.Join(rep, "index.html"))
	for _, want := range []string{
		`<section class="run" id="run">`, "mt on PostgreSQL", `<a href="throughput.png">PNG</a>`, `<a href="aborts.svg">SVG</a>`,
		`<figure class="plot" id="plot-latency">`, "<dt>committed/s</dt>", "serializable holds", `<a href="result.json">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	if n := strings.Count(page, `<div class="plot-svg"><svg`); n != 3 {
		t.Errorf("%d plots inline, want 3", n)
	}
	if strings.Index(page, "serializable holds") > strings.Index(page, `<section class="run" id="run">`) {
		t.Error("the page shows the run's plots before the verdict")
	}
	if strings.Contains(page, "<?xml") || strings.Contains(page, " src=") || strings.Contains(page, "<link") || strings.Contains(page, "<script") {
		t.Error("the page is not self-contained")
	}
	// The run prints "  N serialization failure (40001)"; the plot shows N.
	m := regexp.MustCompile(`(?m)^\s+(\d+) serialization failure \(40001\)$`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no serialization failure in a contended run:\n%s", errs)
	}
	n, _ := strconv.Atoi(m[1])
	if aborts := readFile(t, filepath.Join(rep, "aborts.svg")); !strings.Contains(aborts, ">serialization failure</text>") || !strings.Contains(aborts, ">"+textfmt.Thousands(n)+"</text>") {
		t.Errorf("aborts.svg does not show %d serialization failures", n)
	}
	var doc struct{ Outcome string }
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(rep, "result.json"))), &doc); err != nil || doc.Outcome != "satisfied" {
		t.Errorf("result.json: %v %+v", err, doc)
	}
}

// TestRunReportWithoutCheck: with --no-trace nothing is checked, and the
// report is the run and its plots alone; a stale result of an earlier
// report in the directory is removed.
func TestRunReportWithoutCheck(t *testing.T) {
	rep := t.TempDir()
	writeFile(t, filepath.Join(rep, "result.json"), "{}")
	code, _, errs := runRun(t, context.Background(), "--no-trace", "--txns", "300", "--report", rep)
	if code != ExitHolds {
		t.Fatalf("exit %d: %s", code, errs)
	}
	page := readFile(t, filepath.Join(rep, "index.html"))
	if !strings.Contains(page, `id="plot-throughput"`) || !strings.Contains(page, "mt on SQLite") || strings.Contains(page, `class="history"`) {
		t.Errorf("page %.400s", page)
	}
	for _, name := range []string{"throughput.svg", "throughput.png", "latency.svg", "latency.png", "aborts.svg", "aborts.png"} {
		if _, err := os.Stat(filepath.Join(rep, name)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(rep, "result.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("result.json: %v", err)
	}
}

// TestRunRefusesForeignTable: `run --table T` where T exists and isoscope
// did not create it exits 2 with the reason, and T keeps its rows and
// shape (a table with one row once became an empty (k,v,l) table).
func TestRunRefusesForeignTable(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			var addr, driver, dsn string
			switch name {
			case "sqlite":
				file := filepath.Join(t.TempDir(), "precious.db")
				addr, driver, dsn = "sqlite://"+file, "sqlite", file
			case "postgres":
				addr = testservice.Postgres(t)
				driver, dsn = "pgx", addr
			case "mysql":
				addr = testservice.MySQL(t)
				driver, dsn = "mysql", "root@tcp(127.0.0.1:3306)/test"
			}
			raw, err := sql.Open(driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			table := testservice.Table()
			if _, err := raw.Exec("CREATE TABLE " + table + " (a INT)"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = raw.Exec("DROP TABLE " + table) })
			if _, err := raw.Exec("INSERT INTO " + table + " (a) VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runRun(t, context.Background(), "--db", addr, "--table", table, "--txns", "10",
				"-o", filepath.Join(t.TempDir(), "h.jsonl"))
			if code != ExitBadInput || !strings.Contains(errs, "was not created by isoscope") {
				t.Errorf("exit %d, want 2 with the reason\nstdout: %s\nstderr: %s", code, out, errs)
			}
			var a int
			if err := raw.QueryRow("SELECT a FROM " + table).Scan(&a); err != nil || a != 1 {
				t.Errorf("the table's row after the refused run: %d, %v", a, err)
			}
		})
	}
}
