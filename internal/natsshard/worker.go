package natsshard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/shard"
	"github.com/isoscope/isoscope/internal/wire"
)

// WorkerConfig sets up a Worker.
type WorkerConfig struct {
	Config
	// Shard is the shard the worker checks.
	Shard shard.ID
	// Shards is the number of shards the pieces must have been cut for;
	// when 0, that of the first message of pieces, which every later one
	// must then agree with.
	Shards int
	// Timeout is the checker's Ext timeout: the worker ticks for this
	// long (and two ticks more) after the last piece it saw.
	Timeout time.Duration
	// Tick is how often the worker publishes a tick while verdicts may
	// be pending (250 ms when 0).
	Tick time.Duration
}

// Progress is a worker's checkpoint, kept in the bucket under
// worker.KIND.N: how far its findings are durable, and what it counted
// up to there.
type Progress struct {
	Shard string `json:"shard"`
	// Seq is the stream sequence through which the worker's findings are
	// stored (0: none).
	Seq uint64 `json:"seq"`
	// Messages counts the messages of its subject through Seq (pieces
	// and ticks); Pieces the pieces the checker took, RefusedPieces those
	// in messages it refused.
	Messages      uint64 `json:"messages"`
	Pieces        uint64 `json:"pieces"`
	RefusedPieces uint64 `json:"refused_pieces"`
	// Checked and Skipped are the checker's counts of committed and set
	// aside transactions (pieces); Pending its Ext verdicts not final.
	Checked uint64 `json:"checked"`
	Skipped uint64 `json:"skipped"`
	Pending int    `json:"pending"`
	// Findings counts the final findings through Seq.
	Findings uint64 `json:"findings"`
	// Duplicates counts the pieces received again as they were taken
	// (counted in Pieces too), Suppressed the findings about reads not
	// published because their keyspace lost refused pieces, Tainted
	// names those keyspaces.
	Duplicates uint64   `json:"duplicate_pieces"`
	Suppressed uint64   `json:"suppressed"`
	Tainted    []string `json:"tainted_keyspaces,omitempty"`
	// Rounds holds, by publisher, the last of its rounds checked through
	// Seq (key shards).
	Rounds map[string]uint64 `json:"rounds,omitempty"`
	// At is when the checkpoint was taken, by the worker's clock.
	At time.Time `json:"at"`
}

// Worker checks one shard: it is a serve.Server's source, output and
// clock (Configure), reading its shard's subject from the first message.
type Worker struct {
	cfg     WorkerConfig
	c       *conn
	srv     *serve.Server
	subject string
	// clock is the checker's clock: the timestamp of the latest message.
	clock atomic.Int64
	// current is the sequence of the message being checked; replayTo the
	// checkpoint found at the start: findings of messages up to it were
	// published before.
	current  atomic.Uint64
	replayTo uint64
	prog     Progress
	// lastData is when the last message of pieces came (wall clock), for
	// the ticks.
	lastData atomic.Int64
	pubCtx   context.Context
	cancel   context.CancelFunc
	failed   atomic.Pointer[error]
	mu       sync.Mutex
	// recovered is how long the replay up to the checkpoint took.
	recovered time.Duration
	// round is the round header of the message being checked.
	round atomic.Pointer[string]
	// placed holds, for the pieces whose operations are not the first of
	// their transaction, each operation's index in the transaction, by
	// the transaction's stream and id (as JSON).
	placed places
	// batch is the last message of pieces in the binary form decoded,
	// whose arrays the next one reuses.
	batch shard.Batch
}

// NewWorker connects, makes the streams and the bucket when missing, and
// reads the shard's checkpoint.
func NewWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	cfg.defaults()
	if cfg.Tick == 0 {
		cfg.Tick = 250 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = aion.DefaultTimeout
	}
	c, err := dial(ctx, &cfg.Config, "isoscope serve --shard "+cfg.Shard.String())
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, c: c, subject: cfg.Shard.Subject(cfg.Prefix)}
	w.prog.Shard = cfg.Shard.String()
	w.prog.Rounds = map[string]uint64{}
	var saved Progress
	err = retry(ctx, func() error {
		e, err := c.kv.Get(ctx, w.key())
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(e.Value(), &saved)
	})
	if err != nil {
		c.nc.Close()
		return nil, fmt.Errorf("reading the checkpoint of shard %s: %w", cfg.Shard, err)
	}
	w.replayTo = saved.Seq
	w.pubCtx, w.cancel = context.WithCancel(context.Background())
	return w, nil
}

// key is the worker's checkpoint's key in the bucket.
func (w *Worker) key() string {
	return "worker." + string(w.cfg.Shard.Kind) + "." + strconv.Itoa(w.cfg.Shard.Shard)
}

// Checkpoint returns the sequence the worker found its findings durable
// through when it started: it replays up to there without publishing.
func (w *Worker) Checkpoint() uint64 { return w.replayTo }

// Configure makes cfg the service of the worker: its part of the axioms,
// the clock of the messages (no ticks of its own), its output (the
// findings subject) and its source (the shard's subject).
func (w *Worker) Configure(cfg *serve.Config) {
	cfg.Checker.Axioms = aion.KeyAxioms
	if w.cfg.Shard.Kind == shard.Sessions {
		cfg.Checker.Axioms = aion.SessionAxioms
	}
	cfg.Checker.Clock = w.now
	cfg.Checker.Timeout = w.cfg.Timeout
	cfg.Stepped = true
	cfg.Out = w
	cfg.Annotate = w.annotate
	cfg.Sources = []serve.Source{{Name: "nats", Run: w.run, Decode: w.decode}}
}

// decode reads a message's pieces: in the binary form (shard.Decode),
// keeping the places it carries, or as JSON lines of the history format
// (their places were read from the message's header before).
func (w *Worker) decode(id wire.Identity, name string, body []byte) (*history.History, []history.Txn, error) {
	if !shard.IsBinary(body) {
		return wire.ParseLines(body, name)
	}
	// The service has taken the last batch (submit waits for the
	// checker), and the checker copies what it keeps: the batch's arrays
	// serve again.
	b := &w.batch
	if err := b.Decode(body); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	b.History.Name = name
	table := w.placed.table(id.Stream)
	for i := range b.Txns {
		if p := b.Places(i); p != nil {
			table.put(b.Txns[i].ID, p)
		}
	}
	return b.History, b.Txns, nil
}

// Attach gives the worker its service, before Serve.
func (w *Worker) Attach(s *serve.Server) { w.srv = s }

// now is the checker's clock.
func (w *Worker) now() time.Time { return time.Unix(0, w.clock.Load()) }

// Err returns why the worker stopped, when a finding or a checkpoint could
// not be stored.
func (w *Worker) Err() error {
	if p := w.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Recovery returns how long the replay up to the checkpoint took (0 before
// it is done, or when there was nothing to replay).
func (w *Worker) Recovery() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.recovered
}

func (w *Worker) fail(err error) {
	w.failed.CompareAndSwap(nil, &err)
}

// Close closes the connection.
func (w *Worker) Close() {
	w.cancel()
	w.c.nc.Close()
}

// run is the worker's source: its subject's messages in order, from the
// first.
func (w *Worker) run(ctx context.Context, submit func(wire.Identity, string, []byte) (int, error)) error {
	err := w.consume(ctx, submit)
	if err != nil && ctx.Err() == nil {
		w.fail(fmt.Errorf("shard %s: %w", w.cfg.Shard, err))
	}
	return err
}

// messages returns an iterator over the subject's messages from sequence
// from on, in order, retrying while JetStream has no leader for the
// stream.
func (w *Worker) messages(ctx context.Context, from uint64) (jetstream.MessagesContext, error) {
	var it jetstream.MessagesContext
	err := retry(ctx, func() error {
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{w.subject}}
		if from > 1 {
			cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
		}
		cons, err := w.c.js.OrderedConsumer(ctx, w.cfg.PiecesStream(), cfg)
		if err != nil {
			return err
		}
		it, err = cons.Messages()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("consuming %s: %w", w.subject, err)
	}
	return it, nil
}

// consume checks the subject's messages in order until ctx is done; when
// the iterator fails (its server died and the client gave up on it), it
// starts another after the last message checked.
func (w *Worker) consume(ctx context.Context, submit func(wire.Identity, string, []byte) (int, error)) error {
	if w.srv == nil {
		return errors.New("the worker has no service (Attach)")
	}
	it, err := w.messages(ctx, 1)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	current := it
	go func() {
		<-ctx.Done()
		mu.Lock()
		current.Stop()
		mu.Unlock()
	}()
	go w.ticks(ctx)
	start := time.Now()
	caughtUp := w.replayTo == 0
	var saved time.Time
	var last uint64 // the sequence of the last message checked
	var lastSeen atomic.Uint64
	go watchdog(ctx, w.c.js, w.cfg.PiecesStream(), w.subject, lastSeen.Load, func() {
		w.cfg.Log.Warn("the subject's consumer stalled; starting it again", "shard", w.cfg.Shard.String())
		mu.Lock()
		current.Stop()
		mu.Unlock()
	})
	log := w.cfg.Log.With("shard", w.cfg.Shard.String())
	if !caughtUp {
		log.Info("replaying the shard's subject up to its checkpoint", "subject", w.subject, "checkpoint", w.replayTo)
	}
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("the subject's consumer failed; consuming again after the last message checked", "after", last, "error", err.Error())
			it.Stop()
			next, err := w.messages(ctx, last+1)
			if err != nil {
				return err
			}
			mu.Lock()
			current, it = next, next
			mu.Unlock()
			if ctx.Err() != nil {
				it.Stop()
				return nil
			}
			continue
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("message of %s without metadata: %w", w.subject, err)
		}
		seq := meta.Sequence.Stream
		if seq <= last { // delivered again: checked already
			continue
		}
		last = seq
		lastSeen.Store(seq)
		w.current.Store(seq)
		if ts := meta.Timestamp.UnixNano(); ts > w.clock.Load() {
			w.clock.Store(ts)
		}
		hdr := m.Headers()
		round := hdr.Get(RoundHeader)
		w.round.Store(&round)
		switch {
		case hdr.Get(TickHeader) != "":
			w.srv.Advance()
		case len(m.Data()) == 0: // a round without pieces for this shard
		default:
			w.lastData.Store(time.Now().UnixNano())
			name := w.subject + " message " + strconv.FormatUint(seq, 10)
			if err := w.sharded(hdr.Get(ShardingHeader)); err != nil {
				n := pieceCount(hdr, m.Data())
				log.Warn("a message of pieces cut for other shards is refused", "message", name, "pieces", n, "error", err.Error())
				w.prog.RefusedPieces += n
				break
			}
			var pieces uint64
			var err error
			if shard.IsBinary(m.Data()) { // its places are in it: decode keeps them
				pieces, err = binaryPieces(hdr)
			} else {
				pieces, err = w.place(hdr.Get(PieceHeader), id(hdr), m.Data())
			}
			n, serr := submit(id(hdr), name, m.Data())
			if err == nil && serr == nil && pieces != uint64(n) {
				err = fmt.Errorf("its header counts %d pieces, its lines %d", pieces, n)
			}
			if err != nil {
				log.Warn("a message's piece header is wrong", "message", name, "error", err.Error())
			}
			var ref *wire.Refusal
			switch {
			case serr == nil:
				w.prog.Pieces += uint64(n)
			case errors.As(serr, &ref) && !ref.Retry():
				w.prog.RefusedPieces += max(uint64(ref.Txns), pieces) // the service counted and logged it
			default:
				return nil // shutting down: not checkpointed, checked again on restart
			}
			w.srv.Sync() // its findings are written
		}
		if err := w.Err(); err != nil {
			return err
		}
		if pub, r, ok := parseRound(round); ok && r > w.prog.Rounds[pub] {
			w.prog.Rounds[pub] = r
		}
		w.prog.Messages++
		if !caughtUp && seq >= w.replayTo {
			caughtUp = true
			w.mu.Lock()
			w.recovered = time.Since(start)
			w.mu.Unlock()
			log.Info("replayed up to the checkpoint", "messages", w.prog.Messages, "pieces", w.prog.Pieces, "checkpoint", w.replayTo,
				"seconds", w.recovered.Seconds())
		}
		if seq > w.replayTo && (meta.NumPending == 0 || time.Since(saved) >= 500*time.Millisecond) {
			if err := w.save(ctx, seq); err != nil {
				w.fail(err)
				return err
			}
			saved = time.Now()
		}
	}
}

// sharded checks a message's ShardingHeader against the worker's number
// of shards (learning it from the first message when not told).
func (w *Worker) sharded(h string) error {
	n, err := shard.ParseSharding(h)
	if err != nil {
		return err
	}
	if w.cfg.Shards == 0 {
		w.cfg.Shards = n
		w.cfg.Log.Info("the pieces are cut for "+strconv.Itoa(n)+" shards", "shard", w.cfg.Shard.String())
	}
	switch {
	case n != w.cfg.Shards:
		return fmt.Errorf("cut for %d shards, and this worker checks shard %s of %d", n, w.cfg.Shard, w.cfg.Shards)
	case w.cfg.Shard.Shard >= n:
		return fmt.Errorf("cut for %d shards, and this worker checks shard %s", n, w.cfg.Shard)
	}
	return nil
}

// pieceCount is how many pieces a message says it holds: its PiecesHeader
// in the binary form, else the entries of its PieceHeader (0 when it does
// not say).
func pieceCount(hdr nats.Header, data []byte) uint64 {
	if shard.IsBinary(data) {
		n, _ := binaryPieces(hdr)
		return n
	}
	return uint64(len(strings.Fields(hdr.Get(PieceHeader))))
}

// binaryPieces reads the PiecesHeader of a message in the binary form.
func binaryPieces(hdr nats.Header) (uint64, error) {
	n, err := strconv.ParseUint(hdr.Get(PiecesHeader), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("its %s header %q is not a number of pieces", PiecesHeader, hdr.Get(PiecesHeader))
	}
	return n, nil
}

// id is a message's identity, from its headers.
func id(hdr nats.Header) wire.Identity {
	return wire.Identity{Stream: hdr.Get(wire.StreamHeader), Keyspace: hdr.Get(wire.KeyspaceHeader)}
}

// parseRound reads a RoundHeader: the publisher and the round.
func parseRound(s string) (string, uint64, bool) {
	pub, n, ok := strings.Cut(s, " ")
	r, err := strconv.ParseUint(n, 10, 64)
	return pub, r, ok && err == nil
}

// place reads a message's PieceHeader, one entry per line of data: it
// returns the number of entries, and keeps the operations' places of the
// pieces that are not their transaction's first operations, by the id
// that starts their line (as the publisher writes it).
func (w *Worker) place(h string, id wire.Identity, data []byte) (uint64, error) {
	var n uint64
	rest := data
	table := w.placed.table(id.Stream)
	for h != "" {
		var f string
		f, h, _ = strings.Cut(h, " ")
		if f == "" {
			continue
		}
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		ops := table.begin()
		_, ops, err := shard.AppendHeader(ops, f)
		if err != nil {
			return n, err
		}
		n++
		if len(ops) == len(table.ops)+1 { // its operations are the first ones
			table.end(nil, ops) // keeps nothing (but what ops grew by)
			continue
		}
		txn, ok := lineID(line)
		if !ok {
			return n, fmt.Errorf("line %d does not start with its id", n)
		}
		table.end(txn, ops)
	}
	return n, nil
}

// snapshotIsolation is the level's name in a snapshot-isolation service's
// lines.
const snapshotIsolation = "snapshot-isolation"

// annotate sets a NoConflict finding's Rank: where the earlier
// committer's first write of the key is in its whole transaction.
func (w *Worker) annotate(h *history.History, a *anomaly.Anomaly, l *wire.Line) {
	// Under serializability a pair of writers with one commit_ts is named
	// once for each key they share, by one checker as by the shards.
	if (a.Kind != anomaly.ConcurrentWrite && a.Kind != anomaly.LostUpdate) || len(a.Txns) == 0 || l.Level != snapshotIsolation {
		return
	}
	t := &h.Txns[a.Txns[0]]
	stream := l.Stream
	if len(l.Streams) > 0 {
		stream = l.Streams[0]
	}
	for j, o := range t.Ops {
		if o.Kind.IsWrite() && o.Key == a.Key {
			rank := j
			if ops := w.placed.get(stream, t.ID); j < len(ops) {
				rank = int(ops[j])
			}
			l.Rank = &rank
			return
		}
	}
}

// save stores the checkpoint: the findings through seq are stored.
func (w *Worker) save(ctx context.Context, seq uint64) error {
	st := w.srv.Progress()
	w.prog.Seq, w.prog.Checked, w.prog.Skipped, w.prog.Pending, w.prog.At = seq, st.Checked, st.Skipped, st.Pending, w.now()
	w.prog.Duplicates, w.prog.Suppressed, w.prog.Tainted = st.Duplicates, st.Suppressed, st.Tainted
	b, _ := json.Marshal(w.prog)
	return retry(ctx, func() error {
		_, err := w.c.kv.Put(ctx, w.key(), b)
		return err
	})
}

// ticks publishes a tick to the shard's subject every Tick while a
// verdict may be pending: until Timeout and two ticks after the last
// message of pieces.
func (w *Worker) ticks(ctx context.Context) {
	t := time.NewTicker(w.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		last := w.lastData.Load()
		if last == 0 || time.Since(time.Unix(0, last)) > w.cfg.Timeout+2*w.cfg.Tick {
			continue
		}
		m := nats.NewMsg(w.subject)
		m.Header.Set(TickHeader, "1")
		if _, err := w.c.js.PublishMsg(ctx, m); err != nil && ctx.Err() == nil {
			w.cfg.Log.Debug("a tick was not stored", "shard", w.cfg.Shard.String(), "error", err.Error())
		}
	}
}

// Write takes one of the service's violation lines: a final one is
// published to the findings subject (unless the worker is replaying what
// it published before), and returns once JetStream stored it; a pending
// one (the service's shutdown) is not a verdict of the shard's, and is
// dropped.
func (w *Worker) Write(p []byte) (int, error) {
	var l wire.Line
	if err := json.Unmarshal(p, &l); err != nil {
		w.fail(fmt.Errorf("a finding that does not parse: %w", err))
		return 0, err
	}
	if l.Pending {
		return len(p), nil
	}
	w.prog.Findings++
	if w.current.Load() <= w.replayTo {
		return len(p), nil
	}
	id := FindingID(&l)
	m := nats.NewMsg(w.cfg.FindingsSubject())
	m.Data = p
	m.Header.Set(FindingHeader, id)
	m.Header.Set(ShardHeader, w.cfg.Shard.String())
	if r := w.round.Load(); r != nil && *r != "" {
		m.Header.Set(RoundHeader, *r)
	}
	m.Header.Set(jetstream.MsgIDHeader, id)
	err := retry(w.pubCtx, func() error {
		_, err := w.c.js.PublishMsg(w.pubCtx, m)
		return err
	})
	if err != nil {
		err = fmt.Errorf("storing a finding: %w", err)
		w.fail(err)
		return 0, err
	}
	return len(p), nil
}

// FindingID is a finding's identity: a hash of its level, kind,
// phenomenon, transactions (with their streams), key and value — not of
// when it became final, its number, nor its prose.
func FindingID(l *wire.Line) string {
	streams := l.Streams
	if streams == nil {
		streams = make([]string, len(l.Transactions))
		for i := range streams {
			streams[i] = l.Stream
		}
	}
	b, _ := json.Marshal(struct {
		Level, Kind, Phenomenon string
		Transactions            []any
		Streams                 []string
		Key                     any
		Value                   json.RawMessage
	}{l.Level, l.Kind, l.Phenomenon, l.Transactions, streams, l.Key, l.Value})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
