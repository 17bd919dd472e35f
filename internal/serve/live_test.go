package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/serve"
)

// external matches what would make a page fetch from elsewhere or load
// code it does not hold.
var external = regexp.MustCompile(`(?i)<link|<img|<iframe|<object|<embed|\bsrc=|url\(|@import|https?://|<script[^>]*\bsrc`)

// request does a GET with the bearer token (none when empty) and returns
// the status, a header and the body.
func request(t *testing.T, url, token string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestLivePage: GET / is the live page, served without the token (it
// holds no data), self-contained under a policy that lets it reach the
// service only; /v1/state and the violations' pictures need the token.
// Once a lost update is checked, the state counts it and the
// transactions, and its picture (Config.Picture) is served.
func TestLivePage(t *testing.T) {
	drawn := 0
	s, err := serve.New(serve.Config{Token: "secret", Explain: report.Explain,
		Picture: func(h *history.History, a *anomaly.Anomaly) []byte {
			drawn++
			return []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>` + a.Kind.String() + `: ` + h.TxnName(a.Txns[0]) + `</text></svg>`)
		}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, ln)
	}()
	defer func() { cancel(); <-done }()

	code, hdr, page := request(t, url+"/", "")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(page, "<title>isoscope serve</title>") {
		t.Fatalf("GET /: %d %v %.200s", code, hdr, page)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("policy %q", csp)
	}
	if m := external.FindString(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")); m != "" {
		t.Errorf("the page refers outside itself: %q", m)
	}
	for _, want := range []string{`fetch(path`, `"/v1/state"`, `"/v1/violations?after="`, "textContent"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if code, _, _ := request(t, url+"/nothing-here", ""); code != http.StatusNotFound {
		t.Errorf("GET /nothing-here: %d", code)
	}
	if code, _, _ := request(t, url+"/v1/state", ""); code != http.StatusUnauthorized {
		t.Errorf("state without the token: %d", code)
	}

	batch := `{"id":1,"session":0,"start_ts":10,"commit_ts":20,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"start_ts":15,"commit_ts":25,"ops":[["r","x",null],["w","x",2]]}
`
	req, _ := http.NewRequest("POST", url+"/v1/transactions", strings.NewReader(batch))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %s", resp.Status)
	}
	s.Sync()
	code, hdr, body := request(t, url+"/v1/state", "secret")
	var st serve.State
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("state: %d %v %s", code, err, body)
	}
	if st.Checked != 2 || st.Violations != 1 || st.LastSeq != 1 || st.Level != "snapshot-isolation" || st.QueueMax != 64 || st.HeapBytes == 0 ||
		st.Started.IsZero() || st.Now.Before(st.Started) || st.Refused == nil {
		t.Errorf("state %+v", st)
	}
	code, hdr, pic := request(t, url+"/v1/violations/1/picture.svg", "secret")
	if code != http.StatusOK || hdr.Get("Content-Type") != "image/svg+xml" || !strings.Contains(pic, "lost-update: ") || drawn != 1 {
		t.Errorf("picture: %d %v %q (drawn %d)", code, hdr, pic, drawn)
	}
	if code, _, _ := request(t, url+"/v1/violations/2/picture.svg", "secret"); code != http.StatusNotFound {
		t.Errorf("the picture of a violation that is not: %d", code)
	}
	if code, _, _ := request(t, url+"/v1/violations/1/picture.svg", ""); code != http.StatusUnauthorized {
		t.Errorf("picture without the token: %d", code)
	}
}

// TestLiveRate: the state's rate counts the transactions checked over the
// last seconds.
func TestLiveRate(t *testing.T) {
	s, err := serve.New(serve.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, ln)
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(150 * time.Millisecond) // a tick samples the count before the batch
	var b strings.Builder
	for i := range 100 {
		b.WriteString(`{"id":` + strconv.Itoa(i+1) + `,"session":0,"start_ts":` + strconv.Itoa(2*i+1) + `,"commit_ts":` + strconv.Itoa(2*i+2) + `,"ops":[["w","k",` + strconv.Itoa(i) + `]]}` + "\n")
	}
	if code, msg := post(t, url, strings.NewReader(b.String())); code != http.StatusAccepted {
		t.Fatalf("post: %d %s", code, msg)
	}
	s.Sync()
	time.Sleep(150 * time.Millisecond)
	var st serve.State
	if err := json.Unmarshal([]byte(get(t, url+"/v1/state")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Checked != 100 || st.Rate <= 0 || st.RateWindow <= 0 || st.RateWindow > 10.5 {
		t.Errorf("state %+v", st)
	}
}
