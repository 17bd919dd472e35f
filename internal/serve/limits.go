package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ParseExpansion is how many bytes of memory a batch takes per byte of its
// body while it is parsed and waits for the checker (its transactions
// parsed, with room for the slices to grow): a 20 MiB body of key-value
// transactions holds about 54 MiB once parsed.
const ParseExpansion = 4

// The defaults of the limits on clients.
const (
	// DefaultMaxBatch bounds a request body.
	DefaultMaxBatch = 64 << 20
	// DefaultReadTimeout bounds reading a whole request, body included.
	DefaultReadTimeout = 2 * time.Minute
	// DefaultBodyTimeout is how long a body may send nothing.
	DefaultBodyTimeout = 10 * time.Second
	// DefaultHeaderTimeout bounds reading a request's header.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout is how long a kept-alive connection may wait for
	// its next request.
	DefaultIdleTimeout = time.Minute
	// DefaultMaxConns bounds the open connections.
	DefaultMaxConns = 1000
)

// budget is a weighted semaphore: up to max units taken at once.
type budget struct {
	mu    sync.Mutex
	used  int64
	max   int64
	freed chan struct{} // closed, and replaced, when units are released
}

func newBudget(max int64) *budget { return &budget{max: max, freed: make(chan struct{})} }

// try takes n units if they are free.
func (b *budget) try(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// acquire takes n units, waiting until they are free or ctx is done.
func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives n units back.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// taken is how many units are taken.
func (b *budget) taken() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// CheckListen refuses a listen address (host:port) beyond loopback without
// a token, before anything is bound: an empty host (every interface) is
// beyond loopback, and a name counts as loopback only when every address
// it resolves to is.
func CheckListen(ctx context.Context, addr, token string) error {
	if token != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	refused := fmt.Errorf("listening on %s, beyond loopback, needs a bearer token (--token or ISOSCOPE_TOKEN)", addr)
	if host == "" {
		return refused
	}
	if ip := net.ParseIP(strings.Split(host, "%")[0]); ip != nil {
		if ip.IsLoopback() {
			return nil
		}
		return refused
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			return refused
		}
	}
	if len(ips) == 0 {
		return refused
	}
	return nil
}

// limitListener accepts up to max connections open at once; one beyond
// is answered 503 and closed at once, and counted.
type limitListener struct {
	net.Listener
	max    int64
	open   *atomic.Int64
	refuse func()
}

// overloaded is the answer to a connection beyond the limit.
const overloaded = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 25\r\n\r\ntoo many open connections"

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &limitConn{Conn: c, open: l.open}, nil
		}
		l.open.Add(-1)
		l.refuse()
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write([]byte(overloaded))
		c.Close()
	}
}

// limitConn gives its place back when closed.
type limitConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

// Close closes the connection and frees its place.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.open.Add(-1) })
	return err
}

// deadlineBody reads a request body, giving each read idle to return
// something and the whole body until end; it notes when a deadline
// passed.
type deadlineBody struct {
	body     interface{ Read([]byte) (int, error) }
	rc       *http.ResponseController
	idle     time.Duration
	end      time.Time
	timedOut bool
}

// Read reads within the deadlines.
func (d *deadlineBody) Read(p []byte) (int, error) {
	dl := time.Now().Add(d.idle)
	if !d.end.IsZero() && d.end.Before(dl) {
		dl = d.end
	}
	if err := d.rc.SetReadDeadline(dl); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	n, err := d.body.Read(p)
	var ne net.Error
	if err != nil && (errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)) {
		d.timedOut = true
	}
	return n, err
}

// throttle says whether a refusal of reason may be logged now: at most
// one a second each, the rest counted only.
type throttle struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (t *throttle) allow(reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if now.Sub(t.last[reason]) < time.Second {
		return false
	}
	if t.last == nil {
		t.last = map[string]time.Time{}
	}
	t.last[reason] = now
	return true
}
