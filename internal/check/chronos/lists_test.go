package chronos_test

import (
	"context"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

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
				v = checktest.NaiveList(h, i, op.Key, ser)
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
				if ser && h.Txns[i].CommitTS == h.Txns[j].CommitTS || !ser && !checktest.Visible(h, i, j, false) && !checktest.Visible(h, j, i, false) {
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
	agreesWithAxioms(t, 2000, 31, checktest.TimestampedLists, naiveListsValid, func(h *history.History, id level.ID) (bool, string, error) {
		if ok, err := reference.Check(h, id); err == nil && !ok {
			return false, "the black-box oracle", nil
		}
		res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "list-append"})
		return res.Outcome == check.Satisfied, "list-append", err // an error: e.g. a history without appends
	})
}
