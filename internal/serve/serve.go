// Package serve is the long-running online checker behind `isoscope
// serve`: an HTTP service around one aion.Checker.
//
// Clients POST batches of transactions (JSON Lines of the history format,
// an optional header line first) to /v1/transactions, each in its stream
// (a wire.Identity: the Isoscope-Stream and Isoscope-Keyspace headers or the
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
//
// Each file has one job: serve.go the configuration, the Server and its
// lifecycle (New, Serve); intake.go how a batch reaches the checker;
// loop.go the goroutine that owns the checker; http.go the routes, the
// token and the handlers; limits.go the bounds on clients; metrics.go
// the Prometheus metrics; state.go the state and the live page; stream.go
// the streams and keyspaces mapped into the checker's one id space;
// retry.go the digests that tell a retry from a conflict; faults.go the
// fault records. What clients and servers exchange is package wire's.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
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
	// BlackBox, when set, runs the online black-box checker
	// (internal/check/online) instead of Aion: transactions need no
	// timestamps, and Checker is not used.
	BlackBox *BlackBoxConfig
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
	Annotate func(h *history.History, a *anomaly.Anomaly, l *wire.Line)
	// Log receives what the service has to say besides findings: refused
	// batches, a source's failure, the checker's (nothing when nil).
	Log *slog.Logger
	// Sources are further ways in (NATS JetStream): Serve runs each until
	// shutdown, and stops them before it drains the queue. An error from
	// one is logged, and the others go on.
	Sources []Source
}

// Server is the online checking service. Its fields are grouped by who
// owns them: the configuration, set by New and read-only after; the
// intake (intake.go), through which the handlers and the sources hand
// batches to the checker's goroutine; the HTTP side's counters
// (http.go, limits.go); the checking loop's own (loop.go), which only its
// goroutine touches while it runs; the state under mu, which the loop and
// the intake write and the handlers, the metrics and the summary read
// (state.go); and the Prometheus collectors (metrics.go), safe for
// concurrent use.
type Server struct {
	// The configuration.
	cfg   Config
	level string
	log   *slog.Logger

	// The intake. work is the queue to the checker's goroutine.
	work chan item
	// slots are the queue's places, taken by a batch before it is read
	// and freed when the checker takes it from the queue; memory is
	// ParseMemory, held by a batch from before it is read until the
	// checker's verdict.
	slots  *budget
	memory *budget
	// intake guards closed and the sends on work: a sender holds it for
	// reading, the closer for writing.
	intake sync.RWMutex
	closed bool
	// digests computes the transactions' digests, by which a retry is
	// told from a conflict.
	digests *digester

	// The HTTP side. conns counts the open connections; quiet limits
	// the refusals' log lines.
	conns atomic.Int64
	quiet throttle

	// The checking loop. checker and streams belong to its goroutine
	// (and to Serve once it has stopped); ticks carries the clock's ticks
	// to it.
	checker engine
	streams *streams
	// inputCheck is what the engine asks of a batch's transactions.
	inputCheck wire.InputCheck
	ticks      chan struct{}

	// mu guards the state below.
	mu      sync.Mutex
	started time.Time
	running bool
	// samples are the checked counts of the last rateWindow, for the
	// live page's rate.
	samples []sample
	stats   aion.Stats
	bb      *BlackBoxState
	lag     time.Duration
	kept    []keptLine
	seq     uint64
	// tainted holds the keyspaces that lost a refused batch; rejected,
	// rejectedTxns and suppressed count for the summary.
	tainted      map[string]bool
	rejected     map[string]uint64
	rejectedTxns uint64
	suppressed   uint64
	// duplicates counts the transactions received again as they were
	// accepted.
	duplicates uint64
	// finals and pendings count the violations reported.
	finals   uint64
	pendings int
	// faults are the last fault records the batches carried (keepFaults),
	// faultCount all of them.
	faults     []Fault
	faultCount uint64

	// prom are the Prometheus collectors.
	prom collectorSet
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
	s := &Server{cfg: cfg, work: make(chan item, cfg.Queue), ticks: make(chan struct{}, 1),
		slots: newBudget(int64(cfg.Queue)), memory: newBudget(cfg.ParseMemory), level: "snapshot-isolation", log: cfg.Log, streams: newStreams(),
		tainted: map[string]bool{}, rejected: map[string]uint64{}, started: time.Now(), digests: newDigester(), inputCheck: aion.CheckInput}
	if cfg.BlackBox != nil {
		bb, err := newBlackBox(*cfg.BlackBox, func(ks uint32) string { return s.streams.spaceName[ks] })
		if err != nil {
			return nil, err
		}
		s.checker, s.inputCheck, s.level = bb, CheckBlackBoxInput, cfg.BlackBox.Level.Name
	} else {
		c, err := aion.New(cfg.Checker)
		if err != nil {
			return nil, err
		}
		s.checker = aionEngine{c}
		if cfg.Checker.Serializable {
			s.level = "serializable"
		}
	}
	s.metrics()
	return s, nil
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
	// BlackBox is the black-box checker's state at the end (nil for
	// Aion).
	BlackBox *BlackBoxState
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
			err := src.Run(srcCtx, func(id wire.Identity, name string, body []byte) (int, error) {
				hold, err := s.acquire(srcCtx, int64(len(body)))
				if err != nil {
					return 0, ErrShuttingDown
				}
				parse := func() (*history.History, []history.Txn, error) {
					if src.Decode != nil {
						return src.Decode(id, name, body)
					}
					return wire.ParseLinesFor(body, name, s.inputCheck)
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
	final, pending, ferr := s.checker.finish()
	if ferr != nil {
		s.log.Error("the final verdict failed", "error", ferr.Error())
		if err == nil {
			err = ferr
		}
	}
	for i := range final {
		s.emit(&final[i], false)
	}
	for i := range pending {
		s.emit(&pending[i], true)
	}
	st := s.checker.stats()
	s.mu.Lock()
	sum := Summary{Checked: st.Checked, Skipped: st.Skipped, FlipFlops: st.FlipFlops, Violations: s.finals, Pending: s.pendings,
		Rejected: maps.Clone(s.rejected), RejectedTxns: s.rejectedTxns, Suppressed: s.suppressed, Faults: s.faultCount,
		Tainted: slices.Sorted(maps.Keys(s.tainted)), Duplicates: s.duplicates, BlackBox: s.checker.blackBox()}
	s.mu.Unlock()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return sum, err
}
