package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
)

// The intake: a batch, from an HTTP request (admit, in http.go) or from a
// source (Serve), takes a place in the queue and memory to be parsed (a
// hold), is parsed, queued for the checker's goroutine, and waits for its
// verdict; a refusal is counted and logged here (refuse).

// item is what the checker's goroutine takes from the queue: a batch or a
// barrier to close once everything before it is done. The clock's ticks
// come on a channel of their own and take no place in the queue.
type item struct {
	batch   *batch
	barrier chan struct{}
}

// batch is a parsed batch waiting for the checker, which sends its
// verdict (nil or a *wire.Refusal) on reply.
type batch struct {
	id     wire.Identity
	source string
	h      *history.History
	txns   []history.Txn
	// digests are the transactions' digests (digester.batch); dups,
	// set by the checker's goroutine before its verdict, counts those the
	// stream held already as they are.
	digests  []uint64
	dups     int
	received time.Time
	reply    chan error
	// hold is its place in the queue and its memory.
	hold *hold
}

// ErrShuttingDown is a Source's submit's error once the service stops
// taking batches.
var ErrShuttingDown = errors.New("the service is shutting down")

// acquire takes a place in the queue and the memory to parse size bytes,
// waiting for them (a source's batch).
func (s *Server) acquire(ctx context.Context, size int64) (*hold, error) {
	if err := s.slots.acquire(ctx, 1); err != nil {
		return nil, err
	}
	weight := min(ParseExpansion*size, s.cfg.ParseMemory)
	if err := s.memory.acquire(ctx, weight); err != nil {
		s.slots.release(1)
		return nil, err
	}
	return &hold{s: s, weight: weight}, nil
}

// hold is a batch's place in the queue, freed when the checker takes the
// batch from the queue, and the memory reserved for it, freed once the
// checker has given its verdict (or the batch was refused before it was
// queued).
type hold struct {
	s            *Server
	weight       int64
	slot, memory sync.Once
}

func (h *hold) freeSlot()   { h.slot.Do(func() { h.s.slots.release(1) }) }
func (h *hold) freeMemory() { h.memory.Do(func() { h.s.memory.release(h.weight) }) }

// submit reads a batch of identity id with parse (whose errors name the
// batch and the line), which has hold, queues it, and waits for the checker's
// verdict; slow, when set, says whether reading the body timed out. It
// returns the number of transactions taken and, of those, the duplicates
// (the stream held them already as they are), or a *wire.Refusal (counted and
// logged here, for source), or the context's error.
func (s *Server) submit(ctx context.Context, id wire.Identity, source string, parse func() (*history.History, []history.Txn, error), hold *hold, wait bool, slow func() bool) (int, int, error) {
	queued := false
	defer func() {
		if !queued { // the checker frees what a queued batch holds
			hold.freeSlot()
			hold.freeMemory()
		}
	}()
	if err := id.Check(); err != nil {
		return 0, 0, s.refuse(source, id, &wire.Refusal{Reason: wire.ReasonBadInput, Status: http.StatusBadRequest, Err: err})
	}
	h, txns, err := parse()
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return 0, 0, s.refuse(source, id, &wire.Refusal{Reason: wire.ReasonTooLarge, Status: http.StatusRequestEntityTooLarge,
				Err: fmt.Errorf("batch over %d bytes", tooBig.Limit)})
		case slow != nil && slow():
			return 0, 0, s.refuse(source, id, &wire.Refusal{Reason: wire.ReasonSlowBody, Status: http.StatusRequestTimeout,
				Err: fmt.Errorf("the body came too slowly (nothing for %s, or not all within %s)", s.cfg.BodyTimeout, s.cfg.ReadTimeout)})
		}
		return 0, 0, s.refuse(source, id, &wire.Refusal{Reason: wire.ReasonBadInput, Status: http.StatusBadRequest, Err: err})
	}
	b := &batch{id: id, source: source, h: h, txns: txns, digests: s.digests.batch(h, txns), received: time.Now(), reply: make(chan error, 1), hold: hold}
	if err := s.enqueue(ctx, item{batch: b}); err != nil {
		var ref *wire.Refusal
		if errors.As(err, &ref) {
			ref.Txns = len(txns)
			return 0, 0, s.refuse(source, id, ref)
		}
		return 0, 0, err
	}
	queued = true
	done := ctx.Done()
	if wait {
		// A source acknowledges what the checker took: the verdict comes,
		// as the checker drains its queue before it stops.
		done = nil
	}
	select {
	case err := <-b.reply:
		if err != nil {
			return 0, 0, err
		}
		return len(txns), b.dups, nil
	case <-done:
		// The sender is gone; the checker still takes or refuses the
		// batch, and counts a refusal.
		return 0, 0, ctx.Err()
	}
}

// enqueue puts it on the checker's queue, waiting for room (until ctx is
// done).
func (s *Server) enqueue(ctx context.Context, it item) error {
	s.intake.RLock()
	defer s.intake.RUnlock()
	if s.closed {
		return &wire.Refusal{Reason: wire.ReasonShuttingDown, Status: http.StatusServiceUnavailable, Err: ErrShuttingDown}
	}
	// A batch holds a place in the queue (s.slots), so there is room.
	select {
	case s.work <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// refuse counts and logs refusal ref of a batch of id from source, and
// marks id's keyspace as having lost transactions unless the refusal is
// for now only. It returns ref.
func (s *Server) refuse(source string, id wire.Identity, ref *wire.Refusal) *wire.Refusal {
	s.prom.rejected.WithLabelValues(ref.Reason, source).Inc()
	s.prom.rejectedTxns.WithLabelValues(ref.Reason, source).Add(float64(ref.Txns))
	s.mu.Lock()
	s.rejected[ref.Reason]++
	s.rejectedTxns += uint64(ref.Txns)
	if !ref.Retry() {
		s.tainted[id.Keyspace] = true
	}
	s.mu.Unlock()
	s.log.Warn("batch refused", "source", source, "stream", id.Stream, "keyspace", id.Keyspace, "reason", ref.Reason,
		"transactions", ref.Txns, "error", ref.Err.Error())
	return ref
}

// Source is another way in for batches (a message queue). Run runs until
// ctx is done, handing each batch to submit: its identity, a name for
// errors ("message 17"), and its body. Submit waits for room on the
// checker's queue and for the checker's verdict: the number of
// transactions taken, or a *wire.Refusal (already counted and logged by the service, under
// Name) when it is refused, or ErrShuttingDown (or ctx's error) once the
// service stops taking batches, when the source should leave the message
// to be delivered again.
type Source struct {
	// Name labels the source's refusals in the metrics and the log.
	Name string
	// Run consumes until ctx is done.
	Run func(ctx context.Context, submit func(id wire.Identity, name string, body []byte) (int, error)) error
	// Decode, when set, reads a batch's body (of identity id, name
	// naming it in errors) instead of the history format's JSON lines: a
	// source's own encoding. The transactions it returns are checked as
	// a parsed batch's are (aion.CheckInput among them).
	Decode func(id wire.Identity, name string, body []byte) (*history.History, []history.Txn, error)
}
