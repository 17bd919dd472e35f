package cluster

import (
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// proxy forwards TCP connections from a port of its own on 127.0.0.1 to a
// target address. It knows, for each connection, which node opened it
// (by the client socket's owner, see sockOwner), so that it can refuse
// and drop the connections of chosen nodes: one side of a partition. It
// can also drop every connection at once (a client cut).
type proxy struct {
	name   string
	ln     net.Listener
	target string
	// whoIs names the node that opened a connection from a port of
	// 127.0.0.1 ("" when no node did: a client).
	whoIs func(port int) string

	mu      sync.Mutex
	links   map[*link]struct{}
	blocked map[string]bool
	closed  bool
	wg      sync.WaitGroup
	// accepted counts the connections it forwarded.
	accepted atomic.Int64
}

// link is one forwarded connection: the client's side and the target's.
type link struct {
	from       string
	down, up   net.Conn
	closedOnce sync.Once
}

func (l *link) close() {
	l.closedOnce.Do(func() {
		_ = l.down.Close()
		if l.up != nil {
			_ = l.up.Close()
		}
	})
}

// newProxy listens on a free port of 127.0.0.1 and forwards to target.
func newProxy(name, target string, whoIs func(int) string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{name: name, ln: ln, target: target, whoIs: whoIs, links: map[*link]struct{}{}, blocked: map[string]bool{}}
	p.wg.Go(p.serve)
	return p, nil
}

// port is the proxy's port on 127.0.0.1.
func (p *proxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// addr is the proxy's address.
func (p *proxy) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port()) }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		from := ""
		if p.whoIs != nil {
			from = p.whoIs(c.RemoteAddr().(*net.TCPAddr).Port)
		}
		l := &link{from: from, down: c}
		p.mu.Lock()
		if p.closed || p.blocked[from] || p.blocked["*"] {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.accepted.Add(1)
		p.wg.Go(func() { p.forward(l) })
	}
}

// forward dials the target and copies both ways until either side ends.
func (p *proxy) forward(l *link) {
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	l.up = up
	gone := p.closed || p.blocked[l.from] || p.blocked["*"]
	p.mu.Unlock()
	if gone {
		_ = up.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(up, l.down); l.close() })
	_, _ = io.Copy(l.down, up)
	l.close()
	wg.Wait()
}

// block refuses connections opened by the named nodes ("*": by anyone)
// and drops those open now.
func (p *proxy) block(nodes ...string) {
	p.mu.Lock()
	var drop []*link
	for _, n := range nodes {
		p.blocked[n] = true
	}
	for l := range p.links {
		if p.blocked[l.from] || p.blocked["*"] {
			drop = append(drop, l)
		}
	}
	p.mu.Unlock()
	for _, l := range drop {
		l.close()
	}
}

// unblock lets every node connect again.
func (p *proxy) unblock() {
	p.mu.Lock()
	clear(p.blocked)
	p.mu.Unlock()
}

// cut drops every connection open now; new ones are accepted.
func (p *proxy) cut() int {
	p.mu.Lock()
	drop := make([]*link, 0, len(p.links))
	for l := range p.links {
		drop = append(drop, l)
	}
	p.mu.Unlock()
	for _, l := range drop {
		l.close()
	}
	return len(drop)
}

// close stops listening, drops every connection and waits for the
// proxy's goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.cut()
	p.wg.Wait()
}
