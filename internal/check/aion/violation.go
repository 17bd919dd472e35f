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
		if c.cfg.MemoryBound > 0 { // only spilling reads them
			c.finals = append(c.finals, t)
		}
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
			if v, ok := c.unexplained(t, ops, j); ok {
				out = append(out, v)
			}
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
	p, ok, err := c.searchSpilled(t.id, k, v)
	if err != nil && c.err == nil {
		c.err = err
	}
	if ok {
		return &p, true, true // spilled versions committed below every pending snapshot
	}
	return nil, false, false
}

// unexplained is the finding for t's external read j (of ops), which no
// committed transaction's final write explains, named as the shared checks
// name it: an intermediate read when a committed transaction wrote the
// value and then wrote the key again; an aborted read when an aborted one
// wrote it; a future read when only t itself writes it, later; a thin-air
// read when nobody did. When a transaction of unknown outcome wrote it,
// it may have committed, at timestamps nobody knows: no verdict.
func (c *Checker) unexplained(t *txn, ops []op, j int) (Violation, bool) {
	o := ops[j]
	k := asideKey{o.key, o.val}
	ref := history.OpRef{Txn: 0, Op: int32(j)}
	a := anomaly.Anomaly{Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: o.val, Ops: []history.OpRef{ref}}
	if w, ok := c.inter.get(k); ok && w.p.id != t.id {
		a.Kind, a.Phenomenon, a.Txns = anomaly.IntermediateRead, anomaly.G1b, []history.TxnID{0, 1}
		a.Ops = append(a.Ops, history.OpRef{Txn: 1, Op: w.op}, history.OpRef{Txn: 1, Op: w.last})
		return c.violation([]party{t.party(), w.p}, []*txn{t, c.byID.get(w.p.id)}, a), true
	}
	w, aside := c.aside.get(k)
	switch {
	case aside && w.status == history.Aborted:
		a.Kind, a.Phenomenon, a.Txns = anomaly.AbortedRead, anomaly.G1a, []history.TxnID{0, 1}
		a.Ops = append(a.Ops, history.OpRef{Txn: 1, Op: w.op})
		return c.violation([]party{t.party(), {id: w.id, sess: asideSession}}, []*txn{t, nil}, a), true
	case aside:
		return Violation{}, false
	}
	for i, p := range ops {
		if p.kind.IsWrite() && p.key == o.key && chronos.Agrees(o.val, p.val) && i > j {
			a.Ops = append(a.Ops, history.OpRef{Txn: 0, Op: int32(i)})
		}
	}
	a.Kind = anomaly.ThinAirRead
	if len(a.Ops) > 1 {
		a.Kind = anomaly.FutureRead
	}
	return c.violation([]party{t.party()}, []*txn{t}, a), true
}

// indexIntermediate records t's intermediate writes: those of a key it
// writes again later (of values, not nulls), for the first such writer of
// each (key, value), the last 2^20 of them.
func (c *Checker) indexIntermediate(t *txn, ops []op) {
	// Each key's last write, found from the end: a write before it is
	// intermediate.
	clear(c.lastWrite)
	for j := len(ops) - 1; j >= 0; j-- {
		o := ops[j]
		if !o.kind.IsWrite() {
			continue
		}
		last, again := c.lastWrite[o.key]
		if !again {
			if c.lastWrite == nil {
				c.lastWrite = map[int32]int32{}
			}
			c.lastWrite[o.key] = int32(j)
			continue
		}
		if o.kind == history.Write && !o.val.IsNull() {
			c.mem += c.inter.add(asideKey{o.key, o.val}, intermediate{p: t.party(), op: int32(j), last: last})
		}
	}
}

// intermediate is a committed transaction's write that its own later write
// of the key overwrote: the write (op) and the last (last).
type intermediate struct {
	p        party
	op, last int32
}
