package cluster

import (
	"bytes"
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
	// silent names the nodes whose connections are held open and pass
	// nothing ("*": anyone's), see silence.
	silent map[string]bool
	closed bool
	wg     sync.WaitGroup
	// accepted counts the connections it forwarded.
	accepted atomic.Int64
	// rewrite (set with setRewrite, read under mu) replaces byte strings
	// in the traffic of the connections forwarded after it was set, both
	// ways (see copyRewriting).
	rewrite []replacement
}

// replacement is a byte string and what replaces it, of the same length.
type replacement struct{ from, to []byte }

// link is one forwarded connection: the client's side and the target's.
type link struct {
	from       string
	down, up   net.Conn
	closedOnce sync.Once
	// silent says the link passes nothing either way (its bytes are
	// dropped), see silence.
	silent atomic.Bool
}

// silentWriter writes to w, or, while its link is silent, drops what it
// is given.
type silentWriter struct {
	w io.Writer
	l *link
}

func (s silentWriter) Write(b []byte) (int, error) {
	if s.l.silent.Load() {
		return len(b), nil
	}
	return s.w.Write(b)
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
	ln, err := listenFree(false)
	if err != nil {
		return nil, err
	}
	return serveProxy(name, ln, target, whoIs), nil
}

// newMirrorProxy listens on a free port of 127.0.0.1 and forwards to the
// same port of host (another loopback address, where a server whose
// peers must dial the port it listens on is put behind the proxy).
func newMirrorProxy(name, host string, whoIs func(int) string) (*proxy, error) {
	ln, err := listenFree(false)
	if err != nil {
		return nil, err
	}
	target := net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	return serveProxy(name, ln, target, whoIs), nil
}

// serveProxy forwards ln's connections to target.
func serveProxy(name string, ln net.Listener, target string, whoIs func(int) string) *proxy {
	p := &proxy{name: name, ln: ln, target: target, whoIs: whoIs, links: map[*link]struct{}{}, blocked: map[string]bool{}, silent: map[string]bool{}}
	p.wg.Go(p.serve)
	return p
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
		if p.silent[from] || p.silent["*"] {
			// Accepted, and then never answered.
			l.silent.Store(true)
			p.mu.Unlock()
			p.wg.Go(func() { p.hold(l) })
			continue
		}
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
	rewrite := p.rewrite
	p.mu.Unlock()
	if gone {
		_ = up.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = copyRewriting(silentWriter{up, l}, l.down, rewrite); l.close() })
	_ = copyRewriting(silentWriter{l.down, l}, up, rewrite)
	l.close()
	wg.Wait()
}

// setRewrite makes the connections forwarded from now on replace each
// rep.from with rep.to, both ways.
func (p *proxy) setRewrite(rep []replacement) {
	p.mu.Lock()
	p.rewrite = rep
	p.mu.Unlock()
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

// hold reads and drops what a connection accepted while silent sends,
// until it is closed.
func (p *proxy) hold(l *link) {
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	_, _ = io.Copy(io.Discard, l.down)
}

// silence makes the named nodes' connections ("*": anyone's) pass
// nothing, either way, without closing them, and holds their new ones
// open unanswered: a partition that drops packets, which the servers
// notice only by their own timeouts, rather than one that resets
// connections (block).
func (p *proxy) silence(nodes ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range nodes {
		p.silent[n] = true
	}
	for l := range p.links {
		if p.silent[l.from] || p.silent["*"] {
			l.silent.Store(true)
		}
	}
}

// unblock lets every node connect again. The connections that were
// silenced are closed: they lost bytes.
func (p *proxy) unblock() {
	p.mu.Lock()
	clear(p.blocked)
	clear(p.silent)
	var drop []*link
	for l := range p.links {
		if l.silent.Load() {
			drop = append(drop, l)
		}
	}
	p.mu.Unlock()
	for _, l := range drop {
		l.close()
	}
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

// copyRewriting copies src to dst until either fails, replacing each
// rep.from with rep.to (same lengths, so that the framing of a binary
// protocol is kept). A suffix of what was read that could be the start of
// a from string is held back until the next read completes it or shows
// it is not one; anything else is written at once.
func copyRewriting(dst io.Writer, src io.Reader, rep []replacement) error {
	if len(rep) == 0 {
		_, err := io.Copy(dst, src)
		return err
	}
	buf := make([]byte, 0, 64<<10)
	chunk := make([]byte, 32<<10)
	for {
		n, err := src.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for _, r := range rep {
			for i := 0; ; {
				j := bytes.Index(buf[i:], r.from)
				if j < 0 {
					break
				}
				copy(buf[i+j:], r.to)
				i += j + len(r.to)
			}
		}
		keep := 0
		if err == nil {
			keep = heldBack(buf, rep)
		}
		if out := buf[:len(buf)-keep]; len(out) > 0 {
			if _, werr := dst.Write(out); werr != nil {
				return werr
			}
		}
		buf = append(buf[:0], buf[len(buf)-keep:]...)
		if err != nil {
			return err
		}
	}
}

// heldBack is the length of the longest suffix of b that is a proper
// prefix of some replacement's from string.
func heldBack(b []byte, rep []replacement) int {
	best := 0
	for _, r := range rep {
		for k := min(len(r.from)-1, len(b)); k > best; k-- {
			if bytes.HasSuffix(b, r.from[:k]) {
				best = k
				break
			}
		}
	}
	return best
}
