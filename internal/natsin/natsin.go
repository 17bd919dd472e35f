// Package natsin feeds `isoscope serve` from NATS JetStream: a durable
// pull consumer on a subject, whose messages are batches of transactions
// (JSON Lines of the history format, one or more lines each).
//
// A message's Identity is in its headers (Isoscope-Stream,
// Isoscope-Keyspace; none: the default stream). A message is acknowledged
// once the checker took its batch, so a batch the service had not taken
// when it stopped is redelivered to the durable consumer when it starts
// again; a message delivered again after the service took it is taken
// again without effect (its transactions are duplicates); a message the
// service refused (not a valid batch, a different transaction under a
// used id) is terminated (never redelivered), and counted and logged by
// the service. When the message names a subject in its Isoscope-Verdicts
// header, the verdict is published there (core NATS): a JSON object with
// "accepted" (the transactions taken) or "refused" (why) and "reason", so
// that the sender learns what was refused.
package natsin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/wire"
)

// Config names the server, the stream and the durable consumer.
type Config struct {
	// URL is the NATS server (nats://127.0.0.1:4222).
	URL string
	// Stream is the JetStream stream, created over Subject if missing.
	Stream string
	// Subject carries the batches.
	Subject string
	// Durable is the durable consumer's name.
	Durable string
	// Rejected, when set, is told about each message the service refused.
	Rejected func(err error)
	// Log is told when the connection to the server is lost, comes back,
	// or is closed, and of the client's asynchronous errors (nothing when
	// nil).
	Log *slog.Logger
	// ReconnectWait is how long the client waits between attempts to
	// reconnect (2 s when 0). It tries for as long as the service runs.
	ReconnectWait time.Duration
}

// Source returns a serve.Source that consumes cfg's subject.
func Source(cfg Config) serve.Source {
	return serve.Source{Name: "nats", Run: func(ctx context.Context, submit func(wire.Identity, string, []byte) (int, error)) error {
		log := cfg.Log
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		wait := cfg.ReconnectWait
		if wait == 0 {
			wait = nats.DefaultReconnectWait
		}
		nc, err := nats.Connect(cfg.URL, nats.Name("isoscope serve"), nats.MaxReconnects(-1), nats.ReconnectWait(wait),
			nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
				if c.IsClosed() { // closing, not an outage: ClosedHandler says so
					return
				}
				attrs := []any{"source", "nats", "url", cfg.URL}
				if err != nil {
					attrs = append(attrs, "error", err.Error())
				}
				log.Warn("NATS connection lost; reconnecting", attrs...)
			}),
			nats.ReconnectHandler(func(c *nats.Conn) {
				log.Info("NATS connection back", "source", "nats", "url", c.ConnectedUrlRedacted(), "reconnects", c.Stats().Reconnects)
			}),
			nats.ClosedHandler(func(c *nats.Conn) {
				attrs := []any{"source", "nats", "url", cfg.URL}
				if err := c.LastError(); err != nil {
					attrs = append(attrs, "error", err.Error())
				}
				log.Info("NATS connection closed", attrs...)
			}),
			nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
				attrs := []any{"source", "nats", "url", cfg.URL, "error", err.Error()}
				if sub != nil {
					attrs = append(attrs, "subject", sub.Subject)
				}
				log.Warn("NATS client error", attrs...)
			}))
		if err != nil {
			return fmt.Errorf("nats %s: %w", cfg.URL, err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		cons, err := Consumer(ctx, js, cfg)
		if err != nil {
			return err
		}
		msgs, err := cons.Messages()
		if err != nil {
			return err
		}
		go func() {
			<-ctx.Done()
			msgs.Stop()
		}()
		for {
			m, err := msgs.Next()
			if err != nil {
				if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
					return nil
				}
				return err
			}
			meta, _ := m.Metadata()
			name := "message"
			if meta != nil {
				name += " " + strconv.FormatUint(meta.Sequence.Stream, 10)
			}
			hdr := m.Headers()
			id := wire.Identity{Stream: hdr.Get(wire.StreamHeader), Keyspace: hdr.Get(wire.KeyspaceHeader)}
			n, err := submit(id, name, m.Data())
			var ref *wire.Refusal
			switch {
			case err == nil:
				if err := m.Ack(); err != nil {
					return fmt.Errorf("acknowledging %s: %w", name, err)
				}
			case errors.As(err, &ref) && !ref.Retry():
				m.Term()
				if cfg.Rejected != nil {
					cfg.Rejected(err)
				}
			default:
				m.NakWithDelay(time.Second)
				return nil // shutting down: the message comes again
			}
			if to := hdr.Get(wire.VerdictsHeader); to != "" {
				v := wire.Verdict{Accepted: n}
				if ref != nil {
					v = wire.Verdict{Refused: ref.Error(), Reason: ref.Reason}
				}
				if meta != nil {
					v.Seq = meta.Sequence.Stream
				}
				b, _ := json.Marshal(v)
				if err := nc.Publish(to, b); err != nil {
					return fmt.Errorf("publishing the verdict on %s: %w", name, err)
				}
			}
		}
	}}
}

// Consumer creates (or finds) cfg's stream and durable pull consumer.
func Consumer(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.Consumer, error) {
	if cfg.Stream == "" || cfg.Subject == "" || cfg.Durable == "" {
		return nil, errors.New("nats: a stream, a subject and a durable consumer name are needed")
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: cfg.Stream, Subjects: []string{cfg.Subject}}); err != nil {
		return nil, fmt.Errorf("nats stream %s: %w", cfg.Stream, err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, cfg.Stream, jetstream.ConsumerConfig{
		Durable: cfg.Durable, FilterSubject: cfg.Subject, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("nats consumer %s: %w", cfg.Durable, err)
	}
	return cons, nil
}
