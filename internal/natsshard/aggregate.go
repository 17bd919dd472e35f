package natsshard

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/wire"
)

// AggregatorConfig sets up an Aggregator.
type AggregatorConfig struct {
	Config
	// Out receives each finding once, as the JSON line a single service
	// writes (its seq the aggregator's own).
	Out io.Writer
	// Token, when set, is the bearer token the HTTP endpoints but the
	// probes want.
	Token string
	// Keep is how many findings /v1/violations serves (10,000 when 0).
	Keep int
}

// Aggregator merges the shards' findings: each once, by its identity.
type Aggregator struct {
	cfg AggregatorConfig
	c   *conn

	mu sync.Mutex
	// seen holds the identities of the findings written.
	seen map[string]bool
	kept [][]byte
	seq  uint64
	// consumed is the findings stream's sequence read through.
	consumed   uint64
	duplicates uint64
	merged     uint64
	status     Status
	// held are the NoConflict findings waiting for every key shard to
	// have checked their round, by pair of transactions: the best so far.
	held map[string]*heldFinding
	// rounds are the key shards' checked rounds by publisher, one per key
	// subject with messages (nil: no worker has checkpointed it), as of
	// the last poll.
	rounds []map[string]uint64
	// roundsSeq is the findings stream's last sequence read after those
	// rounds: every finding of a round a key shard checked is at or before
	// it (a worker stores its findings before its checkpoint).
	roundsSeq uint64
	// released holds the pairs written.
	released map[string]bool

	reg        *prometheus.Registry
	violations *prometheus.CounterVec
}

// Status is what the aggregator knows of the workers and the publishers,
// from the bucket.
type Status struct {
	// Shards are the workers' checkpoints, by shard.
	Shards []Progress `json:"shards"`
	// Published adds up the publishers that closed: transactions, pieces,
	// messages and bytes.
	Published PublishStats `json:"published"`
	// Checked counts the transactions checked: the session shards'
	// pieces, one per transaction; Pieces the pieces checked by every
	// shard, RefusedPieces those refused; Pending the Ext verdicts not
	// final.
	Checked       uint64 `json:"checked"`
	Pieces        uint64 `json:"pieces"`
	RefusedPieces uint64 `json:"refused_pieces"`
	Pending       int    `json:"pending_verdicts"`
	// Found adds up the findings the shards' checkpoints count: the
	// aggregator writes as many when none is lost on the way and none
	// is found by two shards.
	Found uint64 `json:"found"`
	// Behind names the subjects whose worker has not checked (and
	// checkpointed) their last message, or has verdicts pending, or that
	// no worker has checkpointed.
	Behind []string `json:"behind"`
	// Violations counts the findings written, Duplicates those read again
	// and dropped; Held the pairs of conflicting writers waiting for
	// every key shard to have checked their round.
	// Merged counts the NoConflict findings folded into another of the
	// same pair of writers (the shards name a pair once per shard that
	// holds a key both wrote).
	Violations uint64 `json:"violations"`
	Duplicates uint64 `json:"duplicates"`
	Held       int    `json:"held"`
	Merged     uint64 `json:"merged"`
	// DuplicatePieces counts the pieces the shards received again as
	// they were (published or delivered again), taken once; Suppressed
	// the findings about reads the shards did not report because their
	// keyspace lost refused pieces; Warnings says so, beside the verdict.
	DuplicatePieces uint64   `json:"duplicate_pieces"`
	Suppressed      uint64   `json:"suppressed"`
	Warnings        []string `json:"warnings,omitempty"`
}

// heldFinding is a NoConflict finding held back: one checker names a pair
// of conflicting writers once, by one shared key, and the key shards each
// name it by the shared keys they hold; the merged line is the one the
// whole transactions give (wire.Line.Rank), written once every key shard
// has checked the round whose message made the finding.
type heldFinding struct {
	line  wire.Line
	pub   string
	round uint64
}

// better says whether NoConflict finding x is the one a single checker
// names rather than y: a lost update before a concurrent write, then the
// key whose first write comes last in the earlier committer.
func better(x, y *wire.Line) bool {
	if (x.Kind == "lost-update") != (y.Kind == "lost-update") {
		return x.Kind == "lost-update"
	}
	return *x.Rank > *y.Rank
}

// NewAggregator connects and makes the streams and the bucket when
// missing.
func NewAggregator(ctx context.Context, cfg AggregatorConfig) (*Aggregator, error) {
	cfg.defaults()
	if cfg.Keep == 0 {
		cfg.Keep = 10000
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	c, err := dial(ctx, &cfg.Config, "isoscope findings")
	if err != nil {
		return nil, err
	}
	a := &Aggregator{cfg: cfg, c: c, seen: map[string]bool{}, held: map[string]*heldFinding{}, released: map[string]bool{}}
	a.metrics()
	return a, nil
}

// Close closes the connection.
func (a *Aggregator) Close() { a.c.nc.Close() }

// Run reads the findings from the first until ctx is done, writing each
// new one.
func (a *Aggregator) Run(ctx context.Context) error {
	var mu sync.Mutex
	var current jetstream.MessagesContext
	go watchdog(ctx, a.c.js, a.cfg.FindingsStream(), a.cfg.FindingsSubject(), func() uint64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.consumed
	}, func() {
		a.cfg.Log.Warn("the findings' consumer stalled; starting it again")
		mu.Lock()
		if current != nil {
			current.Stop()
		}
		mu.Unlock()
	})
	go func() {
		<-ctx.Done()
		mu.Lock()
		if current != nil {
			current.Stop()
		}
		mu.Unlock()
	}()
	for {
		a.mu.Lock()
		from := a.consumed + 1
		a.mu.Unlock()
		var it jetstream.MessagesContext
		err := retry(ctx, func() error {
			cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{a.cfg.FindingsSubject()}}
			if from > 1 {
				cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
			}
			cons, err := a.c.js.OrderedConsumer(ctx, a.cfg.FindingsStream(), cfg)
			if err != nil {
				return err
			}
			it, err = cons.Messages()
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("consuming %s: %w", a.cfg.FindingsSubject(), err)
		}
		mu.Lock()
		current = it
		mu.Unlock()
		if ctx.Err() != nil {
			it.Stop()
			return nil
		}
		for {
			m, err := it.Next()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.cfg.Log.Warn("the findings' consumer failed; consuming again after the last finding read", "error", err.Error())
				it.Stop()
				break
			}
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			a.mu.Lock()
			again := meta.Sequence.Stream <= a.consumed
			a.mu.Unlock()
			if again {
				continue
			}
			if err := a.take(m.Headers().Get(FindingHeader), m.Data(), meta.Sequence.Stream, m.Headers().Get(RoundHeader)); err != nil {
				return err
			}
		}
	}
}

// take writes a finding unless one of its identity was written.
func (a *Aggregator) take(id string, data []byte, seq uint64, round string) error {
	var l wire.Line
	if err := json.Unmarshal(data, &l); err != nil {
		return fmt.Errorf("finding %d of %s does not parse: %w", seq, a.cfg.FindingsSubject(), err)
	}
	if id == "" {
		id = FindingID(&l)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.consumed = seq
	if a.seen[id] {
		a.duplicates++
		return nil
	}
	a.seen[id] = true
	if l.Rank != nil {
		pair := pairID(&l)
		h := a.held[pair]
		switch {
		case a.released[pair]:
			a.merged++
			a.cfg.Log.Warn("a shard named a pair of conflicting writers after their finding was written", "kind", l.Kind, "transactions", fmt.Sprint(l.Transactions))
		case h == nil:
			pub, r, _ := parseRound(round)
			a.held[pair] = &heldFinding{line: l, pub: pub, round: r}
		case better(&l, &h.line):
			h.line = l
			a.merged++
		default:
			a.merged++
		}
		return a.release()
	}
	return a.write(&l)
}

// pairID is a NoConflict finding's pair of transactions: its level, kind
// family, transactions and their streams.
func pairID(l *wire.Line) string {
	k := *l
	k.Kind, k.Key, k.Value, k.Phenomenon = "no-conflict", nil, nil, ""
	return FindingID(&k)
}

// release writes the held findings whose round every key shard has
// checked. The caller holds a.mu.
func (a *Aggregator) release() error {
	if a.consumed < a.roundsSeq {
		return nil
	}
	for _, pair := range slices.Sorted(mapKeys(a.held)) {
		h := a.held[pair]
		done := len(a.rounds) > 0
		for _, r := range a.rounds {
			if r == nil || r[h.pub] < h.round {
				done = false
				break
			}
		}
		if h.pub == "" || done {
			delete(a.held, pair)
			a.released[pair] = true
			h.line.Rank = nil
			if err := a.write(&h.line); err != nil {
				return err
			}
		}
	}
	return nil
}

// write writes a finding with the next number. The caller holds a.mu.
func (a *Aggregator) write(l *wire.Line) error {
	a.seq++
	l.Seq = a.seq
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := a.cfg.Out.Write(b); err != nil {
		return fmt.Errorf("writing a finding: %w", err)
	}
	a.violations.WithLabelValues(l.Kind).Inc()
	a.status.Violations = a.seq
	a.kept = append(a.kept, b)
	if len(a.kept) > a.cfg.Keep {
		a.kept = slices.Delete(a.kept, 0, len(a.kept)-a.cfg.Keep)
	}
	return nil
}

// Poll reads the workers' checkpoints and the publishers' counts from the
// bucket and the subjects' last messages from the pieces' stream.
func (a *Aggregator) Poll(ctx context.Context) (Status, error) {
	var st Status
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The bucket's keys are the subjects of its stream: the stream's
	// information has them (a listing of the keys would want a consumer
	// of the bucket's stream, slower to come back after a server dies).
	kvs, err := a.c.js.Stream(ctx, "KV_"+a.cfg.Bucket())
	if err != nil {
		return st, fmt.Errorf("the bucket's stream: %w", err)
	}
	kvPrefix := "$KV." + a.cfg.Bucket() + "."
	kvInfo, err := kvs.Info(ctx, jetstream.WithSubjectFilter(kvPrefix+">"))
	if err != nil {
		return st, fmt.Errorf("the bucket's keys: %w", err)
	}
	for _, subj := range slices.Sorted(mapKeys(kvInfo.State.Subjects)) {
		k := strings.TrimPrefix(subj, kvPrefix)
		e, err := a.c.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("reading %s: %w", k, err)
		}
		switch {
		case strings.HasPrefix(k, "worker."):
			var p Progress
			if err := json.Unmarshal(e.Value(), &p); err != nil {
				return st, fmt.Errorf("checkpoint %s: %w", k, err)
			}
			st.Shards = append(st.Shards, p)
			st.Pieces += p.Pieces
			st.RefusedPieces += p.RefusedPieces
			st.Pending += p.Pending
			st.Found += p.Findings
			if strings.HasPrefix(p.Shard, "s:") {
				st.Checked += p.Checked
			}
		case strings.HasPrefix(k, "published."):
			var p PublishStats
			if err := json.Unmarshal(e.Value(), &p); err != nil {
				return st, fmt.Errorf("count %s: %w", k, err)
			}
			st.Published.Txns += p.Txns
			st.Published.Pieces += p.Pieces
			st.Published.Messages += p.Messages
			st.Published.Bytes += p.Bytes
		}
	}
	slices.SortFunc(st.Shards, func(x, y Progress) int { return strings.Compare(x.Shard, y.Shard) })
	stream, err := a.c.js.Stream(ctx, a.cfg.PiecesStream())
	if err != nil {
		return st, fmt.Errorf("the pieces' stream: %w", err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(a.cfg.Prefix+".>"))
	if err != nil {
		return st, fmt.Errorf("the pieces' subjects: %w", err)
	}
	var rounds []map[string]uint64
	tainted := map[string]bool{}
	for _, p := range st.Shards {
		st.DuplicatePieces += p.Duplicates
		st.Suppressed += p.Suppressed
		for _, k := range p.Tainted {
			tainted[k] = true
		}
	}
	if w := serve.SuppressionWarning(st.Suppressed, slices.Sorted(mapKeys(tainted))); w != "" {
		st.Warnings = []string{w}
	}
	for _, subj := range slices.Sorted(mapKeys(info.State.Subjects)) {
		last, err := stream.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			return st, fmt.Errorf("the last message of %s: %w", subj, err)
		}
		i := slices.IndexFunc(st.Shards, func(p Progress) bool { return subjectOf(a.cfg.Prefix, p.Shard) == subj })
		if i < 0 || st.Shards[i].Seq < last.Sequence || st.Shards[i].Pending > 0 {
			st.Behind = append(st.Behind, subj)
		}
		if strings.HasPrefix(subj, a.cfg.Prefix+".k.") {
			var r map[string]uint64
			if i >= 0 {
				r = st.Shards[i].Rounds
				if r == nil {
					r = map[string]uint64{}
				}
			}
			rounds = append(rounds, r)
		}
	}
	fs, err := a.c.js.Stream(ctx, a.cfg.FindingsStream())
	if err != nil {
		return st, fmt.Errorf("the findings' stream: %w", err)
	}
	finfo, err := fs.Info(ctx)
	if err != nil {
		return st, fmt.Errorf("the findings' stream: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rounds, a.roundsSeq = rounds, finfo.State.LastSeq
	if err := a.release(); err != nil {
		return st, err
	}
	st.Violations, st.Duplicates, st.Held, st.Merged = a.seq, a.duplicates, len(a.held), a.merged
	a.status = st
	return st, nil
}

// subjectOf is the subject of shard k:3 under prefix.
func subjectOf(prefix, shard string) string {
	return prefix + "." + strings.Replace(shard, ":", ".", 1)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) { return mapsKeys(m) }

// Drain waits until every subject's worker has checked and checkpointed
// its last message with no verdict pending, every piece the publishers
// counted is checked (or refused), and the findings stream has been read
// to its end; it returns the status then.
func (a *Aggregator) Drain(ctx context.Context) (Status, error) {
	var last error
	for {
		st, err := a.Poll(ctx)
		if err != nil {
			last = err
		}
		if err == nil && len(st.Behind) == 0 && st.Held == 0 && len(st.Shards) > 0 && st.Pieces+st.RefusedPieces >= uint64(st.Published.Pieces) {
			stream, err := a.c.js.Stream(ctx, a.cfg.FindingsStream())
			if err != nil {
				return st, err
			}
			info, err := stream.Info(ctx)
			if err != nil {
				return st, err
			}
			for {
				a.mu.Lock()
				done := a.consumed >= info.State.LastSeq
				a.mu.Unlock()
				if done {
					if st, err = a.Poll(ctx); err != nil || st.Held == 0 {
						return st, err
					}
					break // findings read since are held: wait for their rounds
				}
				select {
				case <-ctx.Done():
					return st, ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return st, fmt.Errorf("%w (reading the progress: %w)", ctx.Err(), last)
			}
			return st, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Handler serves /v1/violations (?after=SEQ), /v1/state (Status),
// /metrics, and the probes.
func (a *Aggregator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/violations", a.auth(a.listViolations))
	mux.HandleFunc("GET /v1/state", a.auth(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		st := a.status
		st.Violations, st.Duplicates, st.Held, st.Merged = a.seq, a.duplicates, len(a.held), a.merged
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	}))
	mux.Handle("GET /metrics", a.auth(promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return mux
}

// auth wants the bearer token, when there is one.
func (a *Aggregator) auth(h http.HandlerFunc) http.HandlerFunc {
	if a.cfg.Token == "" {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		scheme, cred, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(cred)), []byte(a.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="isoscope"`)
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

// listViolations serves the kept findings with seq above ?after.
func (a *Aggregator) listViolations(w http.ResponseWriter, r *http.Request) {
	after, ok := serve.AfterParam(w, r)
	if !ok {
		return
	}
	a.mu.Lock()
	var out []byte
	first := a.seq - uint64(len(a.kept)) + 1
	for i, b := range a.kept {
		if first+uint64(i) > after {
			out = append(out, b...)
		}
	}
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Write(out)
}

// metrics registers the aggregator's metrics: the service's names where
// they mean the same.
func (a *Aggregator) metrics() {
	a.reg = prometheus.NewRegistry()
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.violations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "isoscope_violations_total", Help: "Final violations, by anomaly kind (each once)."}, []string{"kind"})
	stat := func(f func(st *Status) float64) func() float64 {
		return func() float64 {
			a.mu.Lock()
			defer a.mu.Unlock()
			return f(&a.status)
		}
	}
	a.reg.MustRegister(a.violations,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "isoscope_findings_duplicates_total", Help: "Findings read again (a worker's replay) and dropped."},
			func() float64 {
				a.mu.Lock()
				defer a.mu.Unlock()
				return float64(a.duplicates)
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_transactions_checked_total", Help: "Transactions checked: the session shards' pieces, as of the last poll."},
			stat(func(st *Status) float64 { return float64(st.Checked) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_pieces_checked_total", Help: "Pieces checked by every shard, as of the last poll."},
			stat(func(st *Status) float64 { return float64(st.Pieces) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_pieces_published_total", Help: "Pieces the publishers that closed counted."},
			stat(func(st *Status) float64 { return float64(st.Published.Pieces) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_pieces_duplicate_total", Help: "Pieces the shards received again as they were (published or delivered again) and took once, as of the last poll."},
			stat(func(st *Status) float64 { return float64(st.DuplicatePieces) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_findings_suppressed_total", Help: "Findings about reads the shards did not report because their keyspace lost refused pieces, as of the last poll."},
			stat(func(st *Status) float64 { return float64(st.Suppressed) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_pending_verdicts", Help: "Ext verdicts not final, over the shards, as of the last poll."},
			stat(func(st *Status) float64 { return float64(st.Pending) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "isoscope_shards_behind", Help: "Subjects whose worker has not checked its last message, as of the last poll."},
			stat(func(st *Status) float64 { return float64(len(st.Behind)) })),
	)
}
