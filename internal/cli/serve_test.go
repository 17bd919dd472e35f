package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// announcer is standard error that hands over the address serve announces.
type announcer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
}

var listening = regexp.MustCompile(`on http://(\S+) `)

func (a *announcer) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf.Write(p)
	if m := listening.FindSubmatch(p); m != nil {
		a.addr <- string(m[1])
	}
	return len(p), nil
}

func (a *announcer) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.buf.String()
}

// TestServeCommand: serve starts on loopback, takes a batch, and on
// cancellation stops with a summary on standard error and exit 0; a
// violation found on the way is a JSON line on standard output.
func TestServeCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &announcer{addr: make(chan string, 1)}
	var stdout lockedWriter
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--memory-mb", "0"}, nil, &stdout, stderr)
	}()
	addr := <-stderr.addr
	batch := `{"id":1,"session":0,"start_ts":10,"commit_ts":20,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"start_ts":15,"commit_ts":25,"ops":[["r","x",null],["w","x",2]]}
`
	resp, err := http.Post("http://"+addr+"/v1/transactions", "application/x-ndjson", strings.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %s", resp.Status)
	}
	cancel()
	if c := <-code; c != ExitHolds {
		t.Fatalf("exit %d: %s", c, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped: 2 transactions checked") {
		t.Fatalf("stderr: %s", stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, `"kind":"lost-update"`) || !strings.Contains(out, `"transactions":[1,2]`) {
		t.Fatalf("stdout: %s", out)
	}
}

// TestServeBadUsage: a level serve does not check, an address beyond
// loopback without a token, or a largest batch the memory has no room to
// parse, is bad usage.
func TestServeBadUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--level", "rc"}, "serve checks snapshot-isolation and serializable"},
		{[]string{"serve", "--listen", "0.0.0.0:0", "--token", ""}, "needs a bearer token"},
		{[]string{"serve", "--memory-mb", "256", "--max-body-mb", "64"}, "lower --max-body-mb or raise --memory-mb"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), c.args, nil, &stdout, &stderr); code != ExitBadInput || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr.String())
		}
	}
}

// lockedWriter is a buffer safe for the server's goroutines.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestServeRefusesBeforeBinding reproduces an address bound before its refusal: an address
// beyond loopback without a token is refused before anything is bound
// (before, it was bound for a moment, and an address this machine does
// not have failed to bind instead); loopback names are bound.
func TestServeRefusesBeforeBinding(t *testing.T) {
	var bound []string
	defer func(l func(string, string) (net.Listener, error)) { listen = l }(listen)
	listen = func(network, addr string) (net.Listener, error) {
		bound = append(bound, addr)
		return nil, errors.New("not bound in this test")
	}
	for _, addr := range []string{"0.0.0.0:0", ":7878", "192.0.2.1:7878", "[::]:0"} {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), []string{"serve", "--listen", addr, "--token", "", "--memory-mb", "0"}, nil, &stdout, &stderr); code != ExitBadInput ||
			!strings.Contains(stderr.String(), "needs a bearer token") {
			t.Errorf("%s: exit %d, %s", addr, code, stderr.String())
		}
	}
	if len(bound) > 0 {
		t.Fatalf("bound %v before refusing", bound)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		var stdout, stderr bytes.Buffer
		Main(context.Background(), []string{"serve", "--listen", addr, "--token", "", "--memory-mb", "0"}, nil, &stdout, &stderr)
		if !strings.Contains(stderr.String(), "not bound in this test") {
			t.Errorf("%s: %s", addr, stderr.String())
		}
	}
	// A small --memory-mb without --max-body-mb lowers the largest batch
	// to fit, and starts.
	var stdout, stderr bytes.Buffer
	Main(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--memory-mb", "128"}, nil, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "not bound in this test") {
		t.Errorf("--memory-mb 128: %s", stderr.String())
	}
	if len(bound) != 4 {
		t.Fatalf("bound %v, want the three loopback addresses and the small service's", bound)
	}
}
