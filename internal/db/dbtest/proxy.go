package dbtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a database, so that a test can make
// the database go away in the middle of a run: Cut closes every
// connection and refuses new ones.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
}

// NewProxy listens on a free loopback port and forwards to the server of
// the database address addr (a URL: postgres://… or mysql://user@host:port/db),
// and returns the proxy and addr rewritten to go through it. The proxy is
// cut when the test ends.
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
	p := &Proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.Cut)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			return
		}
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go pipe(c, s)
		go pipe(s, c)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// Cut closes every forwarded connection and stops accepting new ones:
// to the client, the database has gone away.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
