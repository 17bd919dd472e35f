package polygraph

import (
	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// The reads: each external observation of a key with its candidate
// writers.

// Read is one external read and the transactions whose final write of its
// key holds the value read (Init for the initial state): its candidate
// writers. With one candidate the wr edge is known; with several the
// solver chooses (VeriStrong's uncertain WR, §3.2).
type Read struct {
	R     history.TxnID
	Key   history.KeyID
	Cands []history.TxnID
	// Writes says R itself writes or deletes the key (read-modify-write):
	// whichever candidate it read from precedes it in the version order.
	Writes bool
	// Pred says every observation behind the read came from a scan or
	// iterator: its dependencies are predicate ones (pwr, prw).
	Pred bool
	// Op is the position in R of the (first) operation behind the read.
	Op int32
}

// wrDep is the kind of the read's read dependency: wr, or pwr for a
// predicate read.
func (r Read) wrDep() anomaly.Dep {
	if r.Pred {
		return anomaly.PWR
	}
	return anomaly.WR
}

// rwDep is the kind of the read's anti-dependencies: rw, or prw.
func (r Read) rwDep() anomaly.Dep {
	if r.Pred {
		return anomaly.PRW
	}
	return anomaly.RW
}

// readsOf returns the keys t observed externally — by reads, scans and
// iterators, once per key and observation — with their candidate writers:
// transactions that took effect or are of unknown status whose final write
// or delete of the key left what was observed, and the initial state.
func (p *Polygraph) readsOf(t history.TxnID) []Read {
	ix, h := p.ix, p.h
	ops := h.Txns[t].Ops
	var out []Read
	var seen []history.Observation
	// A large transaction (Cobra's fauna-page has 860 operations in one)
	// looks its earlier observations and its written keys up in maps
	// instead of scanning for them: the scans are quadratic in its size.
	var (
		seenAt  map[observed]int
		written map[history.KeyID]bool
	)
	if len(ops) > largeTxn {
		seenAt = make(map[observed]int)
		written = writtenKeys(ops)
	}
	ix.Observations(t, func(o history.Observation) {
		if o.Own >= 0 {
			return
		}
		if !p.spec.perRead {
			if seenAt != nil {
				if i, ok := seenAt[observed{o.Key, o.Seen, o.Value}]; ok {
					out[i].Pred = out[i].Pred && o.Pred
					return
				}
				seenAt[observed{o.Key, o.Seen, o.Value}] = len(out)
			} else {
				for i, s := range seen {
					if s.Key == o.Key && s.Seen == o.Seen && s.Value == o.Value {
						out[i].Pred = out[i].Pred && o.Pred
						return
					}
				}
			}
		}
		writes := false
		if written != nil {
			writes = written[o.Key]
		} else {
			writes = writesKey(ops, o.Key)
		}
		r := Read{R: t, Key: o.Key, Writes: writes, Pred: o.Pred, Op: o.Op}
		if ix.InitiallySeen(o) {
			r.Cands = append(r.Cands, history.Init)
		}
		ix.Sources(o, func(w int32) bool {
			ref := ix.WriteRef(w)
			// A transaction has one final write of the key, and the
			// writes come in file order: a repeat can only be the last.
			if ref.Txn == t || !ix.WriteIsFinal(w) || len(r.Cands) > 0 && r.Cands[len(r.Cands)-1] == ref.Txn {
				return true
			}
			if ix.Effective(ref.Txn) || h.Txns[ref.Txn].Status == history.Unknown {
				r.Cands = append(r.Cands, ref.Txn)
			}
			return true
		})
		// An observation nobody can have served is reported by the shared
		// checks; it takes no part here. The slot in seen still keeps
		// out aligned.
		if seenAt == nil {
			seen = append(seen, o)
		}
		out = append(out, r)
	})
	kept := out[:0]
	for _, r := range out {
		if len(r.Cands) > 0 {
			kept = append(kept, r)
		}
	}
	return kept
}

// largeTxn is the number of operations past which a transaction's reads
// look up, rather than scan for, what the transaction did before.
const largeTxn = 32

// observed is what an observation saw of a key, as a map key.
type observed struct {
	k    history.KeyID
	seen history.Seen
	v    history.Value
}

// writtenKeys returns the keys ops write or delete.
func writtenKeys(ops []history.Op) map[history.KeyID]bool {
	w := make(map[history.KeyID]bool)
	for _, op := range ops {
		if op.Kind == history.Write || op.Kind == history.Delete {
			w[op.Key] = true
		}
	}
	return w
}

// writesKey reports whether ops write or delete k.
func writesKey(ops []history.Op, k history.KeyID) bool {
	for _, op := range ops {
		if (op.Kind == history.Write || op.Kind == history.Delete) && op.Key == k {
			return true
		}
	}
	return false
}
