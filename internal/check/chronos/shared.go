package chronos

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// The helpers below build Chronos's findings from a history alone, so that
// the online checker (internal/check/aion) reports the same anomalies, with
// the same transactions, operations and phenomena, as the offline replay.

// ConflictOps returns the operations of a NoConflict finding between t,
// the earlier committer, and u on k: u's first read of k when its update
// is lost (lost), then t's and u's last writes of k.
func ConflictOps(h *history.History, t, u history.TxnID, k history.KeyID, lost bool) []history.OpRef {
	var out []history.OpRef
	if lost {
		for j, op := range h.Txns[u].Ops {
			if op.Key == k && (op.Kind == history.Read || op.Kind == history.ReadList) {
				out = append(out, history.OpRef{Txn: u, Op: int32(j)})
				break
			}
		}
	}
	return append(out, LastWrite(h, t, k), LastWrite(h, u, k))
}

// LastWrite returns t's last write, delete or append of k (Op -1 when it
// has none).
func LastWrite(h *history.History, t history.TxnID, k history.KeyID) history.OpRef {
	ops := h.Txns[t].Ops
	for j := len(ops) - 1; j >= 0; j-- {
		if ops[j].Kind.IsWrite() && ops[j].Key == k {
			return history.OpRef{Txn: t, Op: int32(j)}
		}
	}
	return history.OpRef{Txn: t, Op: -1}
}

// Agrees reports whether a read of v agrees with state st: null reads
// agree with absence and tombstones.
func Agrees(v, st history.Value) bool {
	if v.IsNull() {
		return st.IsNull()
	}
	return v == st
}

// ExtPhenomenon is the phenomenon of a read at the wrong version (kind
// StaleRead or ReadBeyondSnapshot): under SI G-SIb for a stale read (a
// start-dependency with an anti-dependency back) and G-SIa for a read
// beyond the snapshot; under SER (ser) none (the commit order is not one
// of Adya's dependencies).
func ExtPhenomenon(ser bool, k anomaly.Kind) anomaly.Phenomenon {
	switch {
	case ser:
		return anomaly.None
	case k == anomaly.StaleRead:
		return anomaly.GSIb
	}
	return anomaly.GSIa
}

// DuplicateElement returns an element the list read r holds twice. For a
// list of more than 16 elements it is the first that repeats an earlier
// one, found by rep (when not nil), which looks into an array that other
// reads share only past what it saw of it before (history.Repeats).
func DuplicateElement(rep *history.Repeats, r []history.Value) (history.Value, bool) {
	if len(r) <= 16 {
		for i := range r {
			if slices.Contains(r[i+1:], r[i]) {
				return r[i], true
			}
		}
		return history.Value{}, false
	}
	if rep == nil {
		rep = &history.Repeats{}
	}
	return rep.First(r)
}
