package natsshard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/shard"
	"github.com/isoscope/isoscope/internal/wire"
)

// PublisherConfig sets up a Publisher.
type PublisherConfig struct {
	Config
	// Shards is the number of key shards and of session shards.
	Shards int
	// Identity is the stream (id space) and keyspace the transactions
	// belong to, sent in every message's headers.
	Identity wire.Identity
	// Round is how many transactions are cut into pieces before the
	// pieces go out, one message per subject (2,048 when 0).
	Round int
	// JSON publishes the pieces as lines of the history format, their
	// places in the PieceHeader (what publishers wrote before the binary
	// form, and what a person can read), instead of the binary form
	// (shard.Encoder). Workers read both.
	JSON bool
}

// maxMessage bounds a message's pieces, in bytes, under NATS's default
// largest payload (1 MiB).
const maxMessage = 512 << 10

// Publisher publishes transactions as pieces. Its messages go out in
// rounds: each round is at most one message per subject, all published
// at once, and the next round starts only when JetStream has stored every
// message of this one (a message it did not acknowledge is published
// again, with the same message id, so that JetStream keeps it once): a
// subject's pieces are stored in the order of their transactions, which
// is the session order a session shard checks.
type Publisher struct {
	cfg  PublisherConfig
	c    *conn
	id   string // this publisher's name: message ids and its count
	subs map[shard.ID]*pending
	txns int
	// round numbers the rounds, for the message ids.
	round int
	ops   []history.Op
	stats PublishStats
}

// pending is a subject's pieces for the next round: in the binary form
// (enc), or as JSON lines (data) with their header entries (pieces).
type pending struct {
	enc    shard.Encoder
	data   []byte
	pieces []byte
	n      int
}

// PublishStats counts what a Publisher published.
type PublishStats struct {
	// Stream is the transactions' stream.
	Stream string `json:"stream"`
	// Txns and Pieces count the transactions and their pieces, Messages
	// the messages stored; Bytes their payload and headers; Retries the
	// messages published again.
	Txns     int    `json:"txns"`
	Pieces   int    `json:"pieces"`
	Messages int    `json:"messages"`
	Bytes    int64  `json:"bytes"`
	Retries  int    `json:"retries"`
	Shards   int    `json:"shards"`
	Subjects []Sent `json:"subjects"`
}

// Sent is what went to one subject.
type Sent struct {
	Subject string `json:"subject"`
	Pieces  int    `json:"pieces"`
}

// NewPublisher connects to cfg.URL and makes the streams when missing.
func NewPublisher(ctx context.Context, cfg PublisherConfig) (*Publisher, error) {
	cfg.defaults()
	if cfg.Shards < 1 || cfg.Shards > 1024 {
		return nil, fmt.Errorf("%d shards: want 1 to 1024", cfg.Shards)
	}
	if err := cfg.Identity.Check(); err != nil {
		return nil, err
	}
	if cfg.Round == 0 {
		cfg.Round = 2048
	}
	c, err := dial(ctx, &cfg.Config, "isoscope publish")
	if err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, c: c, id: nuid.Next(), subs: map[shard.ID]*pending{},
		stats: PublishStats{Stream: cfg.Identity.Stream, Shards: cfg.Shards}}, nil
}

// Add cuts txns (of h) into pieces, and publishes a round when enough are
// waiting.
func (p *Publisher) Add(ctx context.Context, h *history.History, txns []history.Txn) error {
	for i := range txns {
		t := &txns[i]
		if err := aion.CheckInput(h, t); err != nil {
			return &InputError{Err: err}
		}
		pieces := shard.Split(h, t, p.cfg.Shards)
		for j := range pieces {
			pc := &pieces[j]
			s := p.subs[pc.ID]
			if s == nil {
				s = &pending{}
				p.subs[pc.ID] = s
			}
			if err := p.add(s, h, t, pc); err != nil {
				return err
			}
			s.n++
			p.stats.Pieces++
			p.count(pc.ID)
			if len(s.data) >= maxMessage || s.enc.Size() >= maxMessage {
				p.txns = p.cfg.Round // this round is full
			}
		}
		p.stats.Txns++
		p.txns++
		if p.txns >= p.cfg.Round {
			if err := p.Flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// add appends piece pc of t (of h) to s.
func (p *Publisher) add(s *pending, h *history.History, t *history.Txn, pc *shard.Piece) error {
	if !p.cfg.JSON {
		return s.enc.Add(h, t, pc)
	}
	var err error
	if s.data, p.ops, err = shard.AppendLine(s.data, h, t, pc, p.ops); err != nil {
		return err
	}
	if s.n > 0 {
		s.pieces = append(s.pieces, ' ')
	}
	s.pieces = append(s.pieces, pc.Header()...)
	return nil
}

// InputError is a transaction unfit for online checking: nothing of it
// was published.
type InputError struct{ Err error }

// Error names the transaction and says what is wrong with it.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns e.Err.
func (e *InputError) Unwrap() error { return e.Err }

// count counts a piece for subject id.
func (p *Publisher) count(id shard.ID) {
	subj := id.Subject(p.cfg.Prefix)
	i := slices.IndexFunc(p.stats.Subjects, func(s Sent) bool { return s.Subject == subj })
	if i < 0 {
		p.stats.Subjects = append(p.stats.Subjects, Sent{Subject: subj})
		i = len(p.stats.Subjects) - 1
	}
	p.stats.Subjects[i].Pieces++
}

// Flush publishes the pieces waiting, one message per subject, and
// returns once JetStream stored them all (or failed to for retryFor).
func (p *Publisher) Flush(ctx context.Context) error {
	if len(p.subs) == 0 {
		return nil
	}
	p.round++
	round := p.id + " " + strconv.Itoa(p.round)
	for i := range p.cfg.Shards { // every key shard hears of every round
		if id := (shard.ID{Kind: shard.Keys, Shard: i}); p.subs[id] == nil {
			p.subs[id] = &pending{}
		}
	}
	var msgs []*nats.Msg
	sharding := shard.Sharding(p.cfg.Shards)
	for _, id := range slices.SortedFunc(mapsKeys(p.subs), func(a, b shard.ID) int {
		if a.Kind != b.Kind {
			return int(a.Kind) - int(b.Kind)
		}
		return a.Shard - b.Shard
	}) {
		s := p.subs[id]
		m := nats.NewMsg(id.Subject(p.cfg.Prefix))
		m.Data = s.data
		if !p.cfg.JSON && s.n > 0 {
			m.Data = s.enc.Append(nil)
			m.Header.Set(EncodingHeader, shard.Encoding)
			m.Header.Set(PiecesHeader, strconv.Itoa(s.n))
		}
		if p.cfg.Identity.Stream != "" {
			m.Header.Set(wire.StreamHeader, p.cfg.Identity.Stream)
		}
		if p.cfg.Identity.Keyspace != "" {
			m.Header.Set(wire.KeyspaceHeader, p.cfg.Identity.Keyspace)
		}
		if s.n > 0 {
			m.Header.Set(PieceHeader, string(s.pieces))
			m.Header.Set(ShardingHeader, sharding)
		}
		m.Header.Set(RoundHeader, round)
		m.Header.Set(jetstream.MsgIDHeader, p.id+"."+strconv.Itoa(p.round)+"."+id.String())
		msgs = append(msgs, m)
	}
	clear(p.subs)
	p.txns = 0
	for attempt := 0; len(msgs) > 0; attempt++ {
		futures := make([]jetstream.PubAckFuture, len(msgs))
		var failed []*nats.Msg
		for i, m := range msgs {
			f, err := p.c.js.PublishMsgAsync(m)
			if err != nil {
				failed = append(failed, m)
				continue
			}
			futures[i] = f
		}
		for i, f := range futures {
			if f == nil {
				continue
			}
			select {
			case <-f.Ok():
				p.stats.Messages++
				p.stats.Bytes += int64(msgSize(msgs[i]))
			case <-f.Err():
				failed = append(failed, msgs[i])
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if time.Duration(attempt)*250*time.Millisecond > retryFor {
			return fmt.Errorf("JetStream stored no message of %d for %s", len(failed), retryFor)
		}
		p.stats.Retries += len(failed)
		p.cfg.Log.Warn("messages not stored; publishing them again", "messages", len(failed))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		// A round has one message per subject: each subject's order holds.
		msgs = failed
	}
	return nil
}

// msgSize is a message's payload and headers in bytes, as sent.
func msgSize(m *nats.Msg) int {
	n := len(m.Data) + len(m.Subject)
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// mapsKeys iterates over m's keys.
func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Publish cuts a batch of transaction lines (the history format) into
// pieces and publishes them at once: for `run --collector`, whose runner
// hands over what finished at least every 200 ms.
func (p *Publisher) Publish(ctx context.Context, batch []byte, _ int) error {
	h, txns, err := wire.ParseBatch(bytes.NewReader(batch), "batch")
	if err != nil {
		return err
	}
	if err := p.Add(ctx, h, txns); err != nil {
		return err
	}
	return p.Flush(ctx)
}

// Stats returns the counts so far.
func (p *Publisher) Stats() PublishStats { return p.stats }

// Close publishes what is waiting, records the counts in the bucket (the
// key published.ID), where the aggregator adds them up to see that every
// piece was checked, and closes the connection.
func (p *Publisher) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), retryFor)
	defer cancel()
	err := p.Flush(ctx)
	if err == nil {
		b, _ := json.Marshal(p.stats)
		err = retry(ctx, func() error {
			_, err := p.c.kv.Put(ctx, "published."+p.id, b)
			return err
		})
	}
	p.c.nc.Close()
	return err
}
