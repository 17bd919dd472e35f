// Package collect publishes a workload's transactions as they finish, for
// `isoscope run --collector`: to `isoscope serve` over HTTP, or to a NATS
// JetStream subject the service consumes.
//
// A Writer sits where the runner writes the history (runner.Config.Out):
// the runner flushes finished transactions to it at least every 200 ms,
// and each write's complete lines — the transactions, the header line
// left out — are published as one batch.
package collect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publisher sends one batch: JSON Lines of transactions.
type Publisher interface {
	Publish(ctx context.Context, batch []byte) error
	Close() error
}

// Writer is an io.Writer that publishes the transaction lines written to
// it.
type Writer struct {
	ctx     context.Context
	pub     Publisher
	partial []byte
	header  bool
	// Published counts the transactions published.
	Published int
	// Mutate, when set, rewrites each transaction line before it is
	// published (tests plant faults here).
	Mutate func(line []byte) []byte
}

// NewWriter publishes through pub.
func NewWriter(ctx context.Context, pub Publisher) *Writer {
	return &Writer{ctx: ctx, pub: pub}
}

// Write publishes the complete lines of p (with what an earlier write left
// unfinished), leaving out the history's header line.
func (w *Writer) Write(p []byte) (int, error) {
	buf := append(w.partial, p...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		w.partial = buf
		return len(p), nil
	}
	lines, rest := buf[:end+1], buf[end+1:]
	if !w.header {
		w.header = true
		if first, after, ok := bytes.Cut(lines, []byte("\n")); ok && bytes.Contains(first, []byte(`"format"`)) {
			lines = after
		}
	}
	if w.Mutate != nil && len(lines) > 0 {
		var out []byte
		for _, l := range bytes.SplitAfter(lines, []byte("\n")) {
			if len(l) > 0 {
				out = append(out, w.Mutate(l)...)
			}
		}
		lines = out
	}
	if len(lines) > 0 {
		if err := w.pub.Publish(w.ctx, lines); err != nil {
			return 0, fmt.Errorf("collector: %w", err)
		}
		w.Published += bytes.Count(lines, []byte("\n"))
	}
	w.partial = append([]byte(nil), rest...)
	return len(p), nil
}

// HTTP posts batches to a serve endpoint, waiting and retrying while the
// service answers 429.
type HTTP struct {
	// URL is the service's base URL (http://127.0.0.1:7878).
	URL string
	// Token is the bearer token, if the service wants one.
	Token  string
	Client *http.Client
}

// Publish posts batch to /v1/transactions.
func (h *HTTP) Publish(ctx context.Context, batch []byte) error {
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	wait := 50 * time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.URL, "/")+"/v1/transactions", bytes.NewReader(batch))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		if h.Token != "" {
			req.Header.Set("Authorization", "Bearer "+h.Token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusAccepted:
			return nil
		case http.StatusTooManyRequests:
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
		default:
			return fmt.Errorf("%s: %s: %s", h.URL, resp.Status, strings.TrimSpace(string(msg)))
		}
	}
}

// Close does nothing: HTTP holds no connection of its own.
func (h *HTTP) Close() error { return nil }

// NATS publishes batches to a JetStream subject, each acknowledged by the
// stream before Publish returns.
type NATS struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
}

// DialNATS connects to url for publishing to subject.
func DialNATS(url, subject string) (*NATS, error) {
	nc, err := nats.Connect(url, nats.Name("isoscope run --collector"))
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &NATS{nc: nc, js: js, subject: subject}, nil
}

// Publish sends batch as one message.
func (n *NATS) Publish(ctx context.Context, batch []byte) error {
	_, err := n.js.Publish(ctx, n.subject, batch)
	return err
}

// Close closes the connection (every Publish has been acknowledged).
func (n *NATS) Close() error {
	n.nc.Close()
	return nil
}
