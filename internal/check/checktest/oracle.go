package checktest

import (
	"cmp"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// The naive timestamp oracle: what a read must return by the timestamps,
// found by brute force, which the timestamp checkers' tests are held to.

// NaiveSnapshot returns k's value that transaction t must read first: the
// final write of the latest committed writer visible to it, or the
// initial value.
func NaiveSnapshot(h *history.History, t history.TxnID, k history.KeyID, ser bool) history.Value {
	best, v := -1, h.InitialValue(k)
	for w := range h.Txns {
		if h.Txns[w].Status != history.Committed || !Visible(h, w, int(t), ser) {
			continue
		}
		fv, ok := FinalWrite(&h.Txns[w], k)
		if ok && (best < 0 || less(commitOf(h, best, ser), commitOf(h, w, ser))) {
			best, v = w, fv
		}
	}
	return v
}

// NaiveList is the list at k in transaction i's snapshot: the appends of
// the committed transactions visible to it, in replay order of their
// commits.
func NaiveList(h *history.History, i int, k history.KeyID, ser bool) []history.Value {
	var ws []int
	for w := range h.Txns {
		if h.Txns[w].Status == history.Committed && Visible(h, w, i, ser) {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b int) int {
		if less(commitOf(h, a, ser), commitOf(h, b, ser)) {
			return -1
		}
		return 1
	})
	var out []history.Value
	for _, w := range ws {
		for _, op := range h.Txns[w].Ops {
			if op.Kind == history.Append && op.Key == k {
				out = append(out, op.Value)
			}
		}
	}
	return out
}

// Replay positions: a transaction's start and commit as comparable keys
// (timestamp, class, file position), the rule of the package doc: at one
// timestamp commits of transactions that started earlier, then
// transactions that start and commit there, then starts.
type pos struct {
	ts    uint64
	class int
	idx   int
	sub   int
}

func less(a, b pos) bool {
	return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.class, b.class), cmp.Compare(a.idx, b.idx), cmp.Compare(a.sub, b.sub)) < 0
}

// startOf and commitOf place transaction i under SI (a commit below the
// start counts as the start).
func startOf(h *history.History, i int) pos {
	t := &h.Txns[i]
	s := min(t.StartTS, t.CommitTS)
	if s == t.CommitTS {
		return pos{s, 1, i, 0}
	}
	return pos{s, 2, i, 0}
}

func commitOf(h *history.History, i int, ser bool) pos {
	t := &h.Txns[i]
	if ser {
		return pos{t.CommitTS, 0, i, 0}
	}
	if min(t.StartTS, t.CommitTS) == t.CommitTS {
		return pos{t.CommitTS, 1, i, 1}
	}
	return pos{t.CommitTS, 0, i, 0}
}

// Visible says whether w's writes are in t's snapshot (SI) or before t in
// commit order (SER).
func Visible(h *history.History, w, t int, ser bool) bool {
	if w == t {
		return false
	}
	if ser {
		return less(commitOf(h, w, true), commitOf(h, t, true))
	}
	return less(commitOf(h, w, false), startOf(h, t))
}

// FinalWrite returns t's last write of k (a delete writes null), if any.
func FinalWrite(t *history.Txn, k history.KeyID) (history.Value, bool) {
	for j := len(t.Ops) - 1; j >= 0; j-- {
		if op := t.Ops[j]; op.Key == k && (op.Kind == history.Write || op.Kind == history.Delete) {
			return op.Value, true // a delete's Value is null
		}
	}
	return history.Value{}, false
}
