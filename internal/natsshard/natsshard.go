// Package natsshard spreads online checking over several processes on
// NATS JetStream: a publisher cuts each transaction into per-shard pieces
// (package shard) and publishes them on PREFIX.k.N (a key shard's pieces)
// and PREFIX.s.N (a session shard's); a worker per shard checks its
// subject with the service's Aion checker (package serve) restricted to
// its part of the axioms, and publishes its findings on PREFIX.findings;
// an aggregator merges the findings into the lines, metrics and
// /v1/violations one service gives.
//
// Why a subject per shard and not a consumer group that JetStream spreads
// by itself: Aion's state is per key (the versions and ongoing writers of
// each key) and per session (its last transaction), so every piece of a
// key must reach the one checker that holds the key's state, in the
// stream's order. A shared consumer hands a message to whichever member
// asks first, which would scatter a key's pieces over every worker.
// Subjects are what JetStream partitions, stores, replicates and replays
// by; a worker reads its subject with an ordered consumer, which
// JetStream delivers in sequence, without gaps, re-creating it by itself
// when a server goes away.
//
// Failover without loss rests on the log. A worker's state is a function
// of its subject's messages in their order: the checker's clock is each
// message's JetStream timestamp, never the worker's wall clock, and the
// clock's advance is itself a message (a tick a worker publishes to its
// own subject while verdicts may be pending), so that a worker that
// starts over from the first message reaches the same state and the same
// verdicts, Ext verdicts still pending among them. A worker acknowledges
// its progress — the sequence number through which its findings are
// durable, in a JetStream key-value bucket — only after each finding of
// the messages up to it has been stored by JetStream (a publish
// acknowledged); restarted, it replays its subject from the start,
// publishing nothing for the messages up to that checkpoint, and goes on.
// A finding published twice (a worker killed between a finding and its
// checkpoint) carries the same identity, a hash of the finding: JetStream
// drops the second within its duplicate window, and the aggregator by its
// identity after that.
package natsshard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultPrefix is the subjects' prefix unless told otherwise.
const DefaultPrefix = "isoscope.shard"

// Headers of the pieces' and findings' messages.
const (
	// PieceHeader says, for each line of a message of pieces in order,
	// how many pieces the line's transaction has: numbers separated by
	// spaces.
	PieceHeader = "Isoscope-Piece"
	// EncodingHeader names the form of a message's pieces when they are
	// not JSON lines: shard.Encoding (the binary form, whose payload
	// starts with shard.Magic and its version).
	EncodingHeader = "Isoscope-Encoding"
	// PiecesHeader counts the pieces of a message in the binary form (a
	// message that cannot be read is counted as refusing that many).
	PiecesHeader = "Isoscope-Pieces"
	// ShardingHeader says how a message's pieces were cut:
	// shard.Sharding (the hash function and the number of shards). A
	// worker refuses pieces cut another way, or whose message does not
	// say: their keys would not be its keys.
	ShardingHeader = "Isoscope-Sharding"
	// TickHeader marks a worker's tick: a message without pieces that
	// advances the checker's clock to its timestamp.
	TickHeader = "Isoscope-Tick"
	// FindingHeader is a finding's identity (a hash of what it says).
	FindingHeader = "Isoscope-Finding"
	// ShardHeader names the shard a finding comes from.
	ShardHeader = "Isoscope-Shard"
	// RoundHeader names a publisher and one of its rounds ("ID 17") on
	// every message of the round, and on a finding the round of the
	// message that made it final. Every key shard gets a message each
	// round, without pieces when it has none, so that a key shard's
	// checkpoint says which rounds it has checked.
	RoundHeader = "Isoscope-Round"
)

// Config names the NATS server and the subjects' prefix.
type Config struct {
	// URL is the NATS server, or several, comma-separated.
	URL string
	// Prefix is the subjects' prefix (DefaultPrefix when empty): pieces on
	// PREFIX.k.N and PREFIX.s.N, findings on PREFIX.findings.
	Prefix string
	// Replicas is the number of replicas of the streams and the bucket
	// when they are created (1 when 0; 3 on a three-server cluster).
	Replicas int
	// Log receives what happens besides findings (nothing when nil).
	Log *slog.Logger
}

func (c *Config) defaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// check refuses a prefix that is not a plain subject.
func (c *Config) check() error {
	if c.URL == "" {
		return errors.New("no NATS server given")
	}
	if c.Prefix == "" || strings.ContainsAny(c.Prefix, " \t\r\n*>") || strings.HasPrefix(c.Prefix, ".") || strings.HasSuffix(c.Prefix, ".") || strings.Contains(c.Prefix, "..") {
		return fmt.Errorf("subject prefix %q: want tokens separated by dots, without wildcards or spaces", c.Prefix)
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		return fmt.Errorf("%d replicas: JetStream keeps 1 to 5", c.Replicas)
	}
	return nil
}

// name is the prefix as a stream's or bucket's name: ISOSCOPE_SHARD.
func (c *Config) name() string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(c.Prefix))
}

// PiecesStream, FindingsStream and Bucket name the JetStream stream of the
// pieces, that of the findings, and the key-value bucket of the workers'
// checkpoints and the publishers' counts.
func (c *Config) PiecesStream() string   { return c.name() + "_PIECES" }
func (c *Config) FindingsStream() string { return c.name() + "_FINDINGS" }
func (c *Config) Bucket() string         { return c.name() + "_PROGRESS" }

// FindingsSubject is where the workers publish their findings.
func (c *Config) FindingsSubject() string { return c.Prefix + ".findings" }

// conn is a connection with JetStream and the bucket.
type conn struct {
	nc *nats.Conn
	js jetstream.JetStream
	kv jetstream.KeyValue
}

// dial connects as name, reconnecting for as long as the connection is
// open, and makes the streams and the bucket when they are missing.
func dial(ctx context.Context, cfg *Config, name string) (*conn, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	log := cfg.Log
	nc, err := nats.Connect(cfg.URL, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			if c.IsClosed() {
				return
			}
			attrs := []any{"url", cfg.URL}
			if err != nil {
				attrs = append(attrs, "error", err.Error())
			}
			log.Warn("NATS connection lost; reconnecting", attrs...)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("NATS connection back", "url", c.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("NATS client error", "error", err.Error())
		}))
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", cfg.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := &conn{nc: nc, js: js}
	if err := c.ensure(ctx, cfg); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// ensure makes the streams and the bucket unless they exist. The pieces'
// stream keeps every message (a worker replays it from the start), the
// findings' stream too (the aggregator does); both drop a message
// published again with the same id within two minutes.
func (c *conn) ensure(ctx context.Context, cfg *Config) error {
	streams := []jetstream.StreamConfig{
		{Name: cfg.PiecesStream(), Subjects: []string{cfg.Prefix + ".k.*", cfg.Prefix + ".s.*"}, Replicas: cfg.Replicas, Duplicates: 2 * time.Minute},
		{Name: cfg.FindingsStream(), Subjects: []string{cfg.FindingsSubject()}, Replicas: cfg.Replicas, Duplicates: 2 * time.Minute},
	}
	for _, sc := range streams {
		err := retry(ctx, func() error {
			_, err := c.js.Stream(ctx, sc.Name)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				_, err = c.js.CreateStream(ctx, sc)
				if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
					err = nil
				}
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("nats stream %s: %w", sc.Name, err)
		}
	}
	err := retry(ctx, func() error {
		kv, err := c.js.KeyValue(ctx, cfg.Bucket())
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.Bucket(), Replicas: cfg.Replicas})
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = c.js.KeyValue(ctx, cfg.Bucket())
			}
		}
		c.kv = kv
		return err
	})
	if err != nil {
		return fmt.Errorf("nats bucket %s: %w", cfg.Bucket(), err)
	}
	return nil
}

// retryFor bounds how long an operation is retried while JetStream has no
// leader for it (a server of the cluster died, a new leader is elected).
const retryFor = 60 * time.Second

// retry runs f until it succeeds, ctx is done or retryFor has passed,
// waiting a little longer between attempts each time.
func retry(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(retryFor)
	wait := 50 * time.Millisecond
	for {
		err := f()
		if err == nil || errors.Is(err, context.Canceled) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// stallAfter is how long a consumer may deliver nothing while its subject
// has messages past the last one delivered before the watchdog starts it
// again: after a server dies, the client's consumer can miss its
// re-creation and wait for good.
const stallAfter = 3 * time.Second

// watchdog calls restart when subject, in stream, has messages past
// last() and last() has not moved for stallAfter, until ctx is done.
func watchdog(ctx context.Context, js jetstream.JetStream, stream, subject string, last func() uint64, restart func()) {
	t := time.NewTicker(stallAfter / 3)
	defer t.Stop()
	seen, since := last(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if l := last(); l != seen {
			seen, since = l, time.Now()
			continue
		}
		if time.Since(since) < stallAfter {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, stallAfter)
		s, err := js.Stream(qctx, stream)
		var m *jetstream.RawStreamMsg
		if err == nil {
			m, err = s.GetLastMsgForSubject(qctx, subject)
		}
		cancel()
		if err == nil && m.Sequence > seen {
			restart()
			since = time.Now()
		}
	}
}
