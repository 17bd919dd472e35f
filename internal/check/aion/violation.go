package aion

import (
	"math"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/chronos"
	"github.com/isoscope/isoscope/internal/history"
)

// violation builds the finding a over the parties it names: a.Txns and
// a.Ops index parties (history.Init is the initial state). txns holds the
// parties' transactions where the checker has them (nil elsewhere), whose
// operations the small history then carries.
func (c *Checker) violation(parties []party, txns []*txn, a anomaly.Anomaly) Violation {
	h := &history.History{Keys: c.keys[:len(c.keys):len(c.keys)], Header: history.Header{Initial: history.Initial{Values: map[history.KeyID]history.Value{}}}}
	sess := map[int32]int32{}
	idx := make([]history.TxnID, len(parties))
	for i, p := range parties {
		if j := findParty(h, p.id); j >= 0 {
			idx[i] = j
			if txns[i] != nil && len(h.Txns[j].Ops) == 0 {
				h.Txns[j].Ops = historyOps(txns[i].ops())
			}
			continue
		}
		s, ok := sess[p.sess]
		if !ok {
			s = int32(len(h.Sessions))
			sess[p.sess] = s
			label := history.NullValue
			if p.sess >= 0 && int(p.sess) < len(c.sessLabel) {
				label = c.sessLabel[p.sess]
			}
			h.Sessions = append(h.Sessions, label)
		}
		ht := history.Txn{ID: p.id, Session: s, StartTS: p.sts, CommitTS: p.cts, HasStartTS: true, HasCommitTS: true}
		if p.sess == asideSession {
			ht = history.Txn{ID: p.id, Session: s, Status: history.Aborted} // no timestamps
		}
		if txns[i] != nil {
			ht.Ops = historyOps(txns[i].ops())
			ht.Line = int(txns[i].line)
		}
		idx[i] = history.TxnID(len(h.Txns))
		h.Txns = append(h.Txns, ht)
	}
	a.Txns = remap(a.Txns, idx)
	for i := range a.Ops {
		a.Ops[i].Txn = idx[a.Ops[i].Txn]
	}
	if a.Key >= 0 {
		if init := c.keyInit[a.Key]; !init.IsNull() {
			h.Header.Initial.Values[a.Key] = init
		}
	}
	return Violation{Anomaly: a, History: h}
}

func findParty(h *history.History, id history.Value) history.TxnID {
	for i := range h.Txns {
		if h.Txns[i].ID == id {
			return history.TxnID(i)
		}
	}
	return -1
}

func remap(ts []history.TxnID, idx []history.TxnID) []history.TxnID {
	out := make([]history.TxnID, len(ts))
	for i, t := range ts {
		if t == history.Init {
			out[i] = history.Init
			continue
		}
		out[i] = idx[t]
	}
	return out
}

func historyOps(ops []op) []history.Op {
	out := make([]history.Op, len(ops))
	for j, o := range ops {
		out[j] = history.Op{Kind: o.kind, Key: history.KeyID(o.key), Value: o.val}
	}
	return out
}

// reportAt reports the finding a over parties (see violation).
func (c *Checker) reportAt(parties []party, txns []*txn, a anomaly.Anomaly) {
	c.report(c.violation(parties, txns, a))
}

// expire finalizes the pending verdicts whose deadline is at or before
// now: an external read that still disagrees with its snapshot is a stale
// read or a read beyond the snapshot.
func (c *Checker) expire(now int64) {
	for c.qhead < len(c.queue) && c.queue[c.qhead].deadline <= now {
		t := c.queue[c.qhead]
		c.queue[c.qhead] = nil
		c.qhead++
		if t.bad > 0 {
			for _, v := range c.extFindings(t) {
				c.report(v)
			}
		}
		t.final = true
		c.finalSeq = t.seq + 1
		c.finals = append(c.finals, t)
		c.pendingReads -= int64(t.readers)
	}
	if c.qhead > 1024 && c.qhead > len(c.queue)/2 {
		n := copy(c.queue, c.queue[c.qhead:])
		clear(c.queue[n:])
		c.queue, c.qhead = c.queue[:n], 0
	}
	if dead := c.readers - c.pendingReads; now == math.MaxInt64 || dead > 1<<16 && dead > c.pendingReads {
		c.sweepReaders()
	}
}

// trimReaders drops the reader entries of ks whose verdict is final,
// keeping the list's capacity: add calls it when the list is full, before
// it would grow.
func (c *Checker) trimReaders(ks *keyState) {
	n := len(ks.readers)
	ks.readers = c.liveReaders(ks.readers)
	c.readers -= int64(n - len(ks.readers))
	if before := cap(ks.readers); before > 16 && len(ks.readers) < before/4 {
		ks.readers = append(make([]reader, 0, 2*len(ks.readers)), ks.readers...)
		c.mem += int64(cap(ks.readers)-before) * readerBytes
	}
}

// sweepReaders drops the reader entries of transactions whose verdict is
// final from every key.
func (c *Checker) sweepReaders() {
	for k := range c.ks {
		c.trimReaders(&c.ks[k])
	}
}

// liveReaders filters rs in place down to the readers whose verdict is
// pending.
func (c *Checker) liveReaders(rs []reader) []reader {
	out := rs[:0]
	for _, r := range rs {
		if r.seq >= c.finalSeq {
			out = append(out, r)
		}
	}
	clear(rs[len(out):])
	return out
}

// asideSession marks the party of a transaction set aside (an aborted
// writer), which has no session or timestamps the checker knows.
const asideSession = -2

// extFindings returns t's external reads that disagree with its snapshot,
// as Chronos reports them: a stale read when a transaction that wrote the
// value read committed before the snapshot (or it is the initial state), a
// read beyond the snapshot when the writer committed after it, and a
// thin-air read when no committed transaction is known to have written it
// (Chronos leaves that to the shared checks, which do not run online).
func (c *Checker) extFindings(t *txn) []Violation {
	var out []Violation
	snap := t.snapPos(c.ser)
	ops := t.ops()
	if c.lists {
		for _, a := range c.listReads(t, ops, false) {
			if c.listEquals(ops[a.j].key, snap, a.prefix(ops)) {
				continue
			}
			if v, ok := c.listFinding(t, ops, a, snap); ok {
				out = append(out, v)
			}
		}
	}
	for j, o := range ops {
		if o.kind != history.Read || !firstOn(ops, j) || c.isList(o.key) {
			continue
		}
		fv := c.frontier(o.key, snap)
		cur := c.keyInit[o.key]
		if fv != nil {
			cur = fv.value()
		}
		if chronos.Agrees(o.val, cur) {
			continue
		}
		ref := history.OpRef{Txn: 0, Op: int32(j)}
		src, stale, ok := c.source(t, o.key, o.val, snap)
		if !ok {
			w, aside := c.aside[asideKey{o.key, o.val}]
			switch {
			case !aside:
				out = append(out, c.violation([]party{t.party()}, []*txn{t}, anomaly.Anomaly{
					Kind: anomaly.ThinAirRead, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: o.val, Ops: []history.OpRef{ref}}))
			case w.status == history.Aborted:
				out = append(out, c.violation([]party{t.party(), {id: w.id, sess: asideSession}}, []*txn{t, nil}, anomaly.Anomaly{
					Kind: anomaly.AbortedRead, Phenomenon: anomaly.G1a, Txns: []history.TxnID{0, 1}, Key: history.KeyID(o.key), Value: o.val, Ops: []history.OpRef{ref}}))
			}
			// Written by a transaction of unknown outcome: it may have
			// committed, at timestamps nobody knows; no verdict.
			continue
		}
		kind := anomaly.ReadBeyondSnapshot
		if stale {
			kind = anomaly.StaleRead
		}
		parties := []party{t.party()}
		txns := []*txn{t}
		ids := []history.TxnID{0, history.Init, history.Init}
		if src != nil {
			ids[1] = history.TxnID(len(parties))
			parties = append(parties, *src)
			txns = append(txns, c.byID.get(src.id))
		}
		if fv != nil {
			ids[2] = history.TxnID(len(parties))
			parties = append(parties, fv.party())
			txns = append(txns, c.byID.get(fv.ID()))
		}
		out = append(out, c.violation(parties, txns, anomaly.Anomaly{
			Kind: kind, Phenomenon: chronos.ExtPhenomenon(c.ser, kind), Txns: ids,
			Key: history.KeyID(o.key), Value: o.val, Ops: []history.OpRef{ref}}))
	}
	return out
}

// source finds who wrote the value v that t read at k: the initial state
// (nil, stale), a version committed before t's snapshot (stale), or one
// committed after it; ok is false when no committed transaction wrote it.
func (c *Checker) source(t *txn, k int32, v history.Value, snap pos) (*party, bool, bool) {
	init := c.keyInit[k]
	if v.IsNull() && init.IsNull() || !v.IsNull() && v == init {
		return nil, true, true
	}
	match := func(val history.Value) bool {
		if v.IsNull() {
			return val.IsNull()
		}
		return val == v
	}
	var after *party
	vs := c.ks[k].vers
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].ID() == t.id || !match(vs[i].value()) {
			continue
		}
		p := vs[i].party()
		if cmpPos(vs[i].pos(), snap) < 0 {
			return &p, true, true
		}
		after = &p
	}
	if after != nil {
		return after, false, true
	}
	p, ok, err := c.searchSpilled(t.id, k, match)
	if err != nil && c.err == nil {
		c.err = err
	}
	if ok {
		return &p, true, true // spilled versions committed below every pending snapshot
	}
	return nil, false, false
}
