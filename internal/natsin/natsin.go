// Package natsin feeds `isoscope serve` from NATS JetStream: a durable
// pull consumer on a subject, whose messages are batches of transactions
// (JSON Lines of the history format, one or more lines each).
//
// A message is acknowledged once its batch is queued for the checker, so
// a batch the service had not taken when it stopped is redelivered to the
// durable consumer when it starts again; a message that is not a valid
// batch is terminated (never redelivered) and reported.
package natsin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/serve"
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
	// Rejected, when set, is told about each message that was not a valid
	// batch.
	Rejected func(err error)
}

// Source returns a serve.Source that consumes cfg's subject.
func Source(cfg Config) serve.Source {
	return func(ctx context.Context, submit func(*history.History, []history.Txn) error) error {
		nc, err := nats.Connect(cfg.URL, nats.Name("isoscope serve"))
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
			h, txns, err := serve.ParseBatch(bytes.NewReader(m.Data()), name)
			if err != nil {
				m.Term()
				if cfg.Rejected != nil {
					cfg.Rejected(err)
				}
				continue
			}
			if err := submit(h, txns); err != nil {
				m.NakWithDelay(time.Second)
				return nil // shutting down: the message comes again
			}
			if err := m.Ack(); err != nil {
				return fmt.Errorf("acknowledging %s: %w", name, err)
			}
		}
	}
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
