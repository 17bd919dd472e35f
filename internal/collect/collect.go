// Package collect publishes a workload's transactions as they finish, for
// `isoscope run --collector`: to `isoscope serve` over HTTP, or to a NATS
// JetStream subject the service consumes.
//
// A Writer sits where the runner writes the history (runner.Config.Out):
// the runner flushes finished transactions to it at least every 200 ms,
// and each write's complete lines — the transactions, the header line
// left out — are published as one batch, in the run's own stream (an
// Identity: a run numbers its transactions from 1, as every other run
// does). A batch the service refuses, or that cannot be delivered, does
// not stop the run (its history file is still written): the Writer
// counts it, and Outcome says what became of the batches, so that the
// run fails loud. Over HTTP the service's answer is the verdict; over
// NATS the service publishes each message's verdict to a subject of the
// publisher's own, and Outcome waits for the verdicts still to come.
package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/wire"
)

// Publisher sends one batch: JSON Lines of transactions, txns of them.
// An error is the batch refused or lost.
type Publisher interface {
	Publish(ctx context.Context, batch []byte, txns int) error
	Close() error
}

// Confirmer is a Publisher whose service judges the batches after Publish
// returned (a message queue): Confirm waits until every batch published
// has its verdict or ctx is done, and returns the batches refused and the
// transactions they held, those whose verdict did not come, and the
// first refusal's error.
type Confirmer interface {
	Confirm(ctx context.Context) (refused, refusedTxns, unconfirmed int, first error)
}

// Outcome is what became of a Writer's batches.
type Outcome struct {
	// Batches and Txns count what was published.
	Batches, Txns int
	// Refused counts the batches refused or lost, RefusedTxns the
	// transactions they held; Unconfirmed the batches whose verdict never
	// came. First is the first refusal's error.
	Refused, RefusedTxns, Unconfirmed int
	First                             error
}

// Complete says every batch was delivered and taken.
func (o *Outcome) Complete() bool { return o.Refused == 0 && o.Unconfirmed == 0 }

// Writer is an io.Writer that publishes the transaction lines written to
// it.
type Writer struct {
	ctx     context.Context
	pub     Publisher
	partial []byte
	header  bool
	// fenceHeader is the history's header line when it names a fence
	// key: each batch carries it, so that a black-box service learns the
	// fence key from the run's first batch.
	fenceHeader []byte
	// Published counts the transactions taken (over NATS: acknowledged by
	// the stream).
	Published int
	batches   int
	txns      int
	refused   int
	refTxns   int
	first     error
	// Mutate, when set, rewrites each transaction line before it is
	// published (tests plant faults here).
	Mutate func(line []byte) []byte
}

// NewWriter publishes through pub.
func NewWriter(ctx context.Context, pub Publisher) *Writer {
	return &Writer{ctx: ctx, pub: pub}
}

// Write publishes the complete lines of p (with what an earlier write left
// unfinished), leaving out the history's header line, unless it names a
// fence key: then every batch starts with it. A batch refused or
// lost is counted, not returned: the run and its history go on.
// faultRecord starts each fault record the runner writes.
var faultRecord = []byte(`{"fault":`)

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
			if bytes.Contains(first, []byte(`"fence_key"`)) {
				w.fenceHeader = append(append([]byte(nil), first...), '\n')
			}
		}
	}
	if bytes.Contains(lines, faultRecord) {
		// The service checks transactions: the run's fault records stay
		// in the history file.
		var kept []byte
		for _, l := range bytes.SplitAfter(lines, []byte("\n")) {
			if !bytes.HasPrefix(l, faultRecord) {
				kept = append(kept, l...)
			}
		}
		lines = kept
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
		n := bytes.Count(lines, []byte("\n"))
		w.batches++
		w.txns += n
		if w.fenceHeader != nil {
			lines = append(append(make([]byte, 0, len(w.fenceHeader)+len(lines)), w.fenceHeader...), lines...)
		}
		if err := w.pub.Publish(w.ctx, lines, n); err != nil {
			w.refused++
			w.refTxns += n
			if w.first == nil {
				w.first = err
			}
		} else {
			w.Published += n
		}
	}
	w.partial = append([]byte(nil), rest...)
	return len(p), nil
}

// Outcome says what became of the batches; over NATS it waits for the
// verdicts still to come until ctx is done.
func (w *Writer) Outcome(ctx context.Context) Outcome {
	o := Outcome{Batches: w.batches, Txns: w.txns, Refused: w.refused, RefusedTxns: w.refTxns, First: w.first}
	if c, ok := w.pub.(Confirmer); ok {
		refused, txns, unconfirmed, first := c.Confirm(ctx)
		o.Refused += refused
		o.RefusedTxns += txns
		o.Unconfirmed = unconfirmed
		if o.First == nil {
			o.First = first
		}
	}
	return o
}

// HTTP posts batches to a serve endpoint, waiting and retrying while the
// service answers 429, and sending a batch again when its answer is lost
// (the connection failed after the request went out): the service may
// have taken it, and then takes it again as a retry, each transaction
// once.
type HTTP struct {
	// URL is the service's base URL (http://127.0.0.1:7878).
	URL string
	// Token is the bearer token, if the service wants one.
	Token string
	// ID is the stream the batches belong to.
	ID wire.Identity
	// Client sends the requests (http.DefaultClient when nil).
	Client *http.Client
}

// resends is how many times HTTP sends a batch again whose answer was
// lost.
const resends = 3

// Publish posts batch to /v1/transactions: nil once the service took it,
// the service's refusal otherwise.
func (h *HTTP) Publish(ctx context.Context, batch []byte, _ int) error {
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	wait := 50 * time.Millisecond
	lost := 0
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(h.URL, "/")+"/v1/transactions", bytes.NewReader(batch))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		if h.Token != "" {
			req.Header.Set("Authorization", "Bearer "+h.Token)
		}
		setIdentity(req.Header, h.ID)
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil || lost == resends {
				return err
			}
			lost++
			select {
			case <-ctx.Done():
				return err
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
			continue
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

// setIdentity puts id's headers in hdr.
func setIdentity[H interface{ Set(k, v string) }](hdr H, id wire.Identity) {
	if id.Stream != "" {
		hdr.Set(wire.StreamHeader, id.Stream)
	}
	if id.Keyspace != "" {
		hdr.Set(wire.KeyspaceHeader, id.Keyspace)
	}
}

// Close does nothing: HTTP holds no connection of its own.
func (h *HTTP) Close() error { return nil }

// NATS publishes batches to a JetStream subject, each acknowledged by the
// stream before Publish returns, and listens for the service's verdicts
// on an inbox of its own.
type NATS struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	id      wire.Identity
	inbox   string
	sub     *nats.Subscription

	mu sync.Mutex
	// waiting maps the stream sequence of each message whose verdict has
	// not come to its transactions (or a verdict to its mark, when it came
	// first).
	waiting     map[uint64]int
	refused     int
	refusedTxns int
	first       error
	changed     chan struct{}
}

// Marks in NATS.waiting of a verdict that came before its message's
// acknowledgement.
const (
	acceptedEarly = -1
	refusedEarly  = -2
)

// DialNATS connects to url for publishing to subject as stream id.
func DialNATS(url, subject string, id wire.Identity) (*NATS, error) {
	nc, err := nats.Connect(url, nats.Name("isoscope run --collector"))
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	n := &NATS{nc: nc, js: js, subject: subject, id: id, inbox: nats.NewInbox(), waiting: map[uint64]int{}, changed: make(chan struct{}, 1)}
	if n.sub, err = nc.Subscribe(n.inbox, n.verdict); err != nil {
		nc.Close()
		return nil, err
	}
	return n, nil
}

// verdict takes one of the service's verdicts.
func (n *NATS) verdict(m *nats.Msg) {
	var v wire.Verdict
	if err := json.Unmarshal(m.Data, &v); err != nil {
		return
	}
	n.mu.Lock()
	txns, ok := n.waiting[v.Seq]
	switch {
	case ok:
		delete(n.waiting, v.Seq)
	case v.Refused != "": // the verdict came before Publish saw its ack
		n.waiting[v.Seq] = refusedEarly
	default:
		n.waiting[v.Seq] = acceptedEarly
	}
	if v.Refused != "" {
		n.refused++
		n.refusedTxns += max(txns, 0)
		if n.first == nil {
			n.first = errors.New(v.Refused)
		}
	}
	n.mu.Unlock()
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// Publish sends batch as one message.
func (n *NATS) Publish(ctx context.Context, batch []byte, txns int) error {
	m := nats.NewMsg(n.subject)
	m.Data = batch
	setIdentity(m.Header, n.id)
	m.Header.Set(wire.VerdictsHeader, n.inbox)
	ack, err := n.js.PublishMsg(ctx, m)
	if err != nil {
		return err
	}
	n.mu.Lock()
	switch early, ok := n.waiting[ack.Sequence]; {
	case ok && early == acceptedEarly:
		delete(n.waiting, ack.Sequence)
	case ok && early == refusedEarly:
		delete(n.waiting, ack.Sequence)
		n.refusedTxns += txns
	default:
		n.waiting[ack.Sequence] = txns
	}
	n.mu.Unlock()
	return nil
}

// Confirm waits for the verdicts of what was published.
func (n *NATS) Confirm(ctx context.Context) (refused, refusedTxns, unconfirmed int, first error) {
	for {
		n.mu.Lock()
		left := len(n.waiting)
		refused, refusedTxns, first = n.refused, n.refusedTxns, n.first
		n.mu.Unlock()
		if left == 0 {
			return refused, refusedTxns, 0, first
		}
		select {
		case <-n.changed:
		case <-ctx.Done():
			return refused, refusedTxns, left, first
		}
	}
}

// Close closes the connection (every Publish has been acknowledged).
func (n *NATS) Close() error {
	n.nc.Close()
	return nil
}
