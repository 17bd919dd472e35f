package online

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// shrink returns a history of just the transactions a names in h (its
// transactions, its cycle's, its operations' and its core's), with a
// renamed to it: a finding kept for the whole stream then holds a few
// transactions, not the window it was found in.
func shrink(h *history.History, a anomaly.Anomaly) (*history.History, anomaly.Anomaly) {
	var ids []history.TxnID
	add := func(t history.TxnID) {
		if t >= 0 && int(t) < len(h.Txns) && !slices.Contains(ids, t) {
			ids = append(ids, t)
		}
	}
	for _, t := range a.Txns {
		add(t)
	}
	for _, st := range a.Cycle {
		add(st.From)
		add(st.To)
	}
	for _, o := range a.Ops {
		add(o.Txn)
	}
	for _, t := range a.Core {
		add(t)
	}
	slices.Sort(ids)
	out := history.New()
	out.Header = h.Header
	out.Header.VersionOrder = nil
	out.Header.Initial = history.Initial{}
	txn := map[history.TxnID]history.TxnID{}
	sess := map[int32]int32{}
	key := func(k history.KeyID) history.KeyID {
		if k < 0 || int(k) >= len(h.Keys) {
			return k
		}
		return out.Key(h.Keys[k])
	}
	for _, t := range ids {
		src := h.Txns[t]
		s, ok := sess[src.Session]
		if !ok {
			s = int32(len(out.Sessions))
			out.Sessions = append(out.Sessions, h.Sessions[src.Session])
			sess[src.Session] = s
		}
		c := src
		c.Session = s
		c.Ops = slices.Clone(src.Ops)
		for j := range c.Ops {
			c.Ops[j].Key = key(c.Ops[j].Key)
			c.Ops[j].List = slices.Clone(c.Ops[j].List)
		}
		txn[t] = history.TxnID(len(out.Txns))
		out.Txns = append(out.Txns, c)
	}
	re := func(t history.TxnID) history.TxnID {
		if n, ok := txn[t]; ok {
			return n
		}
		return t
	}
	b := a
	b.Txns = make([]history.TxnID, len(a.Txns))
	for i, t := range a.Txns {
		b.Txns[i] = re(t)
	}
	b.Cycle = slices.Clone(a.Cycle)
	for i := range b.Cycle {
		b.Cycle[i].From, b.Cycle[i].To, b.Cycle[i].Key = re(a.Cycle[i].From), re(a.Cycle[i].To), key(a.Cycle[i].Key)
	}
	b.Ops = slices.Clone(a.Ops)
	for i := range b.Ops {
		b.Ops[i].Txn = re(a.Ops[i].Txn)
	}
	b.Core = slices.Clone(a.Core)
	for i := range b.Core {
		b.Core[i] = re(a.Core[i])
	}
	b.Key = key(a.Key)
	return out, b
}
