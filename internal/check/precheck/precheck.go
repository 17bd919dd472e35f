// Package precheck runs the checks every level shares before any cycle
// search (MTC §III-B and §IV-B, footnote 1): thin-air reads, aborted reads
// (G1a), intermediate reads (G1b), and the intra-transaction anomalies
// future read, not-my-own-write, not-my-last-write and non-repeatable read.
// It finds all of them, not just the first.
package precheck

import (
	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Run returns every shared-check anomaly of ix's history that level l
// proscribes, in file order. Only transactions that took effect are
// examined: what an aborted transaction read does not matter.
func Run(ix *history.Index, l level.Level) []anomaly.Anomaly {
	h := ix.History()
	c := checker{ix: ix, h: h, l: l, deleted: deletedKeys(h)}
	// A level that allows reading uncommitted data (G1a) lets every
	// unknown transaction count as aborted, whoever read it.
	dirty := !l.Proscribes.Has(anomaly.G1a)
	for i := range h.Txns {
		t := history.TxnID(i)
		if ix.Effective(t) && !(dirty && h.Txns[i].Status != history.Committed) {
			c.txn(t)
		}
	}
	return c.found
}

// Txn returns the shared-check anomalies of transaction t alone, whatever
// its status: whether it could have committed without an anomaly the level
// proscribes.
func Txn(ix *history.Index, l level.Level, t history.TxnID) []anomaly.Anomaly {
	h := ix.History()
	c := checker{ix: ix, h: h, l: l, deleted: deletedKeys(h)}
	c.txn(t)
	return c.found
}

type checker struct {
	ix      *history.Index
	h       *history.History
	l       level.Level
	deleted map[history.KeyID]bool
	found   []anomaly.Anomaly
}

func deletedKeys(h *history.History) map[history.KeyID]bool {
	var m map[history.KeyID]bool
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Delete {
				if m == nil {
					m = map[history.KeyID]bool{}
				}
				m[op.Key] = true
			}
		}
	}
	return m
}

// keyState is what a transaction has done to one key so far.
type keyState struct {
	wrote     bool
	lastWrite int32 // op index of the last own write
	read      bool
	firstRead int32 // op index of the first external read
	nrr       bool  // a non-repeatable read was reported
}

func (c *checker) txn(t history.TxnID) {
	ops := c.h.Txns[t].Ops
	var small [4]struct {
		k history.KeyID
		s keyState
	}
	var states []struct {
		k history.KeyID
		s keyState
	}
	states = small[:0]
	state := func(k history.KeyID) *keyState {
		for i := range states {
			if states[i].k == k {
				return &states[i].s
			}
		}
		states = append(states, struct {
			k history.KeyID
			s keyState
		}{k: k})
		return &states[len(states)-1].s
	}
	for j, op := range ops {
		switch op.Kind {
		case history.Write, history.Delete:
			s := state(op.Key)
			s.wrote, s.lastWrite = true, int32(j)
		case history.Read:
			s := state(op.Key)
			ref := history.OpRef{Txn: t, Op: int32(j)}
			if s.wrote {
				c.ownRead(t, ref, op, s)
				continue
			}
			if s.read {
				first := ops[s.firstRead]
				if first.Value != op.Value && !s.nrr && c.l.NoNonRepeatableReads {
					s.nrr = true
					c.add(anomaly.NonRepeatableRead, anomaly.None, op, []history.TxnID{t},
						history.OpRef{Txn: t, Op: s.firstRead}, ref)
				}
				if first.Value == op.Value {
					continue
				}
			} else {
				s.read, s.firstRead = true, int32(j)
			}
			c.externalRead(t, ref, op)
		}
	}
}

// ownRead checks a read that follows the transaction's own write of the key.
func (c *checker) ownRead(t history.TxnID, ref history.OpRef, op history.Op, s *keyState) {
	ops := c.h.Txns[t].Ops
	last := ops[s.lastWrite]
	if last.Value == op.Value || (last.Kind == history.Delete && op.Value.IsNull()) {
		return
	}
	for j := int32(0); j < s.lastWrite; j++ {
		p := ops[j]
		if p.Kind.IsWrite() && p.Key == op.Key && p.Value == op.Value && p.Kind != history.Delete {
			c.add(anomaly.NotMyLastWrite, anomaly.None, op, []history.TxnID{t},
				ref, history.OpRef{Txn: t, Op: j}, history.OpRef{Txn: t, Op: s.lastWrite})
			return
		}
	}
	c.add(anomaly.NotMyOwnWrite, anomaly.None, op, []history.TxnID{t}, ref, history.OpRef{Txn: t, Op: s.lastWrite})
}

// externalRead checks a read that observes another transaction (or the
// initial state).
func (c *checker) externalRead(t history.TxnID, ref history.OpRef, op history.Op) {
	if c.ix.WrittenInitially(op.Key, op.Value) || (op.Value.IsNull() && c.deleted[op.Key]) {
		return
	}
	var own, aborted, effective, finalEffective []history.OpRef
	for p := c.ix.ReadFrom(t, int(ref.Op)); p >= 0; p = c.ix.NextWrite(p) {
		w, final := c.ix.WriteRef(p), c.ix.WriteIsFinal(p)
		switch {
		case w.Txn == t:
			own = append(own, w)
		case c.ix.Effective(w.Txn):
			effective = append(effective, w)
			if final {
				finalEffective = append(finalEffective, w)
			}
		case c.h.Txns[w.Txn].Status == history.Aborted:
			aborted = append(aborted, w)
		default:
			// An unknown transaction that did not take effect: it may
			// have committed, so the read is explicable.
			effective = append(effective, w)
			finalEffective = append(finalEffective, w)
		}
	}
	switch {
	case len(effective) == 0 && len(aborted) == 0 && len(own) > 0:
		c.add(anomaly.FutureRead, anomaly.None, op, []history.TxnID{t}, append([]history.OpRef{ref}, own...)...)
	case len(effective) == 0 && len(aborted) == 0:
		c.add(anomaly.ThinAirRead, anomaly.None, op, []history.TxnID{t}, ref)
	case len(effective) == 0:
		if c.l.Proscribes.Has(anomaly.G1a) {
			c.add(anomaly.AbortedRead, anomaly.G1a, op, []history.TxnID{t, aborted[0].Txn}, ref, aborted[0])
		}
	case len(finalEffective) == 0:
		if c.l.Proscribes.Has(anomaly.G1b) {
			w := effective[0]
			last := lastWriteOf(c.h, w)
			c.add(anomaly.IntermediateRead, anomaly.G1b, op, []history.TxnID{t, w.Txn}, ref, w, last)
		}
	}
}

// lastWriteOf returns the last write of w's key in w's transaction.
func lastWriteOf(h *history.History, w history.OpRef) history.OpRef {
	ops := h.Txns[w.Txn].Ops
	k := ops[w.Op].Key
	last := w
	for j := w.Op + 1; j < int32(len(ops)); j++ {
		if ops[j].Kind.IsWrite() && ops[j].Key == k {
			last = history.OpRef{Txn: w.Txn, Op: j}
		}
	}
	return last
}

func (c *checker) add(k anomaly.Kind, p anomaly.Phenomenon, op history.Op, txns []history.TxnID, refs ...history.OpRef) {
	c.found = append(c.found, anomaly.Anomaly{
		Kind: k, Phenomenon: p, Txns: txns, Key: op.Key, Value: op.Value, Ops: refs,
	})
}
