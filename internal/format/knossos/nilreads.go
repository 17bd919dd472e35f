package knossos

import "github.com/isoscope/isoscope/internal/history"

// SkippedNilRead is the kind of operation (history.History.Skipped) that
// AnyValueNilReads leaves out.
const SkippedNilRead = "reads of nil taken as Knossos takes them, as reads of any value"

// AnyValueNilReads takes each register read of h (a history Read made)
// that completed with nil as Knossos's register models take it, as a read
// of any value: such a read constrains nothing (it is consistent with
// every state of the register and changes none), so it is left out. By
// default a read of nil is what it says, a read of the register's absent
// state, which after a completed write is a stale read. It returns how
// many reads it left out, and counts them in h.Skipped. A compare-and-set
// from nil is kept: Knossos compares its old value with the register's.
func AnyValueNilReads(h *history.History) int {
	renumber := make([]history.TxnID, len(h.Txns))
	kept := h.Txns[:0]
	dropped := 0
	for i, t := range h.Txns {
		if t.Status == history.Committed && len(t.Ops) == 1 && t.Ops[0].Kind == history.Read && t.Ops[0].Value.IsNull() {
			renumber[i] = -1
			dropped++
			continue
		}
		renumber[i] = history.TxnID(len(kept))
		kept = append(kept, t)
	}
	h.Txns = kept
	if dropped == 0 {
		return 0
	}
	parts := h.Parts[:0]
	for _, p := range h.Parts {
		txns := p.Txns[:0]
		for _, t := range p.Txns {
			if n := renumber[t]; n >= 0 {
				txns = append(txns, n)
			}
		}
		if len(txns) > 0 {
			p.Txns = txns
			parts = append(parts, p)
		}
	}
	if h.Parts != nil {
		h.Parts = parts
	}
	h.Skip(SkippedNilRead, dropped)
	return dropped
}
