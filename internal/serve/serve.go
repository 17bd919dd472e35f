// Package serve is the long-running online checker behind `isoscope
// serve`: an HTTP service around one aion.Checker.
//
// Clients POST batches of transactions (JSON Lines of the history format,
// an optional header line first) to /v1/transactions, each in its stream
// (an Identity: the Isoscope-Stream and Isoscope-Keyspace headers or the
// stream and keyspace query parameters; none for the default stream). A
// batch takes a place in the queue and memory to be parsed before its body
// is read (429 when there is none, 413 when its Content-Length is over the
// largest batch), is parsed and checked in the handler within the body's
// timeouts (408), queued for the checker, and the handler waits for the checker's
// goroutine to validate it against what it holds — a different
// transaction under an id the stream holds, keys used both as values and
// lists — and take it: 202 means the batch is in the checker (a
// transaction sent again as it was accepted, a retry, taken once and
// counted as a duplicate: retry.go), and a refusal (400, 409, 413) names
// the line and nothing of the batch is kept. One goroutine owns the checker: it
// checks the batches in arrival order and advances the clock on a ticker,
// so that Ext verdicts become final. Each final violation is written as
// one JSON line to the output, which carries nothing else, and kept for GET
// /v1/violations; in a keyspace that lost a refused batch, findings about
// reads of other transactions' writes are suppressed (counted, not
// reported, and said as a warning in the state). Refusals are counted by
// reason and logged. /metrics serves
// Prometheus metrics, /healthz and /readyz the probes. The service listens
// on loopback unless told otherwise, and anywhere else only with a bearer
// token. Shutdown stops intake, checks what was queued, and reports the
// Ext verdicts still pending.
package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/finding"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// CheckerConfig configures the service's online checker (Aion): the
// level, how long an Ext verdict stays pending, the memory it keeps before
// spilling, the store it spills to.
type CheckerConfig = aion.Config

// DefaultTimeout is how long an Ext verdict stays pending by default.
const DefaultTimeout = aion.DefaultTimeout

// Config sets up a Server.
type Config struct {
	// Checker configures the online checker.
	Checker CheckerConfig
	// Token, when set, is the bearer token every request but the probes
	// must carry. It is required when the service listens beyond loopback.
	Token string
	// Queue is how many batches may wait for the checker (64 when 0);
	// a batch beyond is refused with 429.
	Queue int
	// Tick is how often the checker's clock is advanced (100 ms when 0).
	Tick time.Duration
	// Stepped turns the ticks off: the checker's clock (Checker.Clock)
	// is read only when a batch arrives or a source calls Advance, so
	// that the verdicts depend on the batches and the clock alone, not on
	// when a tick came (a shard worker replaying its input must reach the
	// same verdicts).
	Stepped bool
	// Keep is how many recent violations /v1/violations serves (10,000
	// when 0).
	Keep int
	// MaxBatch bounds a request body in bytes (DefaultMaxBatch when 0): a
	// larger Content-Length is refused (413) before the body is read, and
	// a body without one is cut there.
	MaxBatch int64
	// ParseMemory bounds, in bytes, the memory of the batches being read,
	// parsed or waiting for the checker (4 largest batches' worth when 0):
	// each reserves ParseExpansion times its Content-Length (MaxBatch
	// without one) before it is read, and a body that finds no room is
	// refused with 429 unread. It must hold one largest batch.
	ParseMemory int64
	// HeaderTimeout bounds reading a request's header, ReadTimeout the
	// whole request, BodyTimeout how long a body may send nothing (a body
	// too slow is refused with 408 and its connection closed), and
	// IdleTimeout how long a kept-alive connection waits for its next
	// request; the Default… constants when 0.
	HeaderTimeout, ReadTimeout, BodyTimeout, IdleTimeout time.Duration
	// MaxConns bounds the connections open at once (DefaultMaxConns when
	// 0): one beyond is answered 503 and closed.
	MaxConns int
	// Out receives every final violation as a JSON line, and the pending
	// ones at shutdown: findings only.
	Out io.Writer
	// Explain writes the explanation of a violation's JSON line, the
	// prose about anomaly a of history h: the service renders none
	// itself, the command line gives report.Explain. Nil leaves the
	// explanations empty.
	Explain func(h *history.History, a *anomaly.Anomaly) string
	// Picture draws a violation for the live page (GET /), an SVG
	// document of anomaly a of history h, which the page shows under its
	// explanation: the service draws nothing itself, the command line
	// gives the report's picture (htmlreport.AnomalySVG). Nil leaves the
	// page without pictures.
	Picture func(h *history.History, a *anomaly.Anomaly) []byte
	// Annotate, when set, sees each violation's line before it is
	// written, with the history and the anomaly it comes from (the ids
	// and keys as their stream sent them): a shard's checker sets Rank.
	Annotate func(h *history.History, a *anomaly.Anomaly, l *Line)
	// Log receives what the service has to say besides findings: refused
	// batches, a source's failure, the checker's (nothing when nil).
	Log *slog.Logger
	// Sources are further ways in (NATS JetStream): Serve runs each until
	// shutdown, and stops them before it drains the queue. An error from
	// one is logged, and the others go on.
	Sources []Source
}

// item is what the checker's goroutine takes from the queue: a batch or a
// barrier to close once everything before it is done. The clock's ticks
// come on a channel of their own and take no place in the queue.
type item struct {
	batch   *batch
	barrier chan struct{}
}

// batch is a parsed batch waiting for the checker, which sends its
// verdict (nil or a *Refusal) on reply.
type batch struct {
	id     Identity
	source string
	h      *history.History
	txns   []history.Txn
	// digests are the transactions' digests (digester.batch); dups,
	// set by the checker's goroutine before its verdict, counts those the
	// stream held already as they are.
	digests  []uint64
	dups     int
	received time.Time
	reply    chan error
	// hold is its place in the queue and its memory.
	hold *hold
}

// Refusal is a batch the service refused: nothing of it was kept.
type Refusal struct {
	// Reason is the metrics' label: bad_input, duplicate_id, too_large,
	// queue_full, memory_full, slow_body, shutting_down or checker_failed.
	Reason string
	// Status is the HTTP status the refusal is answered with.
	Status int
	// Txns is how many transactions the batch held (0 when it did not
	// parse).
	Txns int
	// Err says why, naming the line where one is at fault.
	Err error
}

// Error says why the batch was refused.
func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap returns r.Err.
func (r *Refusal) Unwrap() error { return r.Err }

// Retry says whether the batch was refused for now only (queue full,
// shutting down): resent later, it may be taken. Other refusals lose the
// batch's transactions, and findings that may depend on them are
// suppressed.
func (r *Refusal) Retry() bool {
	switch r.Reason {
	case reasonQueueFull, reasonMemoryFull, reasonSlowBody, reasonShuttingDown:
		return true
	}
	return false
}

// The reasons of refusals.
const (
	reasonBadInput      = "bad_input"
	reasonDuplicate     = "duplicate_id"
	reasonTooLarge      = "too_large"
	reasonQueueFull     = "queue_full"
	reasonMemoryFull    = "memory_full"
	reasonSlowBody      = "slow_body"
	reasonUnauthorized  = "unauthorized"
	reasonTooManyConns  = "too_many_connections"
	reasonSlowHeader    = "slow_header"
	reasonShuttingDown  = "shutting_down"
	reasonCheckerFailed = "checker_failed"
)

// ErrShuttingDown is a Source's submit's error once the service stops
// taking batches.
var ErrShuttingDown = errors.New("the service is shutting down")

// Server is the online checking service.
type Server struct {
	cfg     Config
	checker *aion.Checker
	level   string
	work    chan item
	ticks   chan struct{}
	// slots are the queue's places, taken by a batch before it is read
	// and freed when the checker takes it from the queue; memory is
	// ParseMemory, held by a batch from before it is read until the
	// checker's verdict.
	slots  *budget
	memory *budget
	// conns counts the open connections.
	conns atomic.Int64
	quiet throttle

	log *slog.Logger
	// streams belongs to the checker's goroutine.
	streams *streams

	// intake guards closed and the sends on work: a sender holds it for
	// reading, the closer for writing.
	intake sync.RWMutex
	closed bool

	mu      sync.Mutex
	started time.Time
	// samples are the checked counts of the last rateWindow, for the
	// live page's rate.
	samples []sample
	stats   aion.Stats
	lag     time.Duration
	kept    []keptLine
	seq     uint64
	running bool
	// tainted holds the keyspaces that lost a refused batch; rejected,
	// rejectedTxns and suppressed count for the summary.
	tainted      map[string]bool
	rejected     map[string]uint64
	rejectedTxns uint64
	suppressed   uint64
	// duplicates counts the transactions received again as they were
	// accepted.
	duplicates uint64
	// digests computes the transactions' digests, by which a retry is
	// told from a conflict.
	digests *digester
	// finals and pendings count the violations reported.
	finals   uint64
	pendings int
	// faults are the last fault records the batches carried (keepFaults),
	// faultCount all of them.
	faults     []Fault
	faultCount uint64

	reg          *prometheus.Registry
	violations   *prometheus.CounterVec
	rejectedM    *prometheus.CounterVec
	rejectedTxnM *prometheus.CounterVec
	suppressedM  *prometheus.CounterVec
	duplicatesM  *prometheus.CounterVec
	batches      prometheus.Counter
	faultsM      *prometheus.CounterVec
}

// keptLine is a violation's JSON line and its sequence number, and,
// for the last picturesKept, its picture (Config.Picture).
type keptLine struct {
	seq     uint64
	line    []byte
	picture []byte
}

// Line is one violation as the service writes it.
type Line struct {
	// Seq numbers violations from 1 in the order they became final.
	Seq uint64 `json:"seq"`
	// At is when it became final; Pending marks a verdict reported at
	// shutdown that was not final yet.
	At      time.Time `json:"at"`
	Pending bool      `json:"pending,omitempty"`
	Level   string    `json:"level"`
	// Stream is the stream of the finding's first transaction (empty:
	// the default stream); Streams, when its transactions come from more
	// than one, the stream of each, in the order of Transactions.
	Stream  string   `json:"stream,omitempty"`
	Streams []string `json:"streams,omitempty"`
	finding.Finding
	// Rank is set by a checker of a key shard on a NoConflict finding
	// (Config.Annotate): the index, in the earlier committer's whole
	// transaction, of its first write of the finding's key. One checker
	// names a pair of conflicting writers once, by the shared key whose
	// first write comes last (a lost update first); the shards' findings
	// of a pair are merged by it, and the merged line leaves it out.
	Rank *int `json:"rank,omitempty"`
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Queue == 0 {
		cfg.Queue = 64
	}
	if cfg.Tick == 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.Keep == 0 {
		cfg.Keep = 10000
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.ParseMemory == 0 {
		cfg.ParseMemory = 4 * ParseExpansion * cfg.MaxBatch
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.HeaderTimeout, DefaultHeaderTimeout}, {&cfg.ReadTimeout, DefaultReadTimeout}, {&cfg.BodyTimeout, DefaultBodyTimeout}, {&cfg.IdleTimeout, DefaultIdleTimeout}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.Queue < 0 || cfg.Tick < 0 || cfg.Keep < 0 || cfg.MaxBatch < 0 || cfg.ParseMemory < 0 || cfg.MaxConns < 0 ||
		cfg.HeaderTimeout < 0 || cfg.ReadTimeout < 0 || cfg.BodyTimeout < 0 || cfg.IdleTimeout < 0 {
		return nil, errors.New("serve: negative queue, tick, keep, batch size, memory, connections or timeout")
	}
	if cfg.ParseMemory < ParseExpansion*cfg.MaxBatch {
		return nil, fmt.Errorf("serve: parsing a batch of %d MiB takes up to %d MiB, more than the %d MiB left for batches (a quarter of --memory-mb): lower --max-body-mb or raise --memory-mb",
			cfg.MaxBatch>>20, ParseExpansion*cfg.MaxBatch>>20, cfg.ParseMemory>>20)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Checker.Initial) > 0 { // keys of the default keyspace
		init := make(map[history.Value]history.Value, len(cfg.Checker.Initial))
		for k, v := range cfg.Checker.Initial {
			init[encode(0, k)] = v
		}
		cfg.Checker.Initial = init
	}
	c, err := aion.New(cfg.Checker)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, checker: c, work: make(chan item, cfg.Queue), ticks: make(chan struct{}, 1),
		slots: newBudget(int64(cfg.Queue)), memory: newBudget(cfg.ParseMemory), level: "snapshot-isolation", log: cfg.Log, streams: newStreams(),
		tainted: map[string]bool{}, rejected: map[string]uint64{}, started: time.Now(), digests: newDigester()}
	if cfg.Checker.Serializable {
		s.level = "serializable"
	}
	s.metrics()
	return s, nil
}

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
	mux.Handle("GET /metrics", s.auth(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}).ServeHTTP))
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
	s.rejectedM.WithLabelValues(reason, source).Inc()
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
	id := Identity{Stream: r.Header.Get(StreamHeader), Keyspace: r.Header.Get(KeyspaceHeader)}
	q := r.URL.Query()
	if id.Stream == "" {
		id.Stream = q.Get("stream")
	}
	if id.Keyspace == "" {
		id.Keyspace = q.Get("keyspace")
	}
	n, dups, err := s.admit(w, r, id)
	if err != nil {
		var ref *Refusal
		if !errors.As(err, &ref) {
			ref = &Refusal{Reason: reasonShuttingDown, Status: http.StatusServiceUnavailable, Err: err}
		}
		switch ref.Reason {
		case reasonQueueFull, reasonMemoryFull:
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
func (s *Server) admit(w http.ResponseWriter, r *http.Request, id Identity) (int, int, error) {
	if err := id.Check(); err != nil {
		return 0, 0, s.refuse("http", id, &Refusal{Reason: reasonBadInput, Status: http.StatusBadRequest, Err: err})
	}
	if r.ContentLength > s.cfg.MaxBatch {
		return 0, 0, s.refuse("http", id, &Refusal{Reason: reasonTooLarge, Status: http.StatusRequestEntityTooLarge,
			Err: fmt.Errorf("batch of %d bytes, over %d", r.ContentLength, s.cfg.MaxBatch)})
	}
	if !s.slots.try(1) {
		return 0, 0, s.refuse("http", id, &Refusal{Reason: reasonQueueFull, Status: http.StatusTooManyRequests, Err: errors.New("the checker's queue is full")})
	}
	size := r.ContentLength
	if size < 0 {
		size = s.cfg.MaxBatch
	}
	weight := ParseExpansion * size
	if !s.memory.try(weight) {
		s.slots.release(1)
		return 0, 0, s.refuse("http", id, &Refusal{Reason: reasonMemoryFull, Status: http.StatusTooManyRequests,
			Err: fmt.Errorf("no memory left to parse a batch of %d bytes now", size)})
	}
	hold := &hold{s: s, weight: weight}
	body := &deadlineBody{body: http.MaxBytesReader(w, r.Body, s.cfg.MaxBatch), rc: http.NewResponseController(w), idle: s.cfg.BodyTimeout}
	if s.cfg.ReadTimeout > 0 {
		body.end = time.Now().Add(s.cfg.ReadTimeout)
	}
	parse := func() (*history.History, []history.Txn, error) { return parseBatch(body, "batch", 0) }
	return s.submit(r.Context(), id, "http", parse, hold, false, func() bool { return body.timedOut })
}

// acquire takes a place in the queue and the memory to parse size bytes,
// waiting for them (a source's batch).
func (s *Server) acquire(ctx context.Context, size int64) (*hold, error) {
	if err := s.slots.acquire(ctx, 1); err != nil {
		return nil, err
	}
	weight := min(ParseExpansion*size, s.cfg.ParseMemory)
	if err := s.memory.acquire(ctx, weight); err != nil {
		s.slots.release(1)
		return nil, err
	}
	return &hold{s: s, weight: weight}, nil
}

// hold is a batch's place in the queue, freed when the checker takes the
// batch from the queue, and the memory reserved for it, freed once the
// checker has given its verdict (or the batch was refused before it was
// queued).
type hold struct {
	s            *Server
	weight       int64
	slot, memory sync.Once
}

func (h *hold) freeSlot()   { h.slot.Do(func() { h.s.slots.release(1) }) }
func (h *hold) freeMemory() { h.memory.Do(func() { h.s.memory.release(h.weight) }) }

// submit reads a batch of identity id with parse (whose errors name the
// batch and the line), which has hold, queues it, and waits for the checker's
// verdict; slow, when set, says whether reading the body timed out. It
// returns the number of transactions taken and, of those, the duplicates
// (the stream held them already as they are), or a *Refusal (counted and
// logged here, for source), or the context's error.
func (s *Server) submit(ctx context.Context, id Identity, source string, parse func() (*history.History, []history.Txn, error), hold *hold, wait bool, slow func() bool) (int, int, error) {
	queued := false
	defer func() {
		if !queued { // the checker frees what a queued batch holds
			hold.freeSlot()
			hold.freeMemory()
		}
	}()
	if err := id.Check(); err != nil {
		return 0, 0, s.refuse(source, id, &Refusal{Reason: reasonBadInput, Status: http.StatusBadRequest, Err: err})
	}
	h, txns, err := parse()
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return 0, 0, s.refuse(source, id, &Refusal{Reason: reasonTooLarge, Status: http.StatusRequestEntityTooLarge,
				Err: fmt.Errorf("batch over %d bytes", tooBig.Limit)})
		case slow != nil && slow():
			return 0, 0, s.refuse(source, id, &Refusal{Reason: reasonSlowBody, Status: http.StatusRequestTimeout,
				Err: fmt.Errorf("the body came too slowly (nothing for %s, or not all within %s)", s.cfg.BodyTimeout, s.cfg.ReadTimeout)})
		}
		return 0, 0, s.refuse(source, id, &Refusal{Reason: reasonBadInput, Status: http.StatusBadRequest, Err: err})
	}
	b := &batch{id: id, source: source, h: h, txns: txns, digests: s.digests.batch(h, txns), received: time.Now(), reply: make(chan error, 1), hold: hold}
	if err := s.enqueue(ctx, item{batch: b}); err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			ref.Txns = len(txns)
			return 0, 0, s.refuse(source, id, ref)
		}
		return 0, 0, err
	}
	queued = true
	done := ctx.Done()
	if wait {
		// A source acknowledges what the checker took: the verdict comes,
		// as the checker drains its queue before it stops.
		done = nil
	}
	select {
	case err := <-b.reply:
		if err != nil {
			return 0, 0, err
		}
		return len(txns), b.dups, nil
	case <-done:
		// The sender is gone; the checker still takes or refuses the
		// batch, and counts a refusal.
		return 0, 0, ctx.Err()
	}
}

// enqueue puts it on the checker's queue, waiting for room (until ctx is
// done).
func (s *Server) enqueue(ctx context.Context, it item) error {
	s.intake.RLock()
	defer s.intake.RUnlock()
	if s.closed {
		return &Refusal{Reason: reasonShuttingDown, Status: http.StatusServiceUnavailable, Err: ErrShuttingDown}
	}
	// A batch holds a place in the queue (s.slots), so there is room.
	select {
	case s.work <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refuse counts and logs refusal ref of a batch of id from source, and
// marks id's keyspace as having lost transactions unless the refusal is
// for now only. It returns ref.
func (s *Server) refuse(source string, id Identity, ref *Refusal) *Refusal {
	s.rejectedM.WithLabelValues(ref.Reason, source).Inc()
	s.rejectedTxnM.WithLabelValues(ref.Reason, source).Add(float64(ref.Txns))
	s.mu.Lock()
	s.rejected[ref.Reason]++
	s.rejectedTxns += uint64(ref.Txns)
	if !ref.Retry() {
		s.tainted[id.Keyspace] = true
	}
	s.mu.Unlock()
	s.log.Warn("batch refused", "source", source, "stream", id.Stream, "keyspace", id.Keyspace, "reason", ref.Reason,
		"transactions", ref.Txns, "error", ref.Err.Error())
	return ref
}

// ParseBatch reads a batch of transactions (JSON Lines of the history
// format, an optional header first) and checks each with
// aion.CheckInput. Errors name the batch (name) and the line.
func ParseBatch(r io.Reader, name string) (*history.History, []history.Txn, error) {
	return parseBatch(r, name, 0)
}

// ParseLines is ParseBatch of a body in memory, with room made for its
// lines at once.
func ParseLines(body []byte, name string) (*history.History, []history.Txn, error) {
	return parseBatch(bytes.NewReader(body), name, bytes.Count(body, []byte{'\n'})+1)
}

// parseBatch is ParseBatch with room for lines transactions made at once
// (a batch of thousands grows its slice a dozen times otherwise).
func parseBatch(r io.Reader, name string, lines int) (*history.History, []history.Txn, error) {
	rd, err := native.NewReader(r, name)
	if err != nil {
		return nil, nil, err
	}
	txns := make([]history.Txn, 0, lines)
	for {
		t, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return rd.History(), txns, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if err := aion.CheckInput(rd.History(), t); err != nil {
			return nil, nil, err
		}
		txns = append(txns, *t)
	}
}

// Source is another way in for batches (a message queue). Run runs until
// ctx is done, handing each batch to submit: its identity, a name for
// errors ("message 17"), and its body. Submit waits for room on the
// checker's queue and for the checker's verdict: the number of
// transactions taken, or a *Refusal (already counted and logged by the service, under
// Name) when it is refused, or ErrShuttingDown (or ctx's error) once the
// service stops taking batches, when the source should leave the message
// to be delivered again.
type Source struct {
	// Name labels the source's refusals in the metrics and the log.
	Name string
	// Run consumes until ctx is done.
	Run func(ctx context.Context, submit func(id Identity, name string, body []byte) (int, error)) error
	// Decode, when set, reads a batch's body (of identity id, name
	// naming it in errors) instead of the history format's JSON lines: a
	// source's own encoding. The transactions it returns are checked as
	// a parsed batch's are (aion.CheckInput among them).
	Decode func(id Identity, name string, body []byte) (*history.History, []history.Txn, error)
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

// Summary is what Serve reports when it stops.
type Summary struct {
	// Checked and Skipped count transactions; Violations the final
	// violations; Pending the Ext violations that were not final yet.
	Checked, Skipped uint64
	Violations       uint64
	Pending          int
	FlipFlops        uint64
	// Rejected counts the refused batches by reason (HTTP and sources
	// alike), RejectedTxns the transactions they held; Suppressed the
	// findings not reported because their keyspace lost transactions.
	Rejected     map[string]uint64
	RejectedTxns uint64
	Suppressed   uint64
	// Tainted names the keyspaces that lost refused transactions, sorted;
	// Duplicates counts the transactions received again as they were
	// accepted.
	Tainted    []string
	Duplicates uint64
	// Faults counts the fault records the batches carried (kept and
	// listed, not checked).
	Faults uint64
}

// Serve checks and serves on ln until ctx is done, then shuts down: it
// stops accepting requests and batches, checks the batches queued, writes
// the Ext violations still pending to the output (marked pending), and
// returns the summary.
func (s *Server) Serve(ctx context.Context, ln net.Listener) (Summary, error) {
	if err := CheckBind(ln.Addr(), s.cfg.Token); err != nil {
		ln.Close()
		return Summary{}, err
	}
	connCtx, connState, handler := s.connState(s.Handler())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: s.cfg.HeaderTimeout, ReadTimeout: s.cfg.ReadTimeout, IdleTimeout: s.cfg.IdleTimeout,
		ConnContext: connCtx, ConnState: connState, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	ln = &limitListener{Listener: ln, max: int64(s.cfg.MaxConns), open: &s.conns,
		refuse: func() { s.count(reasonTooManyConns, "http", "limit", s.cfg.MaxConns) }}
	done := make(chan struct{})
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	go func() {
		defer close(done)
		s.run()
	}()
	ticker := time.NewTicker(s.cfg.Tick)
	defer ticker.Stop()
	if s.cfg.Stepped {
		ticker.Stop()
	}
	stop, ticking := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticking)
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				select {
				case s.ticks <- struct{}{}:
				default: // a tick is waiting already
				}
			}
		}
	}()
	srcCtx, stopSources := context.WithCancel(context.Background())
	defer stopSources()
	var sources sync.WaitGroup
	for _, src := range s.cfg.Sources {
		sources.Add(1)
		go func() {
			defer sources.Done()
			err := src.Run(srcCtx, func(id Identity, name string, body []byte) (int, error) {
				hold, err := s.acquire(srcCtx, int64(len(body)))
				if err != nil {
					return 0, ErrShuttingDown
				}
				parse := func() (*history.History, []history.Txn, error) {
					if src.Decode != nil {
						return src.Decode(id, name, body)
					}
					return ParseLines(body, name)
				}
				n, _, err := s.submit(srcCtx, id, src.Name, parse, hold, true, nil)
				if err != nil && srcCtx.Err() != nil && errors.Is(err, srcCtx.Err()) {
					return 0, ErrShuttingDown
				}
				return n, err
			})
			if err != nil && srcCtx.Err() == nil {
				s.log.Error("source stopped", "source", src.Name, "error", err.Error())
			}
		}()
	}
	httpErr := make(chan error, 1)
	go func() { httpErr <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-httpErr:
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopSources()
	sources.Wait()
	s.intake.Lock()
	s.closed = true
	s.intake.Unlock()
	if serr := srv.Shutdown(shut); serr != nil && err == nil {
		err = serr
	}
	close(stop)
	<-ticking
	s.intake.Lock() // no sender is left
	close(s.work)
	s.intake.Unlock()
	<-done
	pending := s.checker.Pending()
	for i := range pending {
		s.emit(&pending[i], true)
	}
	st := s.checker.Stats()
	s.mu.Lock()
	sum := Summary{Checked: st.Checked, Skipped: st.Skipped, FlipFlops: st.FlipFlops, Violations: s.finals, Pending: s.pendings,
		Rejected: maps.Clone(s.rejected), RejectedTxns: s.rejectedTxns, Suppressed: s.suppressed, Faults: s.faultCount,
		Tainted: slices.Sorted(maps.Keys(s.tainted)), Duplicates: s.duplicates}
	s.mu.Unlock()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return sum, err
}

// Sync returns once everything queued before it has been checked. It
// must not be called after Serve returned.
func (s *Server) Sync() {
	b := make(chan struct{})
	s.work <- item{barrier: b}
	<-b
}

// Advance has the checker's clock read and the Ext verdicts whose timeout
// has passed made final, in order with the batches queued before it, and
// returns once that is done and the findings are written. Like Sync, it
// is for a source, and must not be called after Serve returned.
func (s *Server) Advance() {
	s.work <- item{}
	s.Sync()
}

// Progress returns the service's state, as /v1/state serves it.
func (s *Server) Progress() State { return s.state() }

// run is the checker's goroutine: it takes the batches in the queue and
// the clock's ticks until the queue is closed.
func (s *Server) run() {
	for {
		var it item
		select {
		case next, ok := <-s.work:
			if !ok {
				return
			}
			it = next
		case <-s.ticks:
		}
		switch {
		case it.barrier != nil:
			close(it.barrier)
			continue
		case it.batch == nil:
			if err := s.checker.Advance(); err != nil {
				s.log.Error("the checker stopped", "error", err.Error())
			}
		default:
			b := it.batch
			b.hold.freeSlot()
			err := s.take(b)
			var ref *Refusal
			if errors.As(err, &ref) {
				s.refuse(b.source, b.id, ref)
			}
			b.reply <- err
			b.hold.freeMemory()
			s.mu.Lock()
			s.lag = time.Since(b.received)
			s.mu.Unlock()
		}
		for _, v := range s.checker.Take() {
			s.emit(&v, false)
		}
		st := s.checker.Stats()
		s.mu.Lock()
		s.stats = st
		s.note(time.Now(), st.Checked)
		s.mu.Unlock()
	}
}

// take validates b against what the checker holds and hands it to the
// checker, or refuses it whole.
func (s *Server) take(b *batch) error {
	st, err := s.streams.get(b.id)
	if err != nil {
		return &Refusal{Reason: reasonBadInput, Status: http.StatusBadRequest, Txns: len(b.txns), Err: err}
	}
	dup, dups, i, err := st.repeats(b.txns, b.digests)
	if err != nil {
		t := &b.txns[i]
		return &Refusal{Reason: reasonDuplicate, Status: http.StatusConflict, Txns: len(b.txns),
			Err: fmt.Errorf("line %d: duplicate id %s: %s already has a different transaction %s (a retry must repeat it as it was)", t.Line, t.ID, b.id, t.ID)}
	}
	// The transactions the stream holds already are taken without
	// effect: the checker sees each once.
	txns, digests := b.txns, b.digests
	if dups > 0 {
		txns, digests = make([]history.Txn, 0, len(b.txns)-dups), make([]uint64, 0, len(b.txns)-dups)
		for i := range b.txns {
			if !dup[i] {
				txns, digests = append(txns, b.txns[i]), append(digests, b.digests[i])
			}
		}
	}
	st.encodeBatch(b.h, txns)
	// Fault records are not transactions: the checker never sees them. A
	// batch that only repeats transactions is a retry, and so are its
	// fault records, kept when it first came.
	faults := b.h.Faults
	b.h.Faults = nil
	if len(txns) == 0 && dups > 0 {
		faults = nil
	}
	if err := s.checker.Add(b.h, txns); err != nil {
		var bad *aion.InputError
		if errors.As(err, &bad) {
			// The message names the transaction and the key as sent:
			// decoded from the checker's values (encode's inverse).
			t := &txns[bad.Index]
			_, id := decode(t.ID)
			msg := strings.Replace(bad.Error(), "transaction "+t.ID.String(), "transaction "+id.String(), 1)
			for _, o := range t.Ops {
				if o.Key >= 0 && int(o.Key) < len(b.h.Keys) {
					_, key := decode(b.h.Keys[o.Key])
					msg = strings.Replace(msg, "key "+b.h.Keys[o.Key].String()+",", "key "+key.String()+",", 1)
				}
			}
			return &Refusal{Reason: reasonBadInput, Status: http.StatusBadRequest, Txns: len(b.txns), Err: errors.New(msg)} // msg names the line
		}
		s.log.Error("the checker stopped", "error", err.Error())
		return &Refusal{Reason: reasonCheckerFailed, Status: http.StatusInternalServerError, Txns: len(b.txns), Err: err}
	}
	for i := range txns {
		_, id := decode(txns[i].ID)
		st.seen.put(id, digests[i])
	}
	if dups > 0 {
		b.dups = dups
		s.duplicatesM.WithLabelValues(b.source).Add(float64(dups))
		s.mu.Lock()
		s.duplicates += uint64(dups)
		s.mu.Unlock()
	}
	s.keepFaults(b.id, faults)
	s.batches.Inc()
	return nil
}

// emit writes v as a JSON line and keeps it, unless it is about a read of
// another transaction's write in a keyspace that lost transactions: then
// it counts it as suppressed. Only the checker's goroutine (and Serve once
// it is done) calls it, so the lines keep their order; the output is
// written without holding s.mu, so that a slow output holds up neither
// the metrics nor /v1/violations.
func (s *Server) emit(v *aion.Violation, pending bool) {
	h, a, streams, keyspace := s.streams.decoded(v.History, v.Anomaly)
	s.mu.Lock()
	if readKinds[a.Kind] && s.tainted[s.streams.spaceName[keyspace]] {
		s.suppressed++
		s.mu.Unlock()
		s.suppressedM.WithLabelValues(a.Kind.String()).Inc()
		s.log.Debug("finding suppressed: its keyspace lost transactions", "kind", a.Kind.String(), "keyspace", s.streams.spaceName[keyspace])
		return
	}
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	l := Line{Seq: seq, At: v.At, Pending: pending, Level: s.level, Finding: finding.New(h, &a, "")}
	explained := h // the history the explanation names transactions of
	var named []string
	for _, t := range a.Txns {
		if t != history.Init {
			named = append(named, streams[t])
		}
	}
	if len(named) > 0 {
		l.Stream = named[0]
		for _, n := range named[1:] {
			if n != l.Stream {
				l.Streams = make([]string, len(a.Txns))
				for i, t := range a.Txns {
					if t != history.Init {
						l.Streams[i] = streams[t]
					}
				}
				// Ids of several streams may be equal: the explanation
				// names each transaction Tid@stream.
				named := &history.History{Header: h.Header, Keys: h.Keys, Sessions: h.Sessions, Txns: slices.Clone(h.Txns)}
				for i := range named.Txns {
					named.Txns[i].ID = history.StringValue("T" + named.Txns[i].ID.String() + "@" + streams[i])
				}
				explained = named
				break
			}
		}
	}
	if s.cfg.Explain != nil {
		l.Explanation = s.cfg.Explain(explained, &a)
	}
	var picture []byte
	if s.cfg.Picture != nil {
		picture = s.cfg.Picture(explained, &a)
	}
	if s.cfg.Annotate != nil {
		s.cfg.Annotate(h, &a, &l)
	}
	b, err := json.Marshal(l)
	if err != nil {
		s.log.Error("a finding could not be rendered", "kind", a.Kind.String(), "error", err.Error())
		return
	}
	b = append(b, '\n')
	if _, err := s.cfg.Out.Write(b); err != nil {
		s.log.Error("writing a finding", "error", err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pending {
		s.pendings++
	} else {
		s.finals++
		s.violations.WithLabelValues(a.Kind.String()).Inc()
	}
	s.kept = append(s.kept, keptLine{seq, b, picture})
	if n := len(s.kept) - picturesKept - 1; n >= 0 {
		s.kept[n].picture = nil
	}
	if len(s.kept) > s.cfg.Keep {
		s.kept = append(s.kept[:0], s.kept[len(s.kept)-s.cfg.Keep:]...)
	}
}

// metrics registers the service's metrics.
func (s *Server) metrics() {
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stat := func(f func(st *aion.Stats) float64) func() float64 {
		return func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return f(&s.stats)
		}
	}
	s.violations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_violations_total", Help: "Final violations, by anomaly kind."}, []string{"kind"})
	s.rejectedM = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_batches_rejected_total",
		Help: "Batches and requests refused, by reason (bad_input, duplicate_id, too_large, queue_full, memory_full, slow_body, shutting_down, checker_failed; unauthorized, too_many_connections, slow_header) and source (http, nats)."}, []string{"reason", "source"})
	s.rejectedTxnM = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_transactions_rejected_total",
		Help: "Transactions in refused batches that parsed, by reason and source."}, []string{"reason", "source"})
	s.suppressedM = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_findings_suppressed_total",
		Help: "Findings about reads not reported because their keyspace lost refused transactions, by anomaly kind."}, []string{"kind"})
	s.duplicatesM = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_transactions_duplicate_total",
		Help: "Transactions received again as they were accepted (a retry, a message delivered again), taken without effect, by source (http, nats)."}, []string{"source"})
	s.batches = prometheus.NewCounter(prometheus.CounterOpts{Name: "isoscope_batches_accepted_total", Help: "Batches the checker took."})
	s.faultsM = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_faults_total",
		Help: "Fault records the batches carried (a nemesis's faults: kept and listed at /v1/faults, not checked), by kind."}, []string{"kind"})
	s.reg.MustRegister(s.violations, s.rejectedM, s.rejectedTxnM, s.suppressedM, s.duplicatesM, s.batches, s.faultsM,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "isoscope_transactions_checked_total", Help: "Committed transactions checked."},
			stat(func(st *aion.Stats) float64 { return float64(st.Checked) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "isoscope_transactions_skipped_total", Help: "Aborted and unknown transactions set aside."},
			stat(func(st *aion.Stats) float64 { return float64(st.Skipped) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "isoscope_flip_flops_total", Help: "Changes of pending Ext verdicts."},
			stat(func(st *aion.Stats) float64 { return float64(st.FlipFlops) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_pending_verdicts", Help: "Transactions whose Ext verdict is not final."},
			stat(func(st *aion.Stats) float64 { return float64(st.Pending) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_memory_estimate_bytes", Help: "The checker's estimate of its in-memory state."},
			stat(func(st *aion.Stats) float64 { return float64(st.Memory) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_transactions_in_memory", Help: "Transactions held in memory."},
			stat(func(st *aion.Stats) float64 { return float64(st.InMemory) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_transactions_spilled", Help: "Transactions spilled to disk."},
			stat(func(st *aion.Stats) float64 { return float64(st.Spilled) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_lag_seconds", Help: "From receiving the last batch checked to checking it."},
			func() float64 {
				s.mu.Lock()
				defer s.mu.Unlock()
				return s.lag.Seconds()
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_queue_batches", Help: "Batches holding a place in the queue: being read, parsed, or waiting for the checker (at most --queue)."},
			func() float64 { return float64(s.slots.taken()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_batch_memory_reserved_bytes", Help: "Memory reserved by the batches being read, parsed or waiting for the checker's verdict."},
			func() float64 { return float64(s.memory.taken()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_connections_open", Help: "Open HTTP connections."},
			func() float64 { return float64(s.conns.Load()) }),
	)
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
