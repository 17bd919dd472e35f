package chronos

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// lview is what the transaction being checked should see of a list key it
// touched (the paper's int_val): a base — the snapshot's list, or what its
// last read of the key returned — followed by its own appends since. The
// base is shared with the frontier or the read, never written.
type lview struct {
	k        history.KeyID
	base     []history.Value
	tail     []history.Value
	fromRead bool  // the base is the transaction's own read
	appended bool  // the transaction appended to the key before
	lastRead int32 // the operation of the last read, when fromRead
}

// view returns the transaction's view of k, or nil before its first access.
func (s *sim) view(k history.KeyID, st uint32) *lview {
	if s.touched[k] != st {
		return nil
	}
	for i := range s.views {
		if s.views[i].k == k {
			return &s.views[i]
		}
	}
	return nil
}

// newView starts the view of k, reusing the scratch space of earlier ones.
func (s *sim) newView(k history.KeyID, st uint32) *lview {
	s.touched[k] = st
	n := len(s.views)
	if n < cap(s.views) {
		s.views = s.views[:n+1]
	} else {
		s.views = append(s.views, lview{})
	}
	v := &s.views[n]
	*v = lview{k: k, tail: v.tail[:0], lastRead: -1}
	return v
}

// listAppend extends t's view of the key of operation j.
func (s *sim) listAppend(t history.TxnID, j int, st uint32) {
	op := s.h.Txns[t].Ops[j]
	v := s.view(op.Key, st)
	if v == nil {
		v = s.newView(op.Key, st)
		v.base = slices.Clip(s.list[op.Key])
	}
	v.tail = append(v.tail, op.Value)
	v.appended = true
}

// listRead checks t's list read r (operation j; nil for a read of null):
// the first access of a key must return the frontier's list (Ext), a later
// one the transaction's view (Int).
func (s *sim) listRead(t history.TxnID, j int, r []history.Value, st uint32) {
	k := s.h.Txns[t].Ops[j].Key
	ref := history.OpRef{Txn: t, Op: int32(j)}
	v := s.view(k, st)
	if v != nil && v.appended && s.h.Txns[t].Ops[j].Kind == history.Read {
		return // a read of null after an own append: the shared checks report it
	}
	if e, dup := DuplicateElement(&s.repeats, r); dup {
		s.found = append(s.found, anomaly.Anomaly{Kind: anomaly.DuplicateElements, Txns: []history.TxnID{t}, Key: k, Value: e, Ops: []history.OpRef{ref}})
		return
	}
	if v == nil {
		if snap := s.list[k]; !slices.Equal(r, snap) {
			s.listExt(t, ref, k, r, snap)
		}
		v = s.newView(k, st)
	} else if !v.sees(r) {
		n := len(v.tail)
		switch {
		case n > 0 && (len(r) < n || !slices.Equal(r[len(r)-n:], v.tail)):
			s.found = append(s.found, anomaly.Anomaly{Kind: anomaly.NotMyOwnWrite, Txns: []history.TxnID{t}, Key: k, Value: v.tail[n-1],
				Ops: []history.OpRef{ref, lastAppendBefore(s.h, t, k, j)}})
		case n > 0 && !v.fromRead:
			s.listExt(t, ref, k, r[:len(r)-n], s.list[k])
		default:
			last := history.NullValue
			if len(r) > 0 {
				last = r[len(r)-1]
			}
			s.found = append(s.found, anomaly.Anomaly{Kind: anomaly.NonRepeatableRead, Txns: []history.TxnID{t}, Key: k, Value: last,
				Ops: []history.OpRef{{Txn: t, Op: v.lastRead}, ref}})
		}
	}
	v.base, v.tail, v.fromRead, v.lastRead = r, v.tail[:0], true, int32(j)
}

// sees reports whether r is the view.
func (v *lview) sees(r []history.Value) bool {
	n := len(v.base)
	return len(r) == n+len(v.tail) && slices.Equal(r[:n], v.base) && slices.Equal(r[n:], v.tail)
}

// lastAppendBefore returns t's last append to k before operation j.
func lastAppendBefore(h *history.History, t history.TxnID, k history.KeyID, j int) history.OpRef {
	ops := h.Txns[t].Ops
	for i := j - 1; i >= 0; i-- {
		if ops[i].Kind == history.Append && ops[i].Key == k {
			return history.OpRef{Txn: t, Op: int32(i)}
		}
	}
	return history.OpRef{Txn: t, Op: -1}
}

// listExt reports the external list r that t read at k, which differs
// from the snapshot's list snap: first what the elements alone show (an
// element nobody appended, t's own later one, an aborted transaction's,
// an intermediate state), then where r leaves the snapshot: an element
// whose append had not committed (read beyond the snapshot) or a
// committed one missing or out of place (stale read).
func (s *sim) listExt(t history.TxnID, ref history.OpRef, k history.KeyID, r, snap []history.Value) {
	if s.apps == nil {
		s.apps = appenders(s.h)
	}
	add := func(kind anomaly.Kind, ph anomaly.Phenomenon, e history.Value, txns []history.TxnID, ops ...history.OpRef) {
		s.found = append(s.found, anomaly.Anomaly{Kind: kind, Phenomenon: ph, Txns: txns, Key: k, Value: e, Ops: append([]history.OpRef{ref}, ops...)})
	}
	for _, e := range r {
		a, ok := s.apps[elemKey{k, e}]
		switch {
		case !ok:
			add(anomaly.ThinAirRead, anomaly.None, e, []history.TxnID{t})
			return
		case a.Txn == t:
			add(anomaly.FutureRead, anomaly.None, e, []history.TxnID{t}, a)
			return
		case !s.eff[a.Txn] && s.h.Txns[a.Txn].Status != history.Unknown:
			add(anomaly.AbortedRead, anomaly.G1a, e, []history.TxnID{t, a.Txn}, a)
			return
		}
	}
	if len(r) > 0 {
		e := r[len(r)-1]
		a := s.apps[elemKey{k, e}]
		if last := LastWrite(s.h, a.Txn, k); last.Op != a.Op {
			add(anomaly.IntermediateRead, anomaly.G1b, e, []history.TxnID{t, a.Txn}, a, last)
			return
		}
	}
	i := 0
	for i < len(r) && i < len(snap) && r[i] == snap[i] {
		i++
	}
	if i < len(r) {
		if a := s.apps[elemKey{k, r[i]}]; s.state[a.Txn] != committed || i >= len(snap) {
			add(anomaly.ReadBeyondSnapshot, ExtPhenomenon(s.ser, anomaly.ReadBeyondSnapshot), r[i], []history.TxnID{t, a.Txn}, a)
			return
		}
	}
	if i < len(snap) {
		a := s.apps[elemKey{k, snap[i]}]
		add(anomaly.StaleRead, ExtPhenomenon(s.ser, anomaly.StaleRead), snap[i], []history.TxnID{t, a.Txn}, a)
	}
}
