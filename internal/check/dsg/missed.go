package dsg

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// Missed is the anomaly of a read that missed a write it depended on, the
// violation of a commit-order axiom (read committed, read atomic, causal
// consistency): reader read key k from writer (Init for the initial
// state), while over, which also writes k, reaches reader by path (steps
// of session order and write-read from over to reader) and is ordered
// after writer (the axiom puts over before writer; the rest of the
// commit order puts writer before over). Its cycle is path followed by
// the anti-dependency reader →rw(k) over, the Adya form of the axiom's
// premise and conclusion, named by anomaly.Classify: a session guarantee
// violation, a non-monotonic or fractured read, a causality violation.
// pred says the read was a scan's or an iterator's (prw). read is the
// operation that read k (its first, for a transaction that read the same
// thing more than once).
func Missed(h *history.History, path []anomaly.Step, read history.OpRef, writer, over history.TxnID, k history.KeyID, pred bool) anomaly.Anomaly {
	reader := read.Txn
	rw := anomaly.RW
	if pred {
		rw = anomaly.PRW
	}
	cycle := append(slices.Clip(path), anomaly.Step{From: reader, To: over, Dep: rw, Key: k})
	a := StepsAnomaly(h, cycle)
	if writer != history.Init && !slices.Contains(a.Txns, writer) {
		a.Txns = append(a.Txns, writer)
	}
	a.Ops = []history.OpRef{read}
	for _, t := range []history.TxnID{writer, over} {
		if w, ok := LastWrite(h, t, k); ok {
			a.Ops = append(a.Ops, w)
		}
	}
	return a
}

// LastWrite returns t's last write or delete of k.
func LastWrite(h *history.History, t history.TxnID, k history.KeyID) (history.OpRef, bool) {
	if t < 0 || int(t) >= len(h.Txns) {
		return history.OpRef{}, false
	}
	ops := h.Txns[t].Ops
	for j := len(ops) - 1; j >= 0; j-- {
		if (ops[j].Kind == history.Write || ops[j].Kind == history.Delete) && ops[j].Key == k {
			return history.OpRef{Txn: t, Op: int32(j)}, true
		}
	}
	return history.OpRef{}, false
}
