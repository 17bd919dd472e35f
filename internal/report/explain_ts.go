package report

import (
	"fmt"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// explainTimestamps explains the findings of the timestamp checker
// (chronos) with the database timestamps that prove them, or returns ""
// when a is not one of them (or lacks what the sentence needs).
func explainTimestamps(h *history.History, a *anomaly.Anomaly) string {
	ok := func(t history.TxnID) bool { return t >= 0 && int(t) < len(h.Txns) }
	for _, t := range a.Txns {
		if t != history.Init && !ok(t) {
			return ""
		}
	}
	st := func(t history.TxnID) uint64 { return h.Txns[t].StartTS }
	ct := func(t history.TxnID) uint64 { return h.Txns[t].CommitTS }
	key := keyName(h, a.Key)
	switch a.Kind {
	case anomaly.CommitBeforeStart:
		if len(a.Txns) != 1 || !ok(a.Txns[0]) {
			return ""
		}
		t := a.Txns[0]
		return fmt.Sprintf("%s has commit_ts %d, below its start_ts %d: it committed before it started", txn(h, t), ct(t), st(t))
	case anomaly.SessionGuaranteeViolation:
		if len(a.Txns) != 2 || !ok(a.Txns[0]) || !ok(a.Txns[1]) {
			return ""
		}
		p, t := a.Txns[0], a.Txns[1]
		if ct(p) > ct(t) {
			return fmt.Sprintf("%s ran before %s in the same session, but committed only at commit_ts %d, after %s had started (start_ts %d) and committed (commit_ts %d)",
				txn(h, p), txn(h, t), ct(p), txn(h, t), st(t), ct(t))
		}
		return fmt.Sprintf("%s ran before %s in the same session, but committed only at commit_ts %d, after %s started at start_ts %d: %s's snapshot leaves out its own session's earlier transaction",
			txn(h, p), txn(h, t), ct(p), txn(h, t), st(t), txn(h, t))
	case anomaly.ConcurrentWrite, anomaly.LostUpdate:
		if len(a.Txns) != 2 || !ok(a.Txns[0]) || !ok(a.Txns[1]) {
			return ""
		}
		t, u := a.Txns[0], a.Txns[1]
		if a.Phenomenon == anomaly.None {
			return fmt.Sprintf("%s and %s both wrote %s with the same commit_ts %d: the timestamps do not order their writes",
				txn(h, t), txn(h, u), key, ct(t))
		}
		if a.Kind == anomaly.LostUpdate {
			return fmt.Sprintf("%s (start_ts %d) read %s, then overwrote it at commit_ts %d, though %s wrote %s at commit_ts %d, after %s started: %s's update is lost",
				txn(h, u), st(u), key, ct(u), txn(h, t), key, ct(t), txn(h, u), txn(h, t))
		}
		return fmt.Sprintf("%s (start_ts %d, commit_ts %d) and %s (start_ts %d, commit_ts %d) both wrote %s while both ran: %s started before %s committed, and snapshot isolation lets only one of two concurrent writers of a key commit",
			txn(h, t), st(t), ct(t), txn(h, u), st(u), ct(u), key, txn(h, u), txn(h, t))
	case anomaly.StaleRead, anomaly.ReadBeyondSnapshot:
		return explainExt(h, a)
	}
	return ""
}

// explainExt explains a read at the wrong version: for a value,
// Txns are the reader, the value's writer (or Init) and the snapshot's
// writer of the key (or Init); for a list, the reader and the appender of
// the element at issue (a.Value).
func explainExt(h *history.History, a *anomaly.Anomaly) string {
	if len(a.Ops) == 0 || len(a.Txns) < 2 || a.Txns[0] < 0 {
		return ""
	}
	t := a.Txns[0]
	r := a.Ops[0]
	if r.Txn != t || r.Op < 0 || int(r.Op) >= len(h.Txns[t].Ops) {
		return ""
	}
	si := a.Phenomenon == anomaly.GSIa || a.Phenomenon == anomaly.GSIb
	point := fmt.Sprintf("its snapshot (start_ts %d)", h.Txns[t].StartTS)
	if !si {
		point = fmt.Sprintf("its place in commit-timestamp order (commit_ts %d)", h.Txns[t].CommitTS)
	}
	key := keyName(h, a.Key)
	committed := func(w history.TxnID) string {
		switch {
		case w == history.Init:
			return "the initial state"
		case !h.Txns[w].HasCommitTS:
			return fmt.Sprintf("%s, which has no commit_ts", txn(h, w))
		}
		return fmt.Sprintf("%s at commit_ts %d", txn(h, w), h.Txns[w].CommitTS)
	}
	if len(a.Txns) == 2 { // a list
		w := a.Txns[1]
		read := fmt.Sprintf("%s=%s", key, observed(h, r, a.Key))
		if a.Kind == anomaly.StaleRead {
			return fmt.Sprintf("%s read %s at %s, but element %s, appended by %s, is missing or out of place",
				txn(h, t), read, point, a.Value, committed(w))
		}
		return fmt.Sprintf("%s read %s at %s, but element %s was appended by %s, after that point",
			txn(h, t), read, point, a.Value, committed(w))
	}
	w, f := a.Txns[1], a.Txns[2]
	fv := h.InitialValue(a.Key)
	if f != history.Init {
		if last := lastWriteOf(h, f, a.Key); last >= 0 {
			fv = h.Installed(h.Txns[f].Ops[last])
		}
	}
	held := fmt.Sprintf("%s=%s from %s", key, stateString(fv), committed(f))
	if a.Kind == anomaly.StaleRead {
		return fmt.Sprintf("%s read %s=%s at %s, which held %s: %s=%s is the older version from %s",
			txn(h, t), key, a.Value, point, held, key, a.Value, committed(w))
	}
	return fmt.Sprintf("%s read %s=%s, written by %s, after %s, which held %s",
		txn(h, t), key, a.Value, committed(w), point, held)
}

// lastWriteOf returns the position of t's last write or delete of k, or -1.
func lastWriteOf(h *history.History, t history.TxnID, k history.KeyID) int {
	ops := h.Txns[t].Ops
	for j := len(ops) - 1; j >= 0; j-- {
		if (ops[j].Kind == history.Write || ops[j].Kind == history.Delete) && ops[j].Key == k {
			return j
		}
	}
	return -1
}

// stateString renders a key's state: a value, or absent.
func stateString(v history.Value) string {
	if v == history.Tombstone {
		return "a tombstone"
	}
	if v.IsNull() {
		return "null (absent)"
	}
	return v.String()
}

// listString renders a list read as the notation and the JSON result
// write it: "[1,2,3]".
func listString(l []history.Value) string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}
