package aion

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/chronos"
	"github.com/isoscope/isoscope/internal/history"
)

// add checks the arriving transaction t and re-checks what it affects:
// Step ① of Algorithm 3 (Session, Int, Ext of t), Step ② (NoConflict with
// the transactions overlapping t) and Step ③ (Ext of the pending readers
// whose snapshot now sees t's writes).
func (c *Checker) add(t *txn) {
	ops := c.ops
	c.stats.Checked++
	if !c.ser && t.cts < t.sts {
		if c.cfg.Axioms != KeyAxioms {
			c.reportAt([]party{t.party()}, []*txn{t}, anomaly.Anomaly{Kind: anomaly.CommitBeforeStart, Txns: []history.TxnID{0}, Key: history.NoKey})
		}
		t.sts = t.cts
	}
	if t.sts < c.maxW || t.cts < c.maxW {
		if err := c.reload(min(t.sts, t.cts)); err != nil && c.err == nil {
			c.err = err
		}
	}
	c.markLists(ops)
	if c.cfg.Axioms != KeyAxioms {
		c.sessionCheck(t)
	}
	c.intCheck(t, ops)
	c.byID.put(t)
	c.mem += t.bytes()
	t.seq = c.nextSeq
	c.nextSeq++

	c.queue = append(c.queue, t) // pending from here on

	// Step ①: t's external reads against its snapshot.
	t.deadline = c.now + c.timeout
	snap := t.snapPos(c.ser)
	for j, o := range ops {
		if o.kind != history.Read || !firstOn(ops, j) || c.isList(o.key) {
			continue
		}
		bad := !chronos.Agrees(o.val, c.frontierValue(o.key, snap))
		c.addReader(t, o.key, snap, reader{n: o.val.N, op: int32(j), kind: o.val.Kind, bad: bad})
	}
	if c.lists {
		for _, a := range c.listReads(t, ops, true) {
			k := ops[a.j].key
			bad := !c.listEquals(k, snap, a.prefix(ops))
			c.addReader(t, k, snap, reader{n: int64(a.n), op: int32(a.j), list: true, bad: bad})
		}
		c.indexAppends(t, ops)
	}
	c.pendingReads += int64(t.readers)

	// t's versions: the final write of each key it writes.
	var nw int
	c.addKeys, nw = written(ops, c.addKeys)
	keys := c.addKeys
	if nw > len(keys) {
		c.indexIntermediate(t, ops) // some key is written twice
	}
	cp := t.commitPos(c.ser)
	for _, k := range keys {
		ks := &c.ks[k]
		i := c.versionAt(k, cp)
		c.at = append(c.at, i)
		val := finalWrite(ops, k)
		var elems []history.Value
		if c.isList(k) {
			elems = appendsTo(ops, k)
		}
		v := newVersion(cp, t.sts, t.sess, val, elems)
		before := cap(ks.vers)
		// Under SER a writer of k with t's commit_ts is a neighbour of
		// t's version; appended, t's only neighbour is the last version.
		neighbours := true
		if i == len(ks.vers) {
			neighbours = i > 0 && ks.lastTS == t.cts
			ks.vers = append(ks.vers, v)
			ks.lastTS, ks.lastVal = cp.ts, val
		} else {
			ks.vers = slices.Insert(ks.vers, i, v)
		}
		c.mem += int64(cap(ks.vers)-before) * versionBytes
		if d := t.cts - min(t.sts, t.cts); d > ks.maxDur {
			ks.maxDur = d
		}
		if c.ser && neighbours {
			c.sameCommit(t, k, i)
		}
	}

	// Step ②: NoConflict with the writers of t's keys that overlap it.
	if !c.ser {
		c.noConflict(t, keys)
	}

	// Step ③: readers whose snapshot sees t's write now.
	for n, k := range keys {
		c.recheck(t, k, c.at[n])
	}
	c.at = c.at[:0]

	s := &c.sessLast[t.sess]
	*s = t.party()
}

// firstOn reports whether operation j is the first on its key.
func firstOn(ops []op, j int) bool {
	k := ops[j].key
	for i := range j {
		if ops[i].key == k {
			return false
		}
	}
	return true
}

// finalWrite is t's last write of k.
func finalWrite(ops []op, k int32) history.Value {
	for j := len(ops) - 1; j >= 0; j-- {
		if ops[j].key == k && ops[j].kind.IsWrite() {
			return ops[j].val
		}
	}
	return history.NullValue
}

// written returns the distinct keys ops write, in the reverse order of
// their first write (the order Chronos visits a transaction's ongoing
// entries at its commit), in buf's array, and how many writes ops hold.
func written(ops []op, buf []int32) (keys []int32, writes int) {
	out := buf[:0]
	for _, o := range ops {
		if !o.kind.IsWrite() {
			continue
		}
		writes++
		if !slices.Contains(out, o.key) {
			out = append(out, o.key)
		}
	}
	slices.Reverse(out)
	return out, writes
}

// sessionCheck is the Session axiom: the previous transaction of t's
// session to arrive committed before t's snapshot (SI: its start; SER: its
// commit).
func (c *Checker) sessionCheck(t *txn) {
	p := c.sessLast[t.sess]
	if p.sess < 0 {
		return
	}
	if cmpPos(commitPos(c.ser, p.id, p.sts, p.cts), t.snapPos(c.ser)) < 0 {
		return
	}
	c.reportAt([]party{p, t.party()}, []*txn{nil, t}, anomaly.Anomaly{Kind: anomaly.SessionGuaranteeViolation, Txns: []history.TxnID{0, 1}, Key: history.NoKey})
}

// intCheck is the Int axiom for t's internal reads: a read after t's own
// write of the key returns that write (not-my-own-write, or
// not-my-last-write when it returns an earlier one of t's writes), and a
// read after a read, with no write between, returns the same (a
// non-repeatable read, reported once per key).
func (c *Checker) intCheck(t *txn, ops []op) {
	var nrr []int32
	for j, o := range ops {
		if o.kind != history.Read || c.isList(o.key) {
			continue
		}
		last, first := -1, -1
		for i := j - 1; i >= 0; i-- {
			if ops[i].key != o.key {
				continue
			}
			if last < 0 {
				last = i
			}
			first = i
		}
		if last < 0 {
			continue
		}
		ref := history.OpRef{Txn: 0, Op: int32(j)}
		p := ops[last]
		if p.kind.IsWrite() {
			if chronos.Agrees(o.val, p.val) {
				continue
			}
			a := anomaly.Anomaly{Kind: anomaly.NotMyOwnWrite, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: o.val,
				Ops: []history.OpRef{ref, {Txn: 0, Op: int32(last)}}}
			for i := range last {
				if q := ops[i]; q.key == o.key && q.kind.IsWrite() && chronos.Agrees(o.val, q.val) {
					a.Kind = anomaly.NotMyLastWrite
					a.Ops = []history.OpRef{ref, {Txn: 0, Op: int32(i)}, {Txn: 0, Op: int32(last)}}
					break
				}
			}
			c.reportAt([]party{t.party()}, []*txn{t}, a)
			continue
		}
		if chronos.Agrees(o.val, p.val) || slices.Contains(nrr, o.key) {
			continue
		}
		nrr = append(nrr, o.key)
		c.reportAt([]party{t.party()}, []*txn{t}, anomaly.Anomaly{Kind: anomaly.NonRepeatableRead, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: o.val,
			Ops: []history.OpRef{{Txn: 0, Op: int32(first)}, ref}})
	}
}

// sameCommit reports, under SER, two writers of k with one commit_ts
// (version i is t's): nothing orders them.
func (c *Checker) sameCommit(t *txn, k int32, i int) {
	vs := c.ks[k].vers
	for _, n := range []int{i - 1, i + 1} {
		if n < 0 || n >= len(vs) || vs[n].cts != t.cts {
			continue
		}
		w := c.byID.get(vs[n].ID())
		first, second := w, t
		pf, ps := vs[n].party(), t.party()
		if n > i {
			first, second, pf, ps = t, w, ps, pf
		}
		a := anomaly.Anomaly{Kind: anomaly.ConcurrentWrite, Txns: []history.TxnID{0, 1}, Key: history.KeyID(k)}
		v := c.violation([]party{pf, ps}, []*txn{first, second}, a)
		v.Anomaly.Ops = []history.OpRef{lastWriteOr(v.History, 0, k), lastWriteOr(v.History, 1, k)}
		c.report(v)
	}
}

// lastWriteOr is chronos.LastWrite in a violation's history, which may
// lack a spilled party's operations.
func lastWriteOr(h *history.History, t history.TxnID, k int32) history.OpRef {
	return chronos.LastWrite(h, t, history.KeyID(k))
}

// noConflict is Step ②: every writer u of a key t writes whose
// [start, commit] interval overlaps t's conflicts with it; one finding per
// pair, made as Chronos makes it at the earlier commit.
func (c *Checker) noConflict(t *txn, keys []int32) {
	c.partners = c.partners[:0]
	ts, tc := startPos(t.id, t.sts, t.cts), t.commitPos(false)
	for _, k := range keys {
		ks := &c.ks[k]
		vs := ks.vers
		i := searchBack(len(vs), func(i int) bool { return vs[i].cts >= t.sts })
		for ; i < len(vs) && vs[i].cts <= t.cts+ks.maxDur; i++ {
			v := &vs[i]
			if v.ID() == t.id {
				continue
			}
			uc := v.pos()
			us := startPos(v.ID(), v.sts, v.cts)
			var overlap bool
			if cmpPos(uc, tc) < 0 {
				overlap = cmpPos(ts, uc) < 0
			} else {
				overlap = cmpPos(us, tc) < 0
			}
			if !overlap {
				continue
			}
			u := c.byID.get(v.ID())
			if u == nil || slices.Contains(c.partners, u) {
				continue
			}
			c.partners = append(c.partners, u)
		}
	}
	for _, u := range c.partners {
		first, second := t, u
		if cmpPos(u.commitPos(false), tc) < 0 {
			first, second = u, t
		}
		c.conflict(first, second)
	}
}

// conflict reports that first, committing, and second, still running,
// wrote the same keys: keyed like Chronos, by the first shared key in the
// order first's entries are visited, or the first one second read before
// writing (a lost update).
func (c *Checker) conflict(first, second *txn) {
	a := anomaly.Anomaly{Kind: anomaly.ConcurrentWrite, Phenomenon: anomaly.GSIa, Txns: []history.TxnID{0, 1}, Key: history.NoKey}
	v := c.violation([]party{first.party(), second.party()}, []*txn{first, second}, a)
	secondOps := second.ops()
	c.scratchKeys, _ = written(first.ops(), c.scratchKeys)
	for _, k := range c.scratchKeys {
		if !writes(secondOps, k) {
			continue
		}
		lost := v.History.ReadsFirst(1, history.KeyID(k))
		switch {
		case v.Anomaly.Key == history.NoKey:
			v.Anomaly.Key = history.KeyID(k)
			if lost {
				v.Anomaly.Kind = anomaly.LostUpdate
			}
		case v.Anomaly.Kind == anomaly.ConcurrentWrite && lost:
			v.Anomaly.Kind, v.Anomaly.Key = anomaly.LostUpdate, history.KeyID(k)
		}
	}
	v.Anomaly.Ops = chronos.ConflictOps(v.History, 0, 1, v.Anomaly.Key, v.Anomaly.Kind == anomaly.LostUpdate)
	c.report(v)
}

// writes reports whether ops write k.
func writes(ops []op, k int32) bool {
	for _, o := range ops {
		if o.key == k && o.kind.IsWrite() {
			return true
		}
	}
	return false
}

// recheck is Step ③ for key k, where t's version is the i-th: the pending readers whose snapshot lies
// after t's commit and no later than the next version's commit now see
// t's version.
func (c *Checker) recheck(t *txn, k int32, i int) {
	ks := &c.ks[k]
	cp := t.commitPos(c.ser)
	val := ks.vers[i].value()
	var next *pos
	if i+1 < len(ks.vers) {
		p := ks.vers[i+1].pos()
		next = &p
	}
	first := c.readerAfter(k, cp) // may drop final readers
	rs := ks.readers
	list := c.isList(k)
	for r := first; r < len(rs); r++ {
		rd := &rs[r]
		if !list && next != nil && c.cmpReader(rd, *next) > 0 {
			break // a value: later readers see the next version
		}
		u := c.pending(rd.seq)
		if u == nil || u == t {
			continue
		}
		if rd.list {
			// A list: every later state holds t's elements.
			uops := u.ops()
			c.setBad(rd, u, !c.listEquals(k, u.snapPos(c.ser), listAccess{j: int(rd.op), n: int(rd.n)}.prefix(uops)))
			continue
		}
		c.setBad(rd, u, !chronos.Agrees(c.value(rd), val))
	}
}

// addReader registers r, a read of k by t (just arrived) at snapshot snap,
// in k's readers, in snapshot order.
func (c *Checker) addReader(t *txn, k int32, snap pos, r reader) {
	r.ts, r.lo, r.seq = snap.ts, snap.lo, t.seq
	if r.bad {
		t.bad++
	}
	ks := &c.ks[k]
	if len(ks.readers) == cap(ks.readers) {
		c.trimReaders(ks)
	}
	i := c.readerAfter(k, snap)
	before := cap(ks.readers)
	if i == len(ks.readers) {
		ks.readers = append(ks.readers, r)
	} else {
		ks.readers = slices.Insert(ks.readers, i, r)
	}
	c.mem += int64(cap(ks.readers)-before) * readerBytes
	ks.maxReaderTS = max(ks.maxReaderTS, snap.ts)
	c.readers++
	t.readers++
}

// setBad records that reader rd of pending transaction u now disagrees
// with its snapshot (bad) or agrees, counting a flip-flop when u's verdict
// changes.
func (c *Checker) setBad(rd *reader, u *txn, bad bool) {
	if bad == rd.bad {
		return
	}
	rd.bad = bad
	before := u.bad > 0
	if bad {
		u.bad++
	} else {
		u.bad--
	}
	if before != (u.bad > 0) {
		c.stats.FlipFlops++
	}
}
