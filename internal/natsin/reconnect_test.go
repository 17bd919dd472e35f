package natsin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/natsin"
	"github.com/isoscope/isoscope/internal/wire"
)

// proxy passes TCP connections on a loopback port to target until cut;
// while cut, it closes what it accepts.
type proxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.sever() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.cut.Load() {
				c.Close()
				continue
			}
			up, err := net.DialTimeout("tcp", target, 2*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

// sever closes every connection through the proxy.
func (p *proxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// syncBuffer is a log, safe across goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// waitFor waits up to 20 s for the log to hold want.
func waitFor(t *testing.T, log *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOutageLogged reproduces a NATS outage nobody was told of: when the connection to the
// NATS server is lost (a proxy between the source and the shared server
// is cut: the server itself is not touched), the source logs it, keeps
// trying, logs the connection's return, and consumes again; on shutdown
// it logs the connection closed. Before, an outage went unlogged.
func TestOutageLogged(t *testing.T) {
	js := jetStream(t)
	p := newProxy(t, strings.TrimPrefix(natsURL, "nats://"))
	name := fmt.Sprintf("ISOTESTOUT%d", time.Now().UnixNano())
	var log syncBuffer
	cfg := natsin.Config{URL: "nats://" + p.ln.Addr().String(), Stream: name, Subject: strings.ToLower(name) + ".txns", Durable: "d",
		Log: slog.New(slog.NewTextHandler(&log, nil)), ReconnectWait: 100 * time.Millisecond}
	ctx := context.Background()
	if _, err := natsin.Consumer(ctx, js, natsin.Config{URL: natsURL, Stream: cfg.Stream, Subject: cfg.Subject, Durable: cfg.Durable}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
	got := make(chan string, 10)
	sctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		errc <- natsin.Source(cfg).Run(sctx, func(id wire.Identity, name string, body []byte) (int, error) {
			got <- string(body)
			return 1, nil
		})
	}()
	publish := func(body string) {
		t.Helper()
		if _, err := js.Publish(ctx, cfg.Subject, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(want string) {
		t.Helper()
		select {
		case b := <-got:
			if b != want {
				t.Fatalf("got %q, want %q", b, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%q never came:\n%s", want, log.String())
		}
	}
	publish("before\n")
	receive("before\n")
	p.cut.Store(true)
	p.sever()
	waitFor(t, &log, "NATS connection lost")
	time.Sleep(500 * time.Millisecond) // a few attempts fail
	p.cut.Store(false)
	waitFor(t, &log, "NATS connection back")
	publish("after\n")
	receive("after\n")
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	waitFor(t, &log, "NATS connection closed")
	if n := strings.Count(log.String(), "NATS connection lost"); n != 1 {
		t.Errorf("%d losses logged for one outage:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "url=nats://"+p.ln.Addr().String()) {
		t.Errorf("the log does not name the server:\n%s", log.String())
	}
	t.Logf("log:\n%s", log.String())
}
