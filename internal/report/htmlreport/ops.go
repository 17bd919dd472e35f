package htmlreport

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// tag marks a highlighted operation or transaction: Class is "dep-wr",
// "dep-rw", … for an edge of a cycle, "bad" for the operation at issue of
// a non-cycle anomaly and "rel" for the operations it concerns; Text says
// which edge ("wr(x) → T2").
type tag struct {
	Class, Text string
}

// highlights are the operations (and, for edges without a key, whole
// transactions) that make an anomaly, and the initial values it involves.
type highlights struct {
	ops  map[history.OpRef][]tag
	txns map[history.TxnID][]tag
	init map[history.KeyID][]tag
}

func (hl *highlights) op(t history.TxnID, j int, g tag) {
	r := history.OpRef{Txn: t, Op: int32(j)}
	if !slices.Contains(hl.ops[r], g) {
		hl.ops[r] = append(hl.ops[r], g)
	}
}

// highlight finds, for each edge of a's cycle, the operations on each side
// that make it: for T1 --wr(x)--> T2, T1's write of x and T2's read of it;
// for a non-cycle anomaly, the operations it names (or, when a result was
// read back from JSON without them, the reads and writes of its key).
func highlight(h *history.History, a *anomaly.Anomaly) *highlights {
	hl := &highlights{ops: map[history.OpRef][]tag{}, txns: map[history.TxnID][]tag{}, init: map[history.KeyID][]tag{}}
	for _, s := range a.Cycle {
		lbl := edgeLabel(h, s)
		cls := "dep-" + s.Dep.String()
		out := tag{cls, lbl + " → " + txnLabel(h, s.To)}
		in := tag{cls, lbl + " ← " + txnLabel(h, s.From)}
		hl.edge(h, s, out, in)
	}
	if a.IsCycle() {
		return hl
	}
	if len(a.Ops) > 0 {
		for i, r := range a.Ops {
			if !validRef(h, r) {
				continue
			}
			g := tag{"rel", "read at issue"}
			if h.Txns[r.Txn].Ops[r.Op].Kind.IsWrite() {
				g.Text = "write at issue"
			}
			if i == 0 {
				g = tag{"bad", a.Kind.String()}
			}
			hl.op(r.Txn, int(r.Op), g)
		}
		return hl
	}
	if a.Key == history.NoKey {
		return hl
	}
	for i, t := range a.Txns {
		if !validTxn(h, t) {
			continue
		}
		ops := h.Txns[t].Ops
		if i == 0 {
			js := matching(ops, func(op history.Op) bool { return readsValue(op, a.Key, a.Value) })
			if len(js) == 0 {
				js = matching(ops, func(op history.Op) bool { return readsKey(op, a.Key) })
			}
			for _, j := range js {
				hl.op(t, j, tag{"bad", a.Kind.String()})
			}
			continue
		}
		js := matching(ops, func(op history.Op) bool { return writesKey(op, a.Key) && op.Value == a.Value })
		if len(js) == 0 {
			js = matching(ops, func(op history.Op) bool { return writesKey(op, a.Key) })
		}
		for _, j := range js {
			hl.op(t, j, tag{"rel", "write at issue"})
		}
	}
	return hl
}

// edge highlights one edge's operations: out on the source's side, in on
// the target's.
func (hl *highlights) edge(h *history.History, s anomaly.Step, out, in tag) {
	k := s.Key
	side := func(t history.TxnID, g tag, js []int) {
		if t == history.Init {
			if k != history.NoKey {
				hl.init[k] = append(hl.init[k], g)
			}
			return
		}
		for _, j := range js {
			hl.op(t, j, g)
		}
	}
	ops := func(t history.TxnID) []history.Op {
		if !validTxn(h, t) {
			return nil
		}
		return h.Txns[t].Ops
	}
	from, to := ops(s.From), ops(s.To)
	if (s.From != history.Init && from == nil) || (s.To != history.Init && to == nil) {
		return
	}
	switch s.Dep {
	case anomaly.SO, anomaly.RT:
		hl.txns[s.From] = append(hl.txns[s.From], out)
		hl.txns[s.To] = append(hl.txns[s.To], in)
	case anomaly.WW:
		side(s.From, out, lastWrite(from, k))
		side(s.To, in, lastWrite(to, k))
	case anomaly.WR:
		reads := externalReads(to, k)
		var ws, rs []int
		for _, r := range reads {
			for _, j := range matching(from, func(op history.Op) bool { return writesKey(op, k) }) {
				if readsValue(to[r], k, from[j].Value) {
					ws, rs = appendNew(ws, j), appendNew(rs, r)
				}
			}
		}
		if len(rs) == 0 {
			ws, rs = lastWrite(from, k), reads
		}
		side(s.From, out, ws)
		side(s.To, in, rs)
	case anomaly.RW:
		side(s.From, out, externalReads(from, k))
		side(s.To, in, lastWrite(to, k))
	case anomaly.PWR:
		side(s.From, out, lastWrite(from, k))
		side(s.To, in, matching(to, func(op history.Op) bool { return covers(h, op, k) }))
	case anomaly.PRW:
		side(s.From, out, matching(from, func(op history.Op) bool { return covers(h, op, k) }))
		side(s.To, in, lastWrite(to, k))
	}
}

func appendNew(s []int, j int) []int {
	if slices.Contains(s, j) {
		return s
	}
	return append(s, j)
}

func validTxn(h *history.History, t history.TxnID) bool { return t >= 0 && int(t) < len(h.Txns) }

func validRef(h *history.History, r history.OpRef) bool {
	return validTxn(h, r.Txn) && r.Op >= 0 && int(r.Op) < len(h.Txns[r.Txn].Ops)
}

func matching(ops []history.Op, f func(history.Op) bool) []int {
	var out []int
	for j, op := range ops {
		if f(op) {
			out = append(out, j)
		}
	}
	return out
}

// writesKey reports whether op installs a version of k (any key when k is
// NoKey, as for a predicate edge without one).
func writesKey(op history.Op, k history.KeyID) bool {
	return op.Kind.IsWrite() && (op.Key == k || k == history.NoKey)
}

// lastWrite returns the position of the last write of k in ops: the
// version the transaction installed.
func lastWrite(ops []history.Op, k history.KeyID) []int {
	if k == history.NoKey {
		return matching(ops, func(op history.Op) bool { return op.Kind.IsWrite() })
	}
	for j := len(ops) - 1; j >= 0; j-- {
		if writesKey(ops[j], k) {
			return []int{j}
		}
	}
	return nil
}

// readsKey reports whether op observes k: a read or list read of it, or a
// range whose result holds it.
func readsKey(op history.Op, k history.KeyID) bool {
	switch op.Kind {
	case history.Read, history.ReadList:
		return op.Key == k
	case history.Scan, history.Iter:
		for _, p := range op.Range.Pairs {
			if p.Key == k {
				return true
			}
		}
	}
	return false
}

// readsValue reports whether op observed v at k: read it, found it in a
// list, or returned it from a range.
func readsValue(op history.Op, k history.KeyID, v history.Value) bool {
	switch op.Kind {
	case history.Read:
		return op.Key == k && op.Value == v
	case history.ReadList:
		return op.Key == k && slices.Contains(op.List, v)
	case history.Scan, history.Iter:
		for _, p := range op.Range.Pairs {
			if p.Key == k && p.Value == v {
				return true
			}
		}
	}
	return false
}

// externalReads returns the reads of k that precede the transaction's own
// writes of k: those that observe other transactions.
func externalReads(ops []history.Op, k history.KeyID) []int {
	var out []int
	for j, op := range ops {
		if writesKey(op, k) && k != history.NoKey {
			break
		}
		if readsKey(op, k) {
			out = append(out, j)
		}
	}
	return out
}

// covers reports whether op is a range whose bounds or result include k
// (every range when k is NoKey): a predicate read that observed k, or
// missed it.
func covers(h *history.History, op history.Op, k history.KeyID) bool {
	if !op.Kind.IsRange() {
		return false
	}
	if k == history.NoKey || readsKey(op, k) {
		return true
	}
	if int(k) >= len(h.Keys) {
		return false
	}
	kv, r := h.Keys[k], op.Range
	return history.Compare(r.Lo, kv) <= 0 && (r.HiOpen || history.Compare(kv, r.Hi) < 0)
}
