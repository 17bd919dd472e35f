package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/pipeline"
	"github.com/isoscope/isoscope/internal/testservice"
)

// liveHTTPServe is `isoscope serve` logging JSON, over HTTP (and NATS
// when more flags say).
type liveHTTPServe struct {
	url    string
	stdout *lockedWriter
	stderr *announcer
	cancel context.CancelFunc
	code   chan int
}

func startHTTPServe(t *testing.T, timeout time.Duration, more ...string) *liveHTTPServe {
	t.Helper()
	s := &liveHTTPServe{stdout: &lockedWriter{}, stderr: &announcer{addr: make(chan string, 1)}, code: make(chan int, 1)}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
	go func() {
		s.code <- Main(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--memory-mb", "0", "--ext-timeout", timeout.String(), "--log-format", "json"}, more...),
			nil, s.stdout, s.stderr)
	}()
	select {
	case addr := <-s.stderr.addr:
		s.url = "http://" + addr
	case c := <-s.code:
		t.Fatalf("serve exited %d: %s", c, s.stderr.String())
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop stops the service once, and returns its exit status.
func (s *liveHTTPServe) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	c, ok := <-s.code
	if ok {
		close(s.code)
		return c
	}
	return ExitHolds
}

// collectedRun is one `run --collector` and what came of it.
type collectedRun struct {
	file           string
	code           int
	stdout, stderr bytes.Buffer
}

// runTo runs the mt workload on Badger in memory, checked by Chronos (the
// service judges by the same timestamps), with --collector url as
// stream, history (file and published) rewritten by historyMutate and
// published lines by collectMutate, and more flags.
func runTo(t *testing.T, url, stream string, seed, txns int, historyMutate, collectMutate func([]byte) []byte, more ...string) *collectedRun {
	t.Helper()
	r := &collectedRun{file: filepath.Join(t.TempDir(), stream+".jsonl")}
	cmd := runCommandFor(&runCommand{io: IO{Stdin: strings.NewReader(""), Stdout: &r.stdout, Stderr: &r.stderr},
		hooks: pipeline.Hooks{History: historyMutate, Published: collectMutate}})
	cmd.SetArgs(append([]string{"--db", "badger::memory:", "--level", "si", "--sessions", "6", "--txns", fmt.Sprint(txns), "--keys", "20",
		"--seed", fmt.Sprint(seed), "--checker", "chronos", "-o", r.file, "--collector", url, "--collector-stream", stream}, more...))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	err := cmd.ExecuteContext(context.Background())
	var ee *exitError
	switch {
	case err == nil:
		r.code = ExitHolds
	case errors.As(err, &ee):
		r.code = ee.code
	default:
		r.code = ExitBadInput
	}
	return r
}

// garble replaces the n-th transaction line published with one that is
// not JSON: its batch is refused.
func garble(n int) func([]byte) []byte {
	seen := 0
	return func(l []byte) []byte {
		if seen++; seen == n {
			return []byte("{\"id\": this is not JSON\n")
		}
		return l
	}
}

// TestRunCollectorRefusedExits3 reproduces a run that exited 0 though the service refused its batches: a
// batch the service refuses (here a line garbled on the way) makes
// `run --collector` say so on standard error and exit 3 though its own
// check holds; a run that every batch reached exits 0. The service
// counts the refusal; two runs' ids (both from 1) do not collide.
func TestRunCollectorRefusedExits3(t *testing.T) {
	s := startHTTPServe(t, time.Second)
	good := runTo(t, s.url, "good", 3, 300, nil, nil)
	if good.code != ExitHolds || !strings.Contains(good.stderr.String(), "took all") {
		t.Fatalf("a clean run: exit %d\n%s\n%s", good.code, good.stdout.String(), good.stderr.String())
	}
	bad := runTo(t, s.url, "bad", 3, 300, nil, garble(40))
	if bad.code != ExitUnknown || !strings.Contains(bad.stderr.String(), "refused 1 of") || !strings.Contains(bad.stdout.String(), "holds") {
		t.Fatalf("a run with a refused batch: exit %d\n%s\n%s", bad.code, bad.stdout.String(), bad.stderr.String())
	}
	s.stop(t)
	if !strings.Contains(s.stderr.String(), `"refused_bad_input":1`) || !strings.Contains(s.stderr.String(), `"stream":"bad"`) {
		t.Fatalf("the service's log lacks the refusal:\n%s", s.stderr.String())
	}
}

// TestServeSoak: two concurrent runs on Badger (their transactions both
// numbered from 1) feed one service, one over HTTP, the other through
// NATS JetStream, while a third client posts retries (the same
// transactions again), conflicts (a different transaction under a used
// id) and garbage. The first run's history carries planted faults
// (in its file and in what it publishes); the second has one published
// line garbled. The service's findings for each run are exactly those of
// `check --checker chronos` on that run's history file (for the second
// run: none, its read findings suppressed); the third client gets 202
// for every retry and a refusal for every bad batch; the service counts
// the retries' transactions as duplicates and every refusal by reason;
// the runs exit 0 (all taken) and 3 (a batch refused); standard
// output holds findings only, the log JSON lines only.
func TestServeSoak(t *testing.T) {
	const txns = 1500
	began := time.Now()
	testservice.NATS(t)
	nc, err := nats.Connect(natsURL, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s: %v", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("ISOSOAK%d", time.Now().UnixNano())
	subject := strings.ToLower(name) + ".txns"
	t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
	s := startHTTPServe(t, time.Second, "--nats", natsURL, "--nats-stream", name, "--nats-subject", subject, "--nats-durable", "soak")

	startTS := regexp.MustCompile(`"start_ts":\d+`)
	readsValue := regexp.MustCompile(`\["r",\d+,\d+\]`)
	var planted int
	plant := func(line []byte) []byte {
		if planted < 4 && readsValue.Match(line) && bytes.Contains(line, []byte(`"commit_ts"`)) && bytes.Contains(line, []byte(`"session":2`)) {
			planted++
			return startTS.ReplaceAll(line, []byte(`"start_ts":1`))
		}
		return line
	}
	var wg sync.WaitGroup
	var a, b *collectedRun
	wg.Add(3)
	go func() { defer wg.Done(); a = runTo(t, s.url, "soak-a", 21, txns, plant, nil) }()
	go func() {
		defer wg.Done()
		b = runTo(t, natsURL, "soak-b", 22, txns, nil, garble(200), "--collector-subject", subject)
	}()
	var dups, retries, garbage int
	var third []string
	go func() {
		defer wg.Done()
		batch := `{"id":1,"session":0,"start_ts":1,"commit_ts":2,"ops":[["w","k",1]]}` + "\n" + `{"id":2,"session":0,"start_ts":3,"commit_ts":4,"ops":[["r","k",1]]}` + "\n"
		conflict := strings.Replace(batch, `["w","k",1]`, `["w","k",7]`, 1)
		for i := range 20 {
			url := s.url + "/v1/transactions"
			if i%2 == 1 {
				url += "?stream=third&keyspace=third"
			}
			body, want := batch, http.StatusConflict
			switch {
			case i < 2:
				want = http.StatusAccepted
			case i%3 == 0:
				body, want = "garbage\n", http.StatusBadRequest
				garbage++
			case i%3 == 1:
				want = http.StatusAccepted
				retries++
			default:
				body = conflict
				dups++
			}
			resp, err := http.Post(url, "application/x-ndjson", strings.NewReader(body))
			if err != nil {
				third = append(third, err.Error())
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				third = append(third, fmt.Sprintf("post %d: %s, want %d", i, resp.Status, want))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	wg.Wait()
	if len(third) > 0 {
		t.Errorf("the third client: %s", strings.Join(third, "; "))
	}
	if planted == 0 {
		t.Fatal("no fault planted")
	}
	// The faults are planted in the lines written (file and service), not
	// in the run's own record, which its check judges: that holds.
	if a.code != ExitHolds || !strings.Contains(a.stderr.String(), "took all") {
		t.Errorf("run a: exit %d\n%s", a.code, a.stderr.String())
	}
	if b.code != ExitUnknown || !strings.Contains(b.stderr.String(), "refused 1 of") {
		t.Errorf("run b: exit %d\n%s", b.code, b.stderr.String())
	}
	time.Sleep(1500 * time.Millisecond) // every Ext verdict final
	if c := s.stop(t); c != ExitHolds {
		t.Fatalf("serve exit %d", c)
	}

	served := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(s.stdout.String()))
	for sc.Scan() {
		var l struct {
			Kind         string `json:"kind"`
			Stream       string `json:"stream"`
			Transactions []any  `json:"transactions"`
			Key          any    `json:"key"`
			Pending      bool   `json:"pending"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Kind == "" {
			t.Fatalf("standard output holds a line that is no finding: %s", sc.Text())
		}
		if l.Pending {
			t.Errorf("a verdict still pending a second and a half after the runs: %s", sc.Text())
		}
		served[l.Stream] = append(served[l.Stream], fmt.Sprintf("%s %v %v", l.Kind, l.Transactions, l.Key))
	}
	for _, r := range []struct {
		stream string
		run    *collectedRun
	}{{"soak-a", a}, {"soak-b", b}} {
		want := chronosFindings(t, r.run.file)
		got := served[r.stream]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: the service found\n  %s\nchronos on the history file\n  %s", r.stream, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if r.stream == "soak-a" && len(want) == 0 {
			t.Errorf("the planted faults made no finding")
		}
	}
	var summary map[string]any
	for l := range strings.Lines(s.stderr.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("a log line that is not JSON: %s", l)
		}
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "stopped:") {
			summary = rec
		}
	}
	for k, want := range map[string]float64{"refused_duplicate_id": float64(dups), "refused_bad_input": float64(garbage + 1), "refused_batches": float64(dups + garbage + 1),
		"duplicates": float64(2 * retries)} {
		if summary[k] != want {
			t.Errorf("summary %s = %v, want %v: %v", k, summary[k], want, summary)
		}
	}
	t.Logf("soak: 2 runs of %d transactions, %d retried, %d conflicting and %d garbage batches, %v findings for soak-a, %v suppressed, in %s",
		txns, retries, dups, garbage, len(served["soak-a"]), summary["suppressed"], time.Since(began).Round(time.Millisecond))
}

// chronosFindings are the findings of `check --checker chronos --level si`
// on file, as the service's lines name them.
func chronosFindings(t *testing.T, file string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"check", "--checker", "chronos", "--level", "si", "--json", "--no-holds", file}, nil, &out, &errb)
	if code != ExitHolds && code != ExitViolation {
		t.Fatalf("check %s: exit %d: %s", file, code, errb.String())
	}
	var doc struct {
		Anomalies []struct {
			Kind         string `json:"kind"`
			Transactions []any  `json:"transactions"`
			Key          any    `json:"key"`
		} `json:"anomalies"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("check's JSON: %v: %s", err, out.String())
	}
	var sigs []string
	for _, a := range doc.Anomalies {
		sigs = append(sigs, fmt.Sprintf("%s %v %v", a.Kind, a.Transactions, a.Key))
	}
	slices.Sort(sigs)
	return sigs
}
