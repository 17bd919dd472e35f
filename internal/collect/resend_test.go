package collect_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/isoscope/isoscope/internal/collect"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/wire"
)

// TestHTTPResendsLostAnswer: the service takes a batch but its answer is
// lost on the way (the connection closed, as a proxy or a timeout does);
// the publisher sends the batch again, the service takes it as a retry
// (its transactions duplicates, nothing refused), and the lost update in
// it is reported once.
func TestHTTPResendsLostAnswer(t *testing.T) {
	var out bytes.Buffer
	var outMu sync.Mutex
	s, err := serve.New(serve.Config{Out: writerFunc(func(p []byte) (int, error) {
		outMu.Lock()
		defer outMu.Unlock()
		return out.Write(p)
	})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, ln)
	}()
	defer func() { cancel(); <-done }()
	service := "http://" + ln.Addr().String()

	// The proxy passes every request on and drops the first answer.
	var calls atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest(r.Method, service+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		if calls.Add(1) == 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()

	batch := `{"id":1,"session":0,"start_ts":10,"commit_ts":20,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"start_ts":15,"commit_ts":25,"ops":[["r","x",null],["w","x",2]]}
`
	p := &collect.HTTP{URL: proxy.URL, ID: wire.Identity{Stream: "run-1"}}
	if err := p.Publish(context.Background(), []byte(batch), 2); err != nil {
		t.Fatalf("the batch whose answer was lost: %v", err)
	}
	s.Sync()
	st := s.Progress()
	if calls.Load() != 2 || st.Checked != 2 || st.Duplicates != 2 || len(st.Refused) != 0 || st.Violations != 1 {
		t.Fatalf("%d requests; state %+v", calls.Load(), st)
	}
	outMu.Lock()
	defer outMu.Unlock()
	if n := strings.Count(out.String(), `"kind":"lost-update"`); n != 1 {
		t.Fatalf("%d lost updates reported:\n%s", n, out.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
