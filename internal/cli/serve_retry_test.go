package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// skewBatch is `isoscope gen --txns 200 --timestamps --ts-fault skew
// --ts-faults 3 --seed 7`, and the same with transaction 1's first write
// changed: a different transaction under a used id.
func skewBatch(t *testing.T) (whole, conflicting []byte) {
	t.Helper()
	var out, errs bytes.Buffer
	if code := Main(context.Background(), strings.Fields("gen --txns 200 --timestamps --ts-fault skew --ts-faults 3 --seed 7"), nil, &out, &errs); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errs.String())
	}
	whole = out.Bytes()
	lines := bytes.SplitN(whole, []byte("\n"), 3)
	changed := bytes.Replace(lines[1], []byte(`["w",26,1]`), []byte(`["w",26,100001]`), 1)
	if bytes.Equal(changed, lines[1]) {
		t.Fatalf("transaction 1 is not what the test expects: %s", lines[1])
	}
	conflicting = bytes.Join([][]byte{lines[0], changed, lines[2]}, []byte("\n"))
	return whole, conflicting
}

// servedProc is `isoscope serve` running in the test.
type servedProc struct {
	base   string
	stdout *lockedWriter
	stderr *announcer
	stop   func() int
}

// runServe runs `isoscope serve` on a loopback port with args until
// stop (or the test's end).
func runServe(t *testing.T, args ...string) *servedProc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &servedProc{stdout: &lockedWriter{}, stderr: &announcer{addr: make(chan string, 1)}}
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--memory-mb", "0"}, args...), nil, p.stdout, p.stderr)
	}()
	exit := -1
	p.stop = func() int {
		if exit < 0 {
			cancel()
			exit = <-code
		}
		return exit
	}
	t.Cleanup(func() { p.stop() })
	select {
	case addr := <-p.stderr.addr:
		p.base = "http://" + addr
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start: %s", p.stderr.String())
	}
	return p
}

// post posts a batch and returns the status and the answer.
func (p *servedProc) post(t *testing.T, b []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(p.base+"/v1/transactions", "application/x-ndjson", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// settled waits until the service checked n transactions and no verdict
// is pending, and returns its state.
func (p *servedProc) settled(t *testing.T, n uint64) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(p.base + "/v1/state")
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st["checked"] == float64(n) && st["pending_verdicts"] == float64(0) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeRetry: the skewed history posted to serve twice gives what one
// post gives (10 violations), the second post 202 with 200 duplicates,
// and the summary counts them and warns of nothing; a different
// transaction under a used id gets 409, and then the findings suppressed
// are a warning in the JSON log beside the summary, and in /v1/state.
func TestServeRetry(t *testing.T) {
	whole, conflicting := skewBatch(t)
	p := runServe(t, "--ext-timeout", "300ms")
	for i, want := range []string{`{"accepted":200,"duplicates":0}`, `{"accepted":200,"duplicates":200}`} {
		if code, msg := p.post(t, whole); code != http.StatusAccepted || strings.TrimSpace(msg) != want {
			t.Fatalf("post %d: %d %s, want 202 %s", i+1, code, msg, want)
		}
	}
	st := p.settled(t, 200)
	if code := p.stop(); code != ExitHolds {
		t.Fatalf("serve: exit %d: %s", code, p.stderr.String())
	}
	if n := strings.Count(p.stdout.String(), "\n"); n != 10 || st["violations"] != float64(10) || st["suppressed"] != float64(0) || st["duplicates"] != float64(200) || st["warnings"] != nil {
		t.Fatalf("posted twice: %d lines, state %v", n, st)
	}
	if e := p.stderr.String(); !strings.Contains(e, "10 violations") || !strings.Contains(e, "0 findings suppressed; 200 transactions received again") || strings.Contains(e, "WARNING") {
		t.Fatalf("summary: %s", e)
	}

	p = runServe(t, "--ext-timeout", "300ms", "--log-format", "json")
	if code, msg := p.post(t, whole); code != http.StatusAccepted {
		t.Fatalf("post: %d %s", code, msg)
	}
	if code, msg := p.post(t, conflicting); code != http.StatusConflict || !strings.Contains(msg, "duplicate id 1") {
		t.Fatalf("a different transaction 1: %d %s", code, msg)
	}
	st = p.settled(t, 200)
	if code := p.stop(); code != ExitHolds {
		t.Fatalf("serve: exit %d: %s", code, p.stderr.String())
	}
	suppressed, _ := st["suppressed"].(float64)
	warnings, _ := st["warnings"].([]any)
	if suppressed == 0 || len(warnings) != 1 || !strings.Contains(warnings[0].(string), "findings suppressed") {
		t.Fatalf("state %v", st)
	}
	if n := strings.Count(p.stdout.String(), "\n"); float64(n)+suppressed != 10 {
		t.Errorf("%d violations written and %v suppressed, of 10", n, suppressed)
	}
	var summary, warning map[string]any
	sc := bufio.NewScanner(strings.NewReader(p.stderr.String()))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			t.Fatalf("a log line that is not JSON: %s", sc.Text())
		}
		msg, _ := rec["msg"].(string)
		switch {
		case strings.HasPrefix(msg, "stopped:"):
			summary = rec
		case strings.HasPrefix(msg, "WARNING: "):
			warning = rec
			if summary == nil {
				t.Errorf("the warning comes before the summary")
			}
		}
	}
	if summary == nil || warning == nil || warning["level"] != "WARN" || warning["suppressed"] != suppressed ||
		!strings.Contains(warning["msg"].(string), "the default keyspace") || warning["msg"] != "WARNING: "+warnings[0].(string) {
		t.Fatalf("summary %v, warning %v", summary, warning)
	}
}

// TestServeLivePageWarnsOfSuppression opens the live page of a service
// that suppressed findings: the banner carries the warning, in the
// warning colour, and no tile counts them as a neutral number.
func TestServeLivePageWarnsOfSuppression(t *testing.T) {
	exe := chromium(t)
	whole, conflicting := skewBatch(t)
	p := runServe(t, "--ext-timeout", "300ms")
	p.post(t, whole)
	if code, msg := p.post(t, conflicting); code != http.StatusConflict {
		t.Fatalf("a different transaction 1: %d %s", code, msg)
	}
	p.settled(t, 200)
	bctx, cancel := headless(t, exe, 1000)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.Navigate(p.base+"/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		shown, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`!document.getElementById("warning").hidden`))
		if err != nil {
			t.Fatal(err)
		}
		if shown {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the banner shows no warning")
		}
	}
	type seen struct {
		Text, Color, Warn, Banner, Page string
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[seen](`(() => {
		const w = document.getElementById("warning");
		const probe = document.createElement("span");
		probe.style.color = "var(--warn)";
		document.body.appendChild(probe);
		return {text: w.textContent, color: getComputedStyle(w).color, warn: getComputedStyle(probe).color,
			banner: document.getElementById("banner").className, page: document.body.innerText};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Text, "findings suppressed") || got.Color != got.Warn || !strings.Contains(got.Banner, "bad") {
		t.Errorf("banner %q, warning %q in %s (the warning colour is %s)", got.Banner, got.Text, got.Color, got.Warn)
	}
	if strings.Contains(strings.ToLower(got.Page), "suppressed findings") {
		t.Errorf("a tile still counts the suppressed findings: %s", got.Page)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifacts(t), "serve-live-warning.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
