package testservice

import (
	"errors"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a database, so that a test can make
// the database fail in the middle of a run: Stall keeps every connection
// open but forwards nothing for a while (a server that stops answering),
// CutFor closes every connection and refuses new ones for a while (a
// server that restarts), and Cut does so for good. It listens on a free
// loopback port and stops when the test ends.
type Proxy struct {
	addr   string // the listening address, kept across cuts
	target string

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns []net.Conn
	// gate is closed while data flows; a stall replaces it with an open
	// channel, closed when the stall ends.
	gate chan struct{}
	// done is closed when the proxy is cut for good.
	done   chan struct{}
	closed bool
	timers []*time.Timer
	err    error
}

// NewProxy listens on a free loopback port and forwards to the server of
// the database address addr (a URL: postgres://… or mysql://user@host:port/db),
// and returns the proxy and addr rewritten to go through it. The proxy is
// cut for good when the test ends; an error it met (a listening address
// it could not take back after CutFor) fails the test then.
func NewProxy(t testing.TB, addr string) (*Proxy, string) {
	t.Helper()
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		t.Fatalf("cannot proxy %q: want a URL with a host", addr)
	}
	target := u.Host
	if u.Port() == "" {
		port := "5432"
		if u.Scheme == "mysql" || u.Scheme == "mariadb" {
			port = "3306"
		}
		target = net.JoinHostPort(u.Hostname(), port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := make(chan struct{})
	close(open)
	p := &Proxy{addr: ln.Addr().String(), target: target, ln: ln, gate: open, done: make(chan struct{})}
	go p.serve(ln)
	t.Cleanup(func() {
		p.Cut()
		if err := p.Err(); err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	u.Host = p.addr
	return p, u.String()
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.addr }

// Err returns the first error the proxy met, if any.
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *Proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

// forward connects c to the server and pipes both ways.
func (p *Proxy) forward(c net.Conn) {
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil || p.closed {
		p.mu.Unlock()
		_ = c.Close()
		_ = s.Close()
		return
	}
	p.conns = append(p.conns, c, s)
	p.mu.Unlock()
	go p.pipe(c, s)
	go p.pipe(s, c)
}

// pipe copies src to dst until either ends, holding every chunk — and the
// end — while the proxy is stalled.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	p.wait()
	_ = dst.Close()
	_ = src.Close()
}

// wait returns when data may flow: no stall, or the proxy is cut for good.
func (p *Proxy) wait() {
	p.mu.Lock()
	g := p.gate
	p.mu.Unlock()
	select {
	case <-g:
	case <-p.done:
	}
}

// Stall keeps every connection, and the new ones, open but forwards
// nothing for d, in either direction; then what was held goes through,
// in order. To the client the database has stopped answering; to the
// server, the client has gone quiet. It returns at once.
func (p *Proxy) Stall(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	g := make(chan struct{})
	p.gate = g
	p.timers = append(p.timers, time.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		close(g)
		if p.gate == g {
			open := make(chan struct{})
			close(open)
			p.gate = open
		}
	}))
}

// CutFor closes every forwarded connection and refuses new ones for d
// (nothing listens on the port), then listens on the same port again:
// to the client, the database has restarted. It returns at once.
func (p *Proxy) CutFor(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.cutLocked()
	p.timers = append(p.timers, time.AfterFunc(d, p.relisten))
}

// relisten takes the listening address back after a cut. Another process
// may have taken the port in the meantime: it tries for a second.
func (p *Proxy) relisten() {
	var err error
	for try := 0; try < 20; try++ {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.ln = ln
			p.mu.Unlock()
			go p.serve(ln)
			return
		}
		p.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = errors.Join(errors.New("listening again on "+p.addr+" after a cut"), err)
	}
	p.mu.Unlock()
}

// cutLocked closes the listener and every connection.
func (p *Proxy) cutLocked() {
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// Cut closes every forwarded connection and stops accepting new ones for
// good: to the client, the database has gone away.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, t := range p.timers {
		t.Stop()
	}
	close(p.done)
	p.cutLocked()
}
