package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/finding"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
)

// The checking loop: one goroutine owns the checker (run). It takes the
// batches in arrival order (take) and the clock's ticks, and writes and
// keeps each violation that became final (emit).

// keptLine is a violation's JSON line and its sequence number, and,
// for the last picturesKept, its picture (Config.Picture).
type keptLine struct {
	seq     uint64
	line    []byte
	picture []byte
}

// Sync returns once everything queued before it has been checked. It
// must not be called after Serve returned.
func (s *Server) Sync() {
	b := make(chan struct{})
	s.work <- item{barrier: b}
	<-b
}

// Advance has the checker's clock read and the Ext verdicts whose timeout
// has passed made final, in order with the batches queued before it, and
// returns once that is done and the findings are written. Like Sync, it
// is for a source, and must not be called after Serve returned.
func (s *Server) Advance() {
	s.work <- item{}
	s.Sync()
}

// run is the checker's goroutine: it takes the batches in the queue and
// the clock's ticks until the queue is closed.
func (s *Server) run() {
	for {
		var it item
		select {
		case next, ok := <-s.work:
			if !ok {
				return
			}
			it = next
		case <-s.ticks:
		}
		switch {
		case it.barrier != nil:
			close(it.barrier)
			continue
		case it.batch == nil:
			if err := s.checker.advance(); err != nil {
				s.log.Error("the checker stopped", "error", err.Error())
			}
		default:
			b := it.batch
			b.hold.freeSlot()
			err := s.take(b)
			var ref *wire.Refusal
			if errors.As(err, &ref) {
				s.refuse(b.source, b.id, ref)
			}
			b.reply <- err
			b.hold.freeMemory()
			s.mu.Lock()
			s.lag = time.Since(b.received)
			s.mu.Unlock()
		}
		for _, v := range s.checker.take() {
			s.emit(&v, false)
		}
		st := s.checker.stats()
		bb := s.checker.blackBox()
		s.mu.Lock()
		s.stats = st
		s.bb = bb
		s.note(time.Now(), st.Checked)
		s.mu.Unlock()
	}
}

// take validates b against what the checker holds and hands it to the
// checker, or refuses it whole.
func (s *Server) take(b *batch) error {
	st, err := s.streams.get(b.id)
	if err != nil {
		return &wire.Refusal{Reason: wire.ReasonBadInput, Status: http.StatusBadRequest, Txns: len(b.txns), Err: err}
	}
	dup, dups, i, err := st.repeats(b.txns, b.digests)
	if err != nil {
		t := &b.txns[i]
		return &wire.Refusal{Reason: wire.ReasonDuplicate, Status: http.StatusConflict, Txns: len(b.txns),
			Err: fmt.Errorf("line %d: duplicate id %s: %s already has a different transaction %s (a retry must repeat it as it was)", t.Line, t.ID, b.id, t.ID)}
	}
	// The transactions the stream holds already are taken without
	// effect: the checker sees each once.
	txns, digests := b.txns, b.digests
	if dups > 0 {
		txns, digests = make([]history.Txn, 0, len(b.txns)-dups), make([]uint64, 0, len(b.txns)-dups)
		for i := range b.txns {
			if !dup[i] {
				txns, digests = append(txns, b.txns[i]), append(digests, b.digests[i])
			}
		}
	}
	st.encodeBatch(b.h, txns)
	// Fault records are not transactions: the checker never sees them. A
	// batch that only repeats transactions is a retry, and so are its
	// fault records, kept when it first came.
	faults := b.h.Faults
	b.h.Faults = nil
	if len(txns) == 0 && dups > 0 {
		faults = nil
	}
	if err := s.checker.add(st, b.h, txns); err != nil {
		var ref *wire.Refusal
		if errors.As(err, &ref) {
			ref.Txns = len(b.txns)
			return ref
		}
		s.log.Error("the checker stopped", "error", err.Error())
		return &wire.Refusal{Reason: wire.ReasonCheckerFailed, Status: http.StatusInternalServerError, Txns: len(b.txns), Err: err}
	}
	for i := range txns {
		_, id := decode(txns[i].ID)
		st.seen.put(id, digests[i])
	}
	if dups > 0 {
		b.dups = dups
		s.prom.duplicates.WithLabelValues(b.source).Add(float64(dups))
		s.mu.Lock()
		s.duplicates += uint64(dups)
		s.mu.Unlock()
	}
	s.keepFaults(b.id, faults)
	s.prom.batches.Inc()
	return nil
}

// emit writes v as a JSON line and keeps it, unless it is about a read of
// another transaction's write in a keyspace that lost transactions: then
// it counts it as suppressed. Only the checker's goroutine (and Serve once
// it is done) calls it, so the lines keep their order; the output is
// written without holding s.mu, so that a slow output holds up neither
// the metrics nor /v1/violations.
func (s *Server) emit(v *aion.Violation, pending bool) {
	h, a, streams, keyspace := s.streams.decoded(v.History, v.Anomaly)
	s.mu.Lock()
	if readKinds[a.Kind] && s.tainted[s.streams.spaceName[keyspace]] {
		s.suppressed++
		s.mu.Unlock()
		s.prom.suppressed.WithLabelValues(a.Kind.String()).Inc()
		s.log.Debug("finding suppressed: its keyspace lost transactions", "kind", a.Kind.String(), "keyspace", s.streams.spaceName[keyspace])
		return
	}
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	l := wire.Line{Seq: seq, At: v.At, Pending: pending, Level: s.level, Finding: finding.New(h, &a, "")}
	explained := h // the history the explanation names transactions of
	var named []string
	for _, t := range a.Txns {
		if t != history.Init {
			named = append(named, streams[t])
		}
	}
	if len(named) > 0 {
		l.Stream = named[0]
		for _, n := range named[1:] {
			if n != l.Stream {
				l.Streams = make([]string, len(a.Txns))
				for i, t := range a.Txns {
					if t != history.Init {
						l.Streams[i] = streams[t]
					}
				}
				// Ids of several streams may be equal: the explanation
				// names each transaction Tid@stream.
				named := &history.History{Header: h.Header, Keys: h.Keys, Sessions: h.Sessions, Txns: slices.Clone(h.Txns)}
				for i := range named.Txns {
					named.Txns[i].ID = history.StringValue("T" + named.Txns[i].ID.String() + "@" + streams[i])
				}
				explained = named
				break
			}
		}
	}
	if s.cfg.Explain != nil {
		l.Explanation = s.cfg.Explain(explained, &a)
	}
	var picture []byte
	if s.cfg.Picture != nil {
		picture = s.cfg.Picture(explained, &a)
	}
	if s.cfg.Annotate != nil {
		s.cfg.Annotate(h, &a, &l)
	}
	b, err := json.Marshal(l)
	if err != nil {
		s.log.Error("a finding could not be rendered", "kind", a.Kind.String(), "error", err.Error())
		return
	}
	b = append(b, '\n')
	if _, err := s.cfg.Out.Write(b); err != nil {
		s.log.Error("writing a finding", "error", err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pending {
		s.pendings++
	} else {
		s.finals++
		s.prom.violations.WithLabelValues(a.Kind.String()).Inc()
	}
	s.kept = append(s.kept, keptLine{seq, b, picture})
	if n := len(s.kept) - picturesKept - 1; n >= 0 {
		s.kept[n].picture = nil
	}
	if len(s.kept) > s.cfg.Keep {
		s.kept = append(s.kept[:0], s.kept[len(s.kept)-s.cfg.Keep:]...)
	}
}
