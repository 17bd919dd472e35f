package chronos_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// randomLists builds a small random list-append history with random
// timestamps: appends of fresh elements and list reads over a few keys.
// Each list read returns, with probability honest, what the timestamps say
// (naiveList), and otherwise that list with its last element dropped or
// another key's appended element added.
func randomLists(r *rand.Rand, txns, keys, sessions int, honest float64, ser bool) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.IntValue(int64(k)))
	}
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		t.StartTS = uint64(r.IntN(3 * txns))
		t.CommitTS = t.StartTS + uint64(r.IntN(6))
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(4) {
			k := key[r.IntN(keys)]
			if r.IntN(2) == 0 {
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: k})
				continue
			}
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: k, Value: history.IntValue(next)})
			next++
		}
		h.Txns = append(h.Txns, t)
	}
	for i := range h.Txns {
		views := map[history.KeyID][]history.Value{}
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			v, touched := views[op.Key]
			if !touched {
				v = naiveList(h, i, op.Key, ser)
			}
			if op.Kind == history.Append {
				views[op.Key] = append(slices.Clip(v), op.Value)
				continue
			}
			if r.Float64() >= honest {
				if len(v) > 0 && r.IntN(2) == 0 {
					v = v[:len(v)-1]
				} else {
					v = append(slices.Clip(v), history.IntValue(1+r.Int64N(next)))
				}
			}
			op.List = slices.Clone(v)
			views[op.Key] = op.List
		}
	}
	return h
}

// naiveList is the list at k in transaction i's snapshot: the appends of
// the committed transactions visible to it, in replay order of their
// commits.
func naiveList(h *history.History, i int, k history.KeyID, ser bool) []history.Value {
	var ws []int
	for w := range h.Txns {
		if h.Txns[w].Status == history.Committed && visible(h, w, i, ser) {
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

// naiveListsValid decides a list history by the axioms, pairwise: no commit
// below a start (SI), session predecessors visible, each read the
// snapshot's list (first access) or the transaction's view, no two
// overlapping appenders of a key (SI) or equally timestamped ones (SER).
func naiveListsValid(h *history.History, ser bool) bool {
	live, ok := sessionAxioms(h, ser)
	if !ok {
		return false
	}
	for _, i := range live {
		t := &h.Txns[i]
		views := map[history.KeyID][]history.Value{}
		for _, op := range t.Ops {
			v, touched := views[op.Key]
			if !touched {
				v = naiveList(h, i, op.Key, ser)
			}
			if op.Kind == history.Append {
				views[op.Key] = append(slices.Clip(v), op.Value)
				continue
			}
			if !slices.Equal(v, op.List) {
				return false
			}
			views[op.Key] = op.List
		}
	}
	appends := func(i int, k history.KeyID) bool {
		return slices.ContainsFunc(h.Txns[i].Ops, func(op history.Op) bool { return op.Kind == history.Append && op.Key == k })
	}
	for a, i := range live {
		for _, j := range live[a+1:] {
			for _, op := range h.Txns[i].Ops {
				if op.Kind != history.Append || !appends(j, op.Key) {
					continue
				}
				if ser && h.Txns[i].CommitTS == h.Txns[j].CommitTS || !ser && !visible(h, i, j, false) && !visible(h, j, i, false) {
					return false
				}
			}
		}
	}
	return true
}

// TestDifferentialLists: on random small list-append histories with
// timestamps, chronos agrees with the pairwise axioms, and where it
// accepts, the brute-force oracle and the black-box list-append checker
// accept too.
func TestDifferentialLists(t *testing.T) {
	agreesWithAxioms(t, 2000, 31, randomLists, naiveListsValid, func(h *history.History, id level.ID) (bool, string, error) {
		if ok, err := reference.Check(h, id); err == nil && !ok {
			return false, "the black-box oracle", nil
		}
		res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "list-append"})
		return res.Outcome == check.Satisfied, "list-append", err // an error: e.g. a history without appends
	})
}
