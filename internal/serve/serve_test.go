package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/workload"
)

// clock is a test clock, safe across goroutines; it moves only when told.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time        { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration)   { c.ns.Add(int64(d)) }
func newClock() *clock                 { c := &clock{}; c.ns.Store(int64(time.Hour)); return c }
func (b *lockedBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// lockedBuffer is the service's output, read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// body renders transactions txns of h as a batch: the header, then one
// line per transaction.
func body(t *testing.T, h *history.History, txns []history.Txn) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	w, err := native.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range txns {
		if err := w.WriteTxn(&txns[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func post(t *testing.T, url string, b io.Reader) (int, string) {
	t.Helper()
	resp, err := http.Post(endpoint(url), "application/x-ndjson", b)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(msg)
}

// endpoint is the batches' endpoint of the service at url, which may
// carry a query.
func endpoint(url string) string {
	base, query, ok := strings.Cut(url, "?")
	if ok {
		return base + "/v1/transactions?" + query
	}
	return base + "/v1/transactions"
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

// signature is a finding's kind, transactions and key, by input ids.
func signature(kind string, txns []any, key any) string {
	return fmt.Sprintf("%s %v %v", kind, txns, key)
}

// TestEndToEndHTTP: a generated SI history with early-commit faults, sent
// over HTTP in shuffled batches (each session's transactions in order),
// yields exactly Chronos's findings once the timeout passes (and no Ext
// finding before it), on the
// violations endpoint and the output; the metrics count them; bad lines
// get 400 with the line; shutdown reports the verdict still pending.
func TestEndToEndHTTP(t *testing.T) {
	h, _, err := gen.Generate(gen.Config{Txns: 400, Sessions: 6, Keys: 20, Dist: workload.Zipfian, Mode: gen.SnapshotIsolation,
		ReadOnlyRatio: 0.2, AbortRatio: 0.05, Seed: 3, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.InjectTimestampFaults(h, gen.EarlyCommit, 4, 3); err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{Checker: "chronos"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range res.Anomalies {
		a := &res.Anomalies[i]
		var txns []any
		for _, x := range a.Txns {
			if x == history.Init {
				txns = append(txns, "init")
			} else {
				txns = append(txns, float64(h.Txns[x].ID.N))
			}
		}
		var key any
		if a.Key >= 0 {
			key = float64(h.Keys[a.Key].N)
		}
		want = append(want, signature(a.Kind.String(), txns, key))
	}
	slices.Sort(want)
	if len(want) == 0 {
		t.Fatal("the faults planted nothing")
	}

	clk := newClock()
	out := &lockedBuffer{}
	s, err := serve.New(serve.Config{Checker: aion.Config{Clock: clk.Now}, Tick: time.Hour, Out: out, Explain: report.Explain})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		sum serve.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := s.Serve(ctx, ln)
		done <- result{sum, err}
	}()

	// Shuffle: each session's transactions keep their order.
	r := rand.New(rand.NewPCG(1, 2))
	bySess := map[int32][]history.Txn{}
	for _, tx := range h.Txns {
		bySess[tx.Session] = append(bySess[tx.Session], tx)
	}
	var order []history.Txn
	for len(bySess) > 0 {
		s := int32(r.IntN(len(h.Sessions)))
		if q := bySess[s]; len(q) > 0 {
			order = append(order, q[0])
			if bySess[s] = q[1:]; len(bySess[s]) == 0 {
				delete(bySess, s)
			}
		}
	}
	for i := 0; i < len(order); i += 37 {
		if code, msg := post(t, url, body(t, h, order[i:min(i+37, len(order))])); code != http.StatusAccepted {
			t.Fatalf("batch at %d: %d %s", i, code, msg)
		}
		clk.add(10 * time.Millisecond)
	}
	s.Sync()
	if got := get(t, url+"/v1/violations"); strings.Contains(got, "stale-read") || strings.Contains(got, "read-beyond-snapshot") {
		t.Fatalf("Ext violations final before the timeout: %s", got)
	}
	clk.add(aion.DefaultTimeout)
	if code, msg := post(t, url, strings.NewReader("")); code != http.StatusAccepted { // an empty batch advances the clock
		t.Fatalf("empty batch: %d %s", code, msg)
	}
	s.Sync()
	var got []string
	sc := bufio.NewScanner(strings.NewReader(get(t, url+"/v1/violations")))
	for sc.Scan() {
		var l struct {
			Kind         string `json:"kind"`
			Transactions []any  `json:"transactions"`
			Key          any    `json:"key"`
			Explanation  string `json:"explanation"`
			Seq          uint64 `json:"seq"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if l.Explanation == "" || l.Seq == 0 {
			t.Fatalf("line without explanation or seq: %s", sc.Text())
		}
		got = append(got, signature(l.Kind, l.Transactions, l.Key))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("served violations differ from chronos:\nserved %s\nchronos %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if n := strings.Count(out.String(), "\n"); n != len(want) {
		t.Fatalf("%d output lines for %d violations:\n%s", n, len(want), out.String())
	}
	if after := get(t, fmt.Sprintf("%s/v1/violations?after=%d", url, len(want)-1)); strings.Count(after, "\n") != 1 {
		t.Fatalf("after the last but one: %q", after)
	}
	metrics := get(t, url+"/metrics")
	committed := 0
	for _, tx := range h.Txns {
		if tx.Status == history.Committed {
			committed++
		}
	}
	for _, m := range []string{fmt.Sprintf("isoscope_transactions_checked_total %d", committed), "isoscope_violations_total{kind=\"stale-read\"}", "isoscope_pending_verdicts 0", "go_memstats_heap_inuse_bytes"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("metrics lack %q", m)
		}
	}
	if got := get(t, url+"/readyz"); got != "ready\n" {
		t.Fatalf("readyz: %q", got)
	}

	// Bad input: the line and what is wrong. (In a keyspace of their
	// own: a refusal suppresses the default keyspace's thin-air reads.)
	bad := "{\"id\":9001,\"session\":0,\"start_ts\":1,\"commit_ts\":2,\"ops\":[[\"w\",1,1]]}\n{\"id\":9002,\"session\":0,\"ops\":[[\"r\",1]]}\n"
	url, badURL := url, url+"?stream=bad&keyspace=bad"
	if code, msg := post(t, badURL, strings.NewReader(bad)); code != http.StatusBadRequest || !strings.Contains(msg, "batch:2:") || !strings.Contains(msg, "ops[0]") {
		t.Fatalf("bad operation: %d %s", code, msg)
	}
	noTS := "{\"id\":9003,\"session\":0,\"ops\":[[\"r\",\"x\",1]]}\n"
	if code, msg := post(t, badURL, strings.NewReader(noTS)); code != http.StatusBadRequest || !strings.Contains(msg, "transaction 9003 (line 1) has no start_ts") {
		t.Fatalf("no timestamps: %d %s", code, msg)
	}

	// A read whose writer never comes: pending at shutdown.
	lone := "{\"id\":9004,\"session\":\"late\",\"start_ts\":999999,\"commit_ts\":1000000,\"ops\":[[\"r\",\"nowhere\",5]]}\n"
	if code, msg := post(t, url, strings.NewReader(lone)); code != http.StatusAccepted {
		t.Fatalf("lone read: %d %s", code, msg)
	}
	s.Sync()
	cancel()
	res2 := <-done
	if res2.err != nil {
		t.Fatal(res2.err)
	}
	if res2.sum.Pending != 1 || res2.sum.Violations != uint64(len(want)) || res2.sum.Checked != uint64(committed+1) {
		t.Fatalf("summary %+v", res2.sum)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "\"pending\":true") || !strings.Contains(last, "thin-air-read") {
		t.Fatalf("last line %s", last)
	}
}

// TestBackPressure: with the checker not taking batches, the first batch
// waits for its verdict, the queue fills and the next batch gets 429 with
// Retry-After, counted as refused for a full queue.
func TestBackPressure(t *testing.T) {
	s, err := serve.New(serve.Config{Queue: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	one := "{\"id\":1,\"session\":0,\"start_ts\":1,\"commit_ts\":2,\"ops\":[[\"w\",\"x\",1]]}\n"
	// The first is queued; its handler waits for the checker's verdict.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan struct{})
	go func() {
		defer close(first)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/transactions", strings.NewReader(one))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("the first batch answered %s without a checker", resp.Status)
		}
	}()
	for !strings.Contains(get(t, ts.URL+"/metrics"), "isoscope_queue_batches 1") {
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Post(ts.URL+"/v1/transactions", "application/x-ndjson", strings.NewReader(one))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel() // the first gives up waiting for the checker's verdict
	<-first
	if m := get(t, ts.URL+"/metrics"); !strings.Contains(m, `isoscope_batches_rejected_total{reason="queue_full",source="http"} 1`) ||
		!strings.Contains(m, `isoscope_transactions_rejected_total{reason="queue_full",source="http"} 0`) {
		t.Fatalf("the 429 is not counted:\n%s", m)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second: %s", resp.Status)
	}
	if resp, err := http.Get(ts.URL + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with the checker not running: %v %v", resp.Status, err)
	}
}

// TestToken: beyond loopback a token is required; with one, requests
// without it get 401, the probes do not need it.
func TestToken(t *testing.T) {
	if err := serve.CheckBind(&net.TCPAddr{IP: net.IPv4zero, Port: 80}, ""); err == nil || !strings.Contains(err.Error(), "needs a bearer token") {
		t.Fatalf("0.0.0.0 without a token: %v", err)
	}
	if err := serve.CheckBind(&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 80}, "secret"); err != nil {
		t.Fatal(err)
	}
	if err := serve.CheckBind(&net.TCPAddr{IP: net.IPv6loopback, Port: 80}, ""); err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(serve.Config{Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	if code, _ := post(t, ts.URL, strings.NewReader("")); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	// With it, the batch is judged (no checker runs here: a bad one is
	// refused before it is queued).
	req, _ := http.NewRequest("POST", ts.URL+"/v1/transactions", strings.NewReader("not json\n"))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("with the token: %s", resp.Status)
	}
	if got := get(t, ts.URL+"/healthz"); got != "ok\n" {
		t.Fatalf("healthz: %q", got)
	}
}
