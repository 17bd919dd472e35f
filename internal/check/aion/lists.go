package aion

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/chronos"
	"github.com/isoscope/isoscope/internal/history"
)

// Lists, as Chronos checks them (internal/check/chronos/lists.go): a list
// key's versions carry the elements their transactions appended, so the
// list a snapshot sees is the concatenation of the versions committed
// before it. A transaction's first access of a list key, if a read, must
// return that list (Ext); a read after its own appends with no read
// before must return it followed by those appends (Ext on the prefix, Int
// on the rest); a read after a read must return the earlier read followed
// by the appends since (Int). A late append re-checks every pending read
// of its key whose snapshot is after it: unlike a value, it changes every
// later state of the list. Lists are never spilled: their versions are
// their state.

// appender is the transaction that appended an element: its party, the
// append (op) and its last write of the key (last), which a read of the
// element as the list's last must see for it not to be an intermediate
// read.
type appender struct {
	p        party
	op, last int32
}

// markLists gives the keys of t's appends and list reads the list kind, and
// turns the pending plain reads of a key that becomes a list into list
// reads of nothing (as Chronos reads them, knowing the key's kind from the
// whole history).
func (c *Checker) markLists(ops []op) {
	for _, o := range ops {
		switch o.kind {
		case history.Append, history.ReadList:
			if c.kinds[o.key]&listKey != 0 {
				continue
			}
			c.kinds[o.key] |= listKey
			c.lists = true
			ks := &c.ks[o.key]
			for i := range ks.readers {
				rd := &ks.readers[i]
				u := c.pending(rd.seq)
				if u == nil || rd.list {
					continue
				}
				rd.list, rd.n = true, 0
				c.setBad(rd, u, !c.listEquals(o.key, u.snapPos(c.ser), nil))
			}
		case history.Write, history.Delete:
			c.kinds[o.key] |= kvKey
		}
	}
}

// isList reports whether k is a list key.
func (c *Checker) isList(k int32) bool { return c.kinds[k]&listKey != 0 }

// listAccess is one of a transaction's reads of a list key that Ext
// checks: operation j read the snapshot's list followed by its own last n
// appends.
type listAccess struct {
	j, n int
}

// listReads replays t's operations on its list keys (Chronos's views) and
// returns the reads Ext checks; with report set it reports the Int
// findings: a duplicate element, a read that lacks t's own appends
// (not-my-own-write), or one that differs from t's earlier read followed
// by the appends since (a non-repeatable read).
func (c *Checker) listReads(t *txn, ops []op, report bool) []listAccess {
	type view struct {
		k        int32
		base     []history.Value
		tail     []history.Value
		fromRead bool
		appended bool
		lastRead int
	}
	var views []view
	find := func(k int32) *view {
		for i := range views {
			if views[i].k == k {
				return &views[i]
			}
		}
		return nil
	}
	var out []listAccess
	for j, o := range ops {
		if !c.isList(o.key) {
			continue
		}
		v := find(o.key)
		switch o.kind {
		case history.Append:
			if v == nil {
				views = append(views, view{k: o.key, lastRead: -1})
				v = &views[len(views)-1]
			}
			v.tail = append(v.tail, o.val)
			v.appended = true
			continue
		case history.Read, history.ReadList:
		default:
			continue
		}
		if v != nil && v.appended && o.kind == history.Read {
			// A read of nothing after an own append (the shared checks'
			// finding, which Chronos leaves to them).
			if report {
				c.reportAt([]party{t.party()}, []*txn{t}, anomaly.Anomaly{Kind: anomaly.NotMyOwnWrite, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: o.val,
					Ops: []history.OpRef{{Txn: 0, Op: int32(j)}, lastAppendBefore(ops, o.key, j)}})
			}
			continue
		}
		r := o.list
		ref := history.OpRef{Txn: 0, Op: int32(j)}
		if e, dup := chronos.DuplicateElement(&c.repeats, r); dup {
			if report {
				c.reportAt([]party{t.party()}, []*txn{t}, anomaly.Anomaly{Kind: anomaly.DuplicateElements, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: e, Ops: []history.OpRef{ref}})
			}
			continue
		}
		switch {
		case v == nil:
			out = append(out, listAccess{j: j})
			views = append(views, view{k: o.key})
			v = &views[len(views)-1]
		case !v.fromRead:
			n := len(v.tail)
			if len(r) < n || !slices.Equal(r[len(r)-n:], v.tail) {
				if report {
					c.reportAt([]party{t.party()}, []*txn{t}, anomaly.Anomaly{Kind: anomaly.NotMyOwnWrite, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: v.tail[n-1],
						Ops: []history.OpRef{ref, lastAppendBefore(ops, o.key, j)}})
				}
			} else {
				out = append(out, listAccess{j: j, n: n})
			}
		default:
			n := len(v.base)
			if len(r) != n+len(v.tail) || !slices.Equal(r[:n], v.base) || !slices.Equal(r[n:], v.tail) {
				m := len(v.tail)
				switch {
				case m > 0 && (len(r) < m || !slices.Equal(r[len(r)-m:], v.tail)):
					if report {
						c.reportAt([]party{t.party()}, []*txn{t}, anomaly.Anomaly{Kind: anomaly.NotMyOwnWrite, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: v.tail[m-1],
							Ops: []history.OpRef{ref, lastAppendBefore(ops, o.key, j)}})
					}
				case report:
					last := history.NullValue
					if len(r) > 0 {
						last = r[len(r)-1]
					}
					c.reportAt([]party{t.party()}, []*txn{t}, anomaly.Anomaly{Kind: anomaly.NonRepeatableRead, Txns: []history.TxnID{0}, Key: history.KeyID(o.key), Value: last,
						Ops: []history.OpRef{{Txn: 0, Op: int32(v.lastRead)}, ref}})
				}
			}
		}
		v.base, v.tail, v.fromRead, v.lastRead = r, nil, true, j
	}
	return out
}

// lastAppendBefore is the last append to k before operation j.
func lastAppendBefore(ops []op, k int32, j int) history.OpRef {
	for i := j - 1; i >= 0; i-- {
		if ops[i].kind == history.Append && ops[i].key == k {
			return history.OpRef{Txn: 0, Op: int32(i)}
		}
	}
	return history.OpRef{Txn: 0, Op: -1}
}

// prefix is what list access a of ops must have read of the snapshot.
func (a listAccess) prefix(ops []op) []history.Value {
	r := ops[a.j].list
	return r[:len(r)-a.n]
}

// listEquals reports whether the list of k a snapshot at p sees is r.
func (c *Checker) listEquals(k int32, p pos, r []history.Value) bool {
	vs := c.ks[k].vers
	i := 0
	for n := range c.versionAt(k, p) {
		es := vs[n].elems()
		if i+len(es) > len(r) || !slices.Equal(r[i:i+len(es)], es) {
			return false
		}
		i += len(es)
	}
	return i == len(r)
}

// listAt is the list of k a snapshot at p sees.
func (c *Checker) listAt(k int32, p pos) []history.Value {
	var out []history.Value
	vs := c.ks[k].vers
	for n := range c.versionAt(k, p) {
		out = append(out, vs[n].elems()...)
	}
	return out
}

// appendsTo is what ops append to k, in order.
func appendsTo(ops []op, k int32) []history.Value {
	var out []history.Value
	for _, o := range ops {
		if o.kind == history.Append && o.key == k {
			out = append(out, o.val)
		}
	}
	return out
}

// indexAppends records t's appends in the element index.
func (c *Checker) indexAppends(t *txn, ops []op) {
	for j, o := range ops {
		if o.kind != history.Append {
			continue
		}
		k := asideKey{o.key, o.val}
		if _, ok := c.apps[k]; ok {
			continue
		}
		last := int32(j)
		for i := len(ops) - 1; i > j; i-- {
			if ops[i].key == o.key && ops[i].kind.IsWrite() {
				last = int32(i)
				break
			}
		}
		c.apps[k] = appender{p: t.party(), op: int32(j), last: last}
		c.mem += appenderBytes
	}
}

// appenderBytes estimates an element's entry in the element index and its
// place in its version.
const appenderBytes = 160

// listFinding explains why t's list access a (of ops) at k disagrees with
// the list snap its snapshot at sp sees, as Chronos's listExt does: first
// what the elements alone show (an element nobody appended, t's own later
// one, an aborted transaction's, an intermediate state), then where the
// read leaves the snapshot: an element appended after it (read beyond the
// snapshot) or a committed one missing or out of place (stale read). It
// returns false, for no verdict, when an element's appender is of
// unknown outcome.
func (c *Checker) listFinding(t *txn, ops []op, a listAccess, sp pos) (Violation, bool) {
	k := ops[a.j].key
	r := a.prefix(ops)
	snap := c.listAt(k, sp)
	ref := history.OpRef{Txn: 0, Op: int32(a.j)}
	mk := func(kind anomaly.Kind, ph anomaly.Phenomenon, e history.Value, with *appender, ops ...history.OpRef) Violation {
		parties, txns, ids := []party{t.party()}, []*txn{t}, []history.TxnID{0}
		refs := []history.OpRef{ref}
		if with != nil && with.p.id != t.id {
			parties, txns, ids = append(parties, with.p), append(txns, c.byID.get(with.p.id)), append(ids, 1)
		}
		for _, o := range ops {
			if with != nil && with.p.id == t.id {
				o.Txn = 0
			}
			refs = append(refs, o)
		}
		return c.violation(parties, txns, anomaly.Anomaly{Kind: kind, Phenomenon: ph, Txns: ids, Key: history.KeyID(k), Value: e, Ops: refs})
	}
	for _, e := range r {
		ap, ok := c.apps[asideKey{k, e}]
		switch w, aside := c.aside.get(asideKey{k, e}); {
		case ok && ap.p.id == t.id:
			return mk(anomaly.FutureRead, anomaly.None, e, &ap, history.OpRef{Txn: 0, Op: ap.op}), true
		case ok:
			continue
		case aside && w.status == history.Aborted:
			ab := appender{p: party{id: w.id, sess: asideSession}}
			return mk(anomaly.AbortedRead, anomaly.G1a, e, &ab, history.OpRef{Txn: 1, Op: w.op}), true
		case aside:
			return Violation{}, false // appended by a transaction that may have committed
		}
		return mk(anomaly.ThinAirRead, anomaly.None, e, nil), true
	}
	if len(r) > 0 {
		e := r[len(r)-1]
		if ap := c.apps[asideKey{k, e}]; ap.last != ap.op {
			return mk(anomaly.IntermediateRead, anomaly.G1b, e, &ap, history.OpRef{Txn: 1, Op: ap.op}, history.OpRef{Txn: 1, Op: ap.last}), true
		}
	}
	i := 0
	for i < len(r) && i < len(snap) && r[i] == snap[i] {
		i++
	}
	if i < len(r) {
		if ap := c.apps[asideKey{k, r[i]}]; i >= len(snap) || cmpPos(commitPos(c.ser, ap.p.id, ap.p.sts, ap.p.cts), sp) > 0 {
			return mk(anomaly.ReadBeyondSnapshot, chronos.ExtPhenomenon(c.ser, anomaly.ReadBeyondSnapshot), r[i], &ap, history.OpRef{Txn: 1, Op: ap.op}), true
		}
	}
	if i < len(snap) {
		ap := c.apps[asideKey{k, snap[i]}]
		return mk(anomaly.StaleRead, chronos.ExtPhenomenon(c.ser, anomaly.StaleRead), snap[i], &ap, history.OpRef{Txn: 1, Op: ap.op}), true
	}
	return Violation{}, false
}
