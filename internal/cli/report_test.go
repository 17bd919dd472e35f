package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/isoscope/isoscope/internal/gen"
)

// runReport runs the report command as Main would once it is registered.
func runReport(t *testing.T, args ...string) (code int, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newReportCommand(IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	if err == nil {
		return ExitHolds, errb.String()
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, errb.String() + err.Error()
	}
	return ExitBadInput, errb.String() + err.Error()
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withoutElapsed drops the timing from JSON result lines and HTML pages,
// the only part of a result that differs between runs.
func withoutElapsed(s string) string {
	s = regexp.MustCompile(`"elapsed_ms":[0-9.e+-]+`).ReplaceAllString(s, `"elapsed_ms":0`)
	return regexp.MustCompile(`checked in [0-9.]+ ms`).ReplaceAllString(s, "checked in 0 ms")
}

// TestCheckReport: --report writes the page, the JSON result (what --json
// prints), the DOT file and a picture of each anomaly; --dot writes the
// DOT file; the verdict and the exit status do not change.
func TestCheckReport(t *testing.T) {
	dir := t.TempDir()
	hist := writeFile(t, filepath.Join(dir, "lu.jsonl"), lostUpdate)
	rep, dot := filepath.Join(dir, "rep"), filepath.Join(dir, "c.dot")
	code, out, errs := run(t, "", "check", "--level", "si", "--report", rep, "--dot", dot, hist)
	if code != ExitViolation || !strings.Contains(out, "lost-update") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	_, js, _ := run(t, "", "check", "--level", "si", "--json", hist)
	if got := readFile(t, filepath.Join(rep, "result.json")); withoutElapsed(got) != withoutElapsed(js) {
		t.Errorf("result.json is not the --json output:\n%s\n%s", got, js)
	}
	page := readFile(t, filepath.Join(rep, "index.html"))
	for _, want := range []string{"snapshot-isolation VIOLATED: 1 anomaly", `<svg class="cycle"`, `<svg class="timeline"`,
		`<span class="tag dep-rw">rw(x) → T3</span>`, `href="result.json"`, `href="cycles.dot"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	d := readFile(t, dot)
	if d != readFile(t, filepath.Join(rep, "cycles.dot")) || !strings.Contains(d, "subgraph cluster_a0") || !strings.Contains(d, `label="rw(x)"`) {
		t.Errorf("DOT:\n%s", d)
	}

	// One picture per anomaly, as SVG and DOT, linked from the page.
	for _, f := range []string{"lost-update-1.svg", "lost-update-1.dot"} {
		if b := readFile(t, filepath.Join(rep, f)); !strings.Contains(b, "lost-update #1") || !strings.Contains(page, `href="`+f+`"`) {
			t.Errorf("%s: %.200s", f, b)
		}
	}

	// A history that holds: a page with a green verdict and no DOT file
	// nor pictures.
	ok := writeFile(t, filepath.Join(dir, "serial.jsonl"), serial)
	if code, _, errs := run(t, "", "check", "--level", "sser", "--report", rep, ok); code != ExitHolds {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if p := readFile(t, filepath.Join(rep, "index.html")); !strings.Contains(p, `<div class="banner satisfied">`) {
		t.Error("no satisfied banner")
	}
	for _, f := range []string{"cycles.dot", "lost-update-1.svg", "lost-update-1.dot"} {
		if _, err := os.Stat(filepath.Join(rep, f)); !os.IsNotExist(err) {
			t.Errorf("stale %s left: %v", f, err)
		}
	}

	// An unwritable directory is an error, with no verdict printed.
	code, out, errs = run(t, "", "check", "--report", filepath.Join(hist, "sub"), hist)
	if code != ExitBadInput || out != "" || !strings.Contains(errs, "--report") {
		t.Errorf("unwritable: exit %d %q %q", code, out, errs)
	}
}

// TestCheckReportSeveralFiles: several histories make one page with a
// section each, and a result.json with one line per history.
func TestCheckReportSeveralFiles(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "a.jsonl"), lostUpdate)
	b := writeFile(t, filepath.Join(dir, "b.jsonl"), serial)
	rep := filepath.Join(dir, "rep")
	if code, _, errs := run(t, "", "check", "--level", "ser", "--report", rep, a, b); code != ExitViolation {
		t.Fatalf("exit %d: %s", code, errs)
	}
	page := readFile(t, filepath.Join(rep, "index.html"))
	if !strings.Contains(page, `id="f0"`) || !strings.Contains(page, `id="f1"`) || !strings.Contains(page, `<nav class="toc">`) {
		t.Error("no section per file")
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(rep, "result.json"))), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"file":"`+a+`"`) {
		t.Errorf("result.json: %q", lines)
	}
}

// TestReportCommand: `isoscope report RESULT.json HISTORY` renders the
// page check --report writes, from the saved JSON and the history.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	hist := writeFile(t, filepath.Join(dir, "lu.jsonl"), lostUpdate)
	rep, again := filepath.Join(dir, "rep"), filepath.Join(dir, "again")
	if code, _, errs := run(t, "", "check", "--level", "ser", "--report", rep, hist); code != ExitViolation {
		t.Fatalf("exit %d: %s", code, errs)
	}
	code, errs := runReport(t, filepath.Join(rep, "result.json"), hist, "--out", again)
	if code != 0 || !strings.Contains(errs, "report written to") {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	for _, f := range []string{"index.html", "result.json", "cycles.dot"} {
		if got, want := readFile(t, filepath.Join(again, f)), readFile(t, filepath.Join(rep, f)); got != want {
			t.Errorf("%s differs when re-rendered:\n%s", f, firstLineDiff(want, got))
		}
	}

	// Several histories: each is matched to its document by file name.
	ok := writeFile(t, filepath.Join(dir, "serial.jsonl"), serial)
	_, js, _ := run(t, "", "check", "--level", "ser", "--json", hist, ok)
	res := writeFile(t, filepath.Join(dir, "two.json"), js)
	if code, errs := runReport(t, res, ok, hist, "--out", again); code != 0 {
		t.Fatalf("two histories: exit %d: %s", code, errs)
	}
	page := readFile(t, filepath.Join(again, "index.html"))
	if i, j := strings.Index(page, "serializable holds"), strings.Index(page, "VIOLATED"); i < 0 || j < 0 || i > j {
		t.Error("sections not in the order of the histories given")
	}

	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"wrong history", []string{filepath.Join(rep, "result.json"), writeFile(t, filepath.Join(dir, "other.jsonl"), strings.ReplaceAll(lostUpdate, `"id":2`, `"id":7`))}, "transaction 2 is not in the history"},
		{"no document", []string{res, writeFile(t, filepath.Join(dir, "third.jsonl"), serial)}, "no document for"},
		{"not a result", []string{hist, hist}, "not an isoscope result"},
		{"missing result", []string{filepath.Join(dir, "nope.json"), hist}, "no such file"},
		{"one argument", []string{hist}, "report needs a result"},
	} {
		if code, errs := runReport(t, tc.args...); code != ExitBadInput || !strings.Contains(errs, tc.stderr) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.name, code, errs, tc.stderr)
		}
	}
}

// TestReportRerendersCheckReport: the report `isoscope report` renders from
// a result saved with --json is the one check --report wrote in the same
// run, byte for byte, for a history with every plantable kind of anomaly:
// the non-cycle anomalies highlight the same operations at issue, which
// the result's findings name ("ops"). A result saved before findings
// named them still renders.
func TestReportRerendersCheckReport(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	var kinds []string
	for _, k := range gen.PlantableKinds() {
		kinds = append(kinds, k.String())
	}
	if code, _, errs := run(t, "", "gen", "--txns", "400", "--sessions", "6", "--keys", "60", "--seed", "5",
		"--plant", strings.Join(kinds, ","), "--out", hist); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errs)
	}
	rep, again := filepath.Join(dir, "rep"), filepath.Join(dir, "again")
	code, js, errs := run(t, "", "check", "--level", "sser", "--json", "--report", rep, hist)
	if code != ExitViolation {
		t.Fatalf("check: exit %d: %s", code, errs)
	}
	saved := writeFile(t, filepath.Join(dir, "saved.json"), js)
	if !strings.Contains(js, `"ops":[{"transaction":`) {
		t.Errorf("no finding names its operations at issue: %s", js)
	}
	if code, errs := runReport(t, saved, hist, "--out", again); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	page := readFile(t, filepath.Join(rep, "index.html"))
	if !strings.Contains(page, `<span class="op hl bad">`) {
		t.Error("the check's page highlights no operation at issue")
	}
	for _, f := range []string{"index.html", "cycles.dot"} {
		if got, want := readFile(t, filepath.Join(again, f)), readFile(t, filepath.Join(rep, f)); got != want {
			t.Errorf("%s differs when re-rendered:\n%s", f, firstLineDiff(want, got))
		}
	}

	old := writeFile(t, filepath.Join(dir, "old.json"), regexp.MustCompile(`,"ops":\[[^\]]*\]`).ReplaceAllString(js, ""))
	if code, errs := runReport(t, old, hist, "--out", again); code != 0 {
		t.Fatalf("report of an old result: exit %d: %s", code, errs)
	}
	if p := readFile(t, filepath.Join(again, "index.html")); !strings.Contains(p, `<li class="anomaly"`) {
		t.Error("the page of an old result shows no anomaly")
	}
}

func firstLineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range min(len(wl), len(gl)) {
		if wl[i] != gl[i] {
			return "want " + wl[i] + "\ngot  " + gl[i]
		}
	}
	return "(one is a prefix of the other)"
}

// TestResultJSONParses: result.json is one JSON object per line.
func TestResultJSONParses(t *testing.T) {
	dir := t.TempDir()
	hist := writeFile(t, filepath.Join(dir, "lu.jsonl"), lostUpdate)
	rep := filepath.Join(dir, "rep")
	run(t, "", "check", "--report", rep, hist)
	var m map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(rep, "result.json"))), &m); err != nil || m["outcome"] != "violation" {
		t.Errorf("result.json: %v %v", err, m)
	}
}

// chromium returns the headless browser to test with: $ISOSCOPE_CHROMIUM,
// or chromium on the PATH. Without one the test skips, except under CI,
// where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ISOSCOPE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const how = "chromium not found: install it (Debian: apt-get install -y chromium) or set ISOSCOPE_CHROMIUM"
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal(how)
	}
	t.Skip(how)
	return ""
}

// artifacts is where tests leave files for people: $ISOSCOPE_ARTIFACTS,
// or a temporary directory.
func artifacts(t *testing.T) string {
	if d := os.Getenv("ISOSCOPE_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestReportInBrowser opens the report of a known violation in headless
// Chromium: the anomaly list, the cycle pictures and the timeline are
// there, the named anomalies come before the generic cycles (in the table
// of kinds and in the sections), a legend says what "_" means, every
// in-page link has its target, and the page made no request but for
// itself. It saves a screenshot.
func TestReportInBrowser(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	// Snapshot isolation's write skews give generic cycles besides the
	// planted anomalies.
	if code, _, errs := run(t, "", "gen", "--txns", "3000", "--sessions", "8", "--keys", "200", "--seed", "11", "--mode", "si",
		"--plant", "lost-update,long-fork,aborted-read,real-time-violation", "--out", hist); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errs)
	}
	rep := filepath.Join(dir, "report")
	if code, _, errs := run(t, "", "check", "--level", "sser", "--report", rep, hist); code != ExitViolation {
		t.Fatalf("check: exit %d: %s", code, errs)
	}
	page := (&url.URL{Scheme: "file", Path: filepath.Join(rep, "index.html")}).String()

	var (
		mu       sync.Mutex
		requests []string
	)
	ctx, cancel := headless(t, exe, 1400, chromedp.WithListener(func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		case *network.EventWebSocketCreated:
			mu.Lock()
			requests = append(requests, e.URL)
			mu.Unlock()
		}
	}))
	defer cancel()
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	count := func(sel string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return n
	}
	for sel, min := range map[string]int{
		"li.anomaly":                     4,
		"table.kinds tbody tr":           4,
		"svg.cycle":                      3,
		"svg.cycle g.edge":               6,
		"svg.timeline":                   1,
		"svg.timeline rect.bar.hl":       9,
		"span.op.hl":                     8,
		".banner.violation .verdict":     1,
		"a.tl-link":                      4,
		"svg.timeline a rect.bar.hl[id]": 9,
	} {
		if got := count(sel); got < min {
			t.Errorf("%d × %s, want at least %d", got, sel, min)
		}
	}
	for what, js := range map[string]string{
		"table of kinds": `[...document.querySelectorAll('table.kinds tbody tr td:first-child')].map(td => td.textContent)`,
		"kind sections":  `[...document.querySelectorAll('section.kind h3')].map(h => h.firstChild.textContent.trim())`,
	} {
		kinds, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		generic := slices.Index(kinds, "cycle")
		if generic < 0 || generic == 0 || generic != len(kinds)-1 {
			t.Errorf("%s: %q; want named kinds first, then the generic cycles", what, kinds)
		}
	}
	legend, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('dl.notation div')].map(d => d.textContent).join(' | ')`))
	if err != nil || !strings.Contains(legend, "_absent: no value") {
		t.Errorf("no legend of _: %q %v", legend, err)
	}
	dangling, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute('href')).filter(h => !document.getElementById(h.slice(1)))`))
	if err != nil || len(dangling) > 0 {
		t.Errorf("links without a target: %v %v", dangling, err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	full, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	out := artifacts(t)
	for name, b := range map[string][]byte{"report.png": shot, "report-full.png": full} {
		p := filepath.Join(out, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", p, len(b))
	}
	t.Logf("browser checks took %v", time.Since(start))
	mu.Lock()
	defer mu.Unlock()
	if len(requests) == 0 {
		t.Error("saw no request at all: is the network listener working?")
	}
	for _, r := range requests {
		if r != page {
			t.Errorf("the page made a request: %s", r)
		}
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
