package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
)

// HTTP: the routes, the bearer token, the probes, the handlers (a
// batch's admission, decided before its body is read), and the hooks that
// count the connections whose request header came too slowly. The limits
// on clients (connections, memory, slow bodies) are in limits.go, the
// state and the live page in state.go.

// The reasons of refusals that are not a batch's (wire has those).
const (
	reasonUnauthorized = "unauthorized"
	reasonTooManyConns = "too_many_connections"
	reasonSlowHeader   = "slow_header"
)

// CheckBind refuses to listen on addr beyond loopback without a token.
func CheckBind(addr net.Addr, token string) error {
	if token != "" {
		return nil
	}
	tcp, ok := addr.(*net.TCPAddr)
	if ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listening on %s, beyond loopback, needs a bearer token (--token or ISOSCOPE_TOKEN)", addr)
}

// Handler returns the service's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/transactions", s.auth(s.ingest))
	mux.HandleFunc("GET /v1/violations", s.auth(s.listViolations))
	mux.HandleFunc("GET /v1/violations/{seq}/picture.svg", s.auth(s.servePicture))
	mux.HandleFunc("GET /v1/state", s.auth(s.serveState))
	mux.HandleFunc("GET /v1/faults", s.auth(s.listFaults))
	mux.HandleFunc("GET /{$}", s.servePage) // the page holds no data: no token
	mux.Handle("GET /metrics", s.auth(promhttp.HandlerFor(s.prom.reg, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", s.ready)
	return mux
}

// auth requires the bearer token, when there is one.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.Token == "" {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !bearer(r.Header.Get("Authorization"), s.cfg.Token) {
			s.count(reasonUnauthorized, "http", "remote", r.RemoteAddr, "path", r.URL.Path)
			w.Header().Set("WWW-Authenticate", `Bearer realm="isoscope"`)
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// bearer says whether an Authorization header carries token in the Bearer
// scheme, whose name is matched without regard to case (RFC 7235).
func bearer(header, token string) bool {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(cred)), []byte(token)) == 1
}

// count counts a refusal that is not a batch's (a request without the
// token, a connection beyond the limit, a header too slow) and logs it, at
// most once a second for each reason.
func (s *Server) count(reason, source string, attrs ...any) {
	s.prom.rejected.WithLabelValues(reason, source).Inc()
	s.mu.Lock()
	s.rejected[reason]++
	s.mu.Unlock()
	if s.quiet.allow(reason) {
		s.log.Warn("request refused", append([]any{"source", source, "reason", reason}, attrs...)...)
	}
}

// ready is 200 while the checker runs and its queue has room.
func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	s.intake.RLock()
	closed := s.closed
	s.intake.RUnlock()
	s.mu.Lock()
	ok := s.running && !closed
	s.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "not checking", http.StatusServiceUnavailable)
	case s.slots.taken() >= int64(s.cfg.Queue):
		http.Error(w, "queue full", http.StatusServiceUnavailable)
	default:
		fmt.Fprintln(w, "ready")
	}
}

// ingest parses a batch, queues it, and answers with the checker's
// verdict: 202 once the checker took it, a refusal otherwise.
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	id := wire.Identity{Stream: r.Header.Get(wire.StreamHeader), Keyspace: r.Header.Get(wire.KeyspaceHeader)}
	q := r.URL.Query()
	if id.Stream == "" {
		id.Stream = q.Get("stream")
	}
	if id.Keyspace == "" {
		id.Keyspace = q.Get("keyspace")
	}
	n, dups, err := s.admit(w, r, id)
	if err != nil {
		var ref *wire.Refusal
		if !errors.As(err, &ref) {
			ref = &wire.Refusal{Reason: wire.ReasonShuttingDown, Status: http.StatusServiceUnavailable, Err: err}
		}
		switch ref.Reason {
		case wire.ReasonQueueFull, wire.ReasonMemoryFull:
			w.Header().Set("Retry-After", "1")
		}
		if ref.Status == http.StatusRequestTimeout || ref.Status == http.StatusRequestEntityTooLarge {
			w.Header().Set("Connection", "close") // the rest of the body is not read
		}
		http.Error(w, ref.Error(), ref.Status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "{\"accepted\":%d,\"duplicates\":%d}\n", n, dups)
}

// admit decides on a posted batch before its body is read — too large
// (413), no place in the queue or no memory to parse it (429) — and then
// reads it within the body's deadlines and submits it.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, id wire.Identity) (int, int, error) {
	if err := id.Check(); err != nil {
		return 0, 0, s.refuse("http", id, &wire.Refusal{Reason: wire.ReasonBadInput, Status: http.StatusBadRequest, Err: err})
	}
	if r.ContentLength > s.cfg.MaxBatch {
		return 0, 0, s.refuse("http", id, &wire.Refusal{Reason: wire.ReasonTooLarge, Status: http.StatusRequestEntityTooLarge,
			Err: fmt.Errorf("batch of %d bytes, over %d", r.ContentLength, s.cfg.MaxBatch)})
	}
	if !s.slots.try(1) {
		return 0, 0, s.refuse("http", id, &wire.Refusal{Reason: wire.ReasonQueueFull, Status: http.StatusTooManyRequests, Err: errors.New("the checker's queue is full")})
	}
	size := r.ContentLength
	if size < 0 {
		size = s.cfg.MaxBatch
	}
	weight := ParseExpansion * size
	if !s.memory.try(weight) {
		s.slots.release(1)
		return 0, 0, s.refuse("http", id, &wire.Refusal{Reason: wire.ReasonMemoryFull, Status: http.StatusTooManyRequests,
			Err: fmt.Errorf("no memory left to parse a batch of %d bytes now", size)})
	}
	hold := &hold{s: s, weight: weight}
	body := &deadlineBody{body: http.MaxBytesReader(w, r.Body, s.cfg.MaxBatch), rc: http.NewResponseController(w), idle: s.cfg.BodyTimeout}
	if s.cfg.ReadTimeout > 0 {
		body.end = time.Now().Add(s.cfg.ReadTimeout)
	}
	parse := func() (*history.History, []history.Txn, error) {
		return wire.ParseBatchFor(body, "batch", s.inputCheck)
	}
	return s.submit(r.Context(), id, "http", parse, hold, false, func() bool { return body.timedOut })
}

// AfterParam reads a /v1/violations request's ?after=SEQ (0 when absent);
// when it is not a sequence number it answers 400 and returns false.
func AfterParam(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	a := r.URL.Query().Get("after")
	if a == "" {
		return 0, true
	}
	after, err := strconv.ParseUint(a, 10, 64)
	if err != nil {
		http.Error(w, "after: not a sequence number: "+a, http.StatusBadRequest)
		return 0, false
	}
	return after, true
}

// listViolations serves the kept violations with seq above ?after, as
// JSON lines.
func (s *Server) listViolations(w http.ResponseWriter, r *http.Request) {
	after, ok := AfterParam(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	var out []byte
	for _, k := range s.kept {
		if k.seq > after {
			out = append(out, k.line...)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Write(out)
}

// connInfo is what connState knows of a connection: since when it has
// waited for a request (opened, or idle after one), whether bytes of one
// came (reading), and the requests that reached the handler before and
// since.
type connInfo struct {
	since          time.Time
	fresh, reading bool
	atStart, began atomic.Int64
}

// connKey is the request context's key for its connection's connInfo.
type connKey struct{}

// connState returns the http.Server's ConnContext and ConnState hooks and
// a wrapper for its handler, which count the connections closed without a
// whole request header within HeaderTimeout (slow_header): new ones that
// sent nothing, and ones whose request never reached the handler. An idle
// kept-alive connection closed is not counted.
func (s *Server) connState(h http.Handler) (func(context.Context, net.Conn) context.Context, func(net.Conn, http.ConnState), http.Handler) {
	var mu sync.Mutex
	conns := map[net.Conn]*connInfo{}
	connCtx := func(ctx context.Context, c net.Conn) context.Context {
		ci := &connInfo{since: time.Now(), fresh: true}
		mu.Lock()
		conns[c] = ci
		mu.Unlock()
		return context.WithValue(ctx, connKey{}, ci)
	}
	state := func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		ci := conns[c]
		if ci == nil {
			return
		}
		switch st {
		case http.StateActive:
			ci.reading = true
		case http.StateIdle:
			ci.since, ci.fresh, ci.reading = time.Now(), false, false
			ci.atStart.Store(ci.began.Load())
		case http.StateHijacked:
			delete(conns, c)
		case http.StateClosed:
			delete(conns, c)
			if (ci.fresh || ci.reading) && ci.began.Load() == ci.atStart.Load() && time.Since(ci.since) >= s.cfg.HeaderTimeout {
				s.count(reasonSlowHeader, "http", "remote", c.RemoteAddr().String())
			}
		}
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ci, ok := r.Context().Value(connKey{}).(*connInfo); ok {
			ci.began.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	return connCtx, state, handler
}
