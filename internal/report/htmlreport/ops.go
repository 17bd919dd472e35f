package htmlreport

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/evidence"
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

// highlight finds the operations that make an anomaly: for each edge of
// its cycle, those its evidence names (es, one per edge), on each side —
// for T1 --wr(x)--> T2, T1's write of x and T2's read of it; for so and
// rt edges, whole transactions — and for a non-cycle anomaly, the
// operations it names (or, when a result was read back from JSON without
// them, the reads and writes of its key).
func highlight(h *history.History, a *anomaly.Anomaly, es []evidence.Edge) *highlights {
	hl := &highlights{ops: map[history.OpRef][]tag{}, txns: map[history.TxnID][]tag{}, init: map[history.KeyID][]tag{}}
	for i := range es {
		e := &es[i]
		lbl := edgeLabel(h, e.Step)
		cls := "dep-" + e.Dep.String()
		out := tag{cls, lbl + " → " + txnLabel(h, e.To)}
		in := tag{cls, lbl + " ← " + txnLabel(h, e.From)}
		if e.Dep == anomaly.SO || e.Dep == anomaly.RT {
			hl.txns[e.From] = append(hl.txns[e.From], out)
			hl.txns[e.To] = append(hl.txns[e.To], in)
			continue
		}
		for n, o := range e.Ops {
			g := out
			if n == 1 {
				g = in
			}
			if o.IsInitial() {
				hl.init[o.Key] = append(hl.init[o.Key], g)
				continue
			}
			if validRef(h, o.Ref) {
				hl.op(o.Ref.Txn, int(o.Ref.Op), g)
			}
		}
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
