// Package serve is the long-running online checker behind `isoscope
// serve`: an HTTP service around one aion.Checker.
//
// Clients POST batches of transactions (JSON Lines of the history format,
// an optional header line first) to /v1/transactions; a batch is parsed
// and validated at once (400 naming the line of the first bad one) and
// queued for the checker (202), or refused with 429 when the queue is
// full. One goroutine owns the checker: it checks the batches in arrival
// order and advances the clock on a ticker, so that Ext verdicts become
// final. Each final violation is written as one JSON line to the output
// and kept for GET /v1/violations. /metrics serves Prometheus metrics,
// /healthz and /readyz the probes. The service listens on loopback unless
// told otherwise, and anywhere else only with a bearer token. Shutdown
// stops intake, checks what was queued, and reports the Ext verdicts still
// pending.
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
)

// Config sets up a Server.
type Config struct {
	// Checker configures the online checker.
	Checker aion.Config
	// Token, when set, is the bearer token every request but the probes
	// must carry. It is required when the service listens beyond loopback.
	Token string
	// Queue is how many batches may wait for the checker (64 when 0);
	// a batch beyond is refused with 429.
	Queue int
	// Tick is how often the checker's clock is advanced (100 ms when 0).
	Tick time.Duration
	// Keep is how many recent violations /v1/violations serves (10,000
	// when 0).
	Keep int
	// MaxBatch bounds a request body in bytes (64 MiB when 0).
	MaxBatch int64
	// Out receives every final violation as a JSON line, and the pending
	// ones at shutdown.
	Out io.Writer
	// Sources are further ways in (NATS JetStream): Serve runs each until
	// shutdown, and stops them before it drains the queue. An error from
	// one is written to Out, and the others go on.
	Sources []Source
}

// item is what the checker's goroutine takes from the queue: a batch, a
// tick, or a barrier to close once everything before it is done.
type item struct {
	h        *history.History
	txns     []history.Txn
	received time.Time
	tick     bool
	barrier  chan struct{}
}

// Server is the online checking service.
type Server struct {
	cfg     Config
	checker *aion.Checker
	level   string
	work    chan item

	mu      sync.Mutex
	closed  bool
	stats   aion.Stats
	lag     time.Duration
	kept    []keptLine
	seq     uint64
	running bool

	reg        *prometheus.Registry
	violations *prometheus.CounterVec
	rejected   prometheus.Counter
	batches    prometheus.Counter
}

// keptLine is a violation's JSON line and its sequence number.
type keptLine struct {
	seq  uint64
	line []byte
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
	report.Finding
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
		cfg.MaxBatch = 64 << 20
	}
	if cfg.Queue < 0 || cfg.Tick < 0 || cfg.Keep < 0 || cfg.MaxBatch < 0 {
		return nil, errors.New("serve: negative queue, tick, keep or batch size")
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	c, err := aion.New(cfg.Checker)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, checker: c, work: make(chan item, cfg.Queue), level: "snapshot-isolation"}
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
	want := "Bearer " + s.cfg.Token
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Bearer realm="isoscope"`)
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// ready is 200 while the checker runs and its queue has room.
func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	ok := s.running && !s.closed
	s.mu.Unlock()
	switch {
	case !ok:
		http.Error(w, "not checking", http.StatusServiceUnavailable)
	case len(s.work) >= cap(s.work):
		http.Error(w, "queue full", http.StatusServiceUnavailable)
	default:
		fmt.Fprintln(w, "ready")
	}
}

// ingest parses and validates a batch and queues it.
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBatch)
	h, txns, err := ParseBatch(body, "batch")
	if err != nil {
		s.rejected.Inc()
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("batch over %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	select {
	case s.work <- item{h: h, txns: txns, received: time.Now()}:
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the checker's queue is full", http.StatusTooManyRequests)
		return
	}
	s.batches.Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, "{\"accepted\":%d}\n", len(txns))
}

// ParseBatch reads a batch of transactions (JSON Lines of the history
// format, an optional header first) and checks each with
// aion.CheckInput. Errors name the batch (name) and the line.
func ParseBatch(r io.Reader, name string) (*history.History, []history.Txn, error) {
	rd, err := native.NewReader(r, name)
	if err != nil {
		return nil, nil, err
	}
	var txns []history.Txn
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

// Source is another way in for batches (a message queue): it runs until
// ctx is done, handing each batch to submit, which blocks while the
// checker's queue is full and fails once the server is shutting down.
type Source func(ctx context.Context, submit func(h *history.History, txns []history.Txn) error) error

// submit queues a batch from a Source, waiting for room.
func (s *Server) submit(ctx context.Context, h *history.History, txns []history.Txn) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("shutting down")
	}
	select {
	case s.work <- item{h: h, txns: txns, received: time.Now()}:
		s.batches.Inc()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listViolations serves the kept violations with seq above ?after, as
// JSON lines.
func (s *Server) listViolations(w http.ResponseWriter, r *http.Request) {
	var after uint64
	if a := r.URL.Query().Get("after"); a != "" {
		var err error
		if after, err = strconv.ParseUint(a, 10, 64); err != nil {
			http.Error(w, "after: not a sequence number: "+a, http.StatusBadRequest)
			return
		}
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
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
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
	stop, ticking := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticking)
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				select {
				case s.work <- item{tick: true}:
				default: // the queue is full: the batches advance the clock
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
			err := src(srcCtx, func(h *history.History, txns []history.Txn) error { return s.submit(srcCtx, h, txns) })
			if err != nil && srcCtx.Err() == nil {
				s.mu.Lock()
				fmt.Fprintf(s.cfg.Out, "{\"error\":%q}\n", "source stopped: "+err.Error())
				s.mu.Unlock()
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
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if serr := srv.Shutdown(shut); serr != nil && err == nil {
		err = serr
	}
	close(stop)
	<-ticking
	close(s.work)
	<-done
	pending := s.checker.Pending()
	for i := range pending {
		s.emit(&pending[i], true)
	}
	st := s.checker.Stats()
	sum := Summary{Checked: st.Checked, Skipped: st.Skipped, Pending: len(pending), FlipFlops: st.FlipFlops}
	for _, n := range st.Violations {
		sum.Violations += n
	}
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

// run is the checker's goroutine.
func (s *Server) run() {
	for it := range s.work {
		var err error
		switch {
		case it.barrier != nil:
			close(it.barrier)
			continue
		case it.tick:
			err = s.checker.Advance()
		default:
			err = s.checker.Add(it.h, it.txns)
			if err != nil {
				s.rejected.Inc()
				fmt.Fprintf(s.cfg.Out, "{\"error\":%q}\n", "batch refused: "+err.Error())
				err = nil
			}
			s.mu.Lock()
			s.lag = time.Since(it.received)
			s.mu.Unlock()
		}
		if err != nil {
			fmt.Fprintf(s.cfg.Out, "{\"error\":%q}\n", err.Error())
		}
		for _, v := range s.checker.Take() {
			s.emit(&v, false)
		}
		st := s.checker.Stats()
		s.mu.Lock()
		s.stats = st
		s.mu.Unlock()
	}
}

// emit writes v as a JSON line and keeps it.
func (s *Server) emit(v *aion.Violation, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	b, err := json.Marshal(Line{Seq: s.seq, At: v.At, Pending: pending, Level: s.level, Finding: report.NewFinding(v.History, &v.Anomaly)})
	if err != nil {
		b = []byte(fmt.Sprintf("{\"error\":%q}", err.Error()))
	}
	b = append(b, '\n')
	s.cfg.Out.Write(b)
	if !pending {
		s.violations.WithLabelValues(v.Anomaly.Kind.String()).Inc()
	}
	s.kept = append(s.kept, keptLine{s.seq, b})
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
	s.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "isoscope_batches_rejected_total", Help: "Batches refused as bad input."})
	s.batches = prometheus.NewCounter(prometheus.CounterOpts{Name: "isoscope_batches_accepted_total", Help: "Batches queued for the checker."})
	s.reg.MustRegister(s.violations, s.rejected, s.batches,
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
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_queue_batches", Help: "Batches waiting for the checker."},
			func() float64 { return float64(len(s.work)) }),
	)
}
