package check_test

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/evidence"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// spoilLists changes some list reads of h in place: an element nobody
// appended, one repeated, an element of an aborted transaction, one the
// reader appends later, the last element dropped or two swapped.
func spoilLists(r *rand.Rand, h *history.History) {
	var aborted []history.Op
	for i := range h.Txns {
		if h.Txns[i].Status == history.Aborted {
			for _, op := range h.Txns[i].Ops {
				if op.Kind == history.Append {
					aborted = append(aborted, op)
				}
			}
		}
	}
	for i := range h.Txns {
		ops := h.Txns[i].Ops
		for j := range ops {
			op := &ops[j]
			if op.Kind != history.ReadList || r.IntN(6) != 0 {
				continue
			}
			l := slices.Clone(op.List)
			switch r.IntN(6) {
			case 0:
				l = append(l, history.IntValue(1000+r.Int64N(5)))
			case 1:
				if len(l) > 0 {
					l = append(l, l[r.IntN(len(l))])
				}
			case 2:
				for _, a := range aborted {
					if a.Key == op.Key {
						l = slices.Insert(l, r.IntN(len(l)+1), a.Value)
						break
					}
				}
			case 3:
				for _, a := range ops[j:] {
					if a.Kind == history.Append && a.Key == op.Key {
						l = slices.Insert(l, r.IntN(len(l)+1), a.Value)
						break
					}
				}
			case 4:
				if len(l) > 0 {
					l = l[:len(l)-1]
				}
			case 5:
				if len(l) > 1 {
					x := r.IntN(len(l) - 1)
					l[x], l[x+1] = l[x+1], l[x]
				}
			}
			op.List = l
		}
	}
}

// shareLists returns a copy of h whose list reads share their storage as
// the native reader makes them share it (history.Lists).
func shareLists(h *history.History) *history.History {
	out := *h
	out.Txns = slices.Clone(h.Txns)
	var lists history.Lists
	for i := range out.Txns {
		t := &out.Txns[i]
		t.Ops = slices.Clone(t.Ops)
		for j := range t.Ops {
			op := &t.Ops[j]
			if op.Kind != history.ReadList {
				continue
			}
			own := 0
			if t.Status != history.Committed {
				own = history.OwnTail(t.Ops[:j], op.Key, op.List)
			}
			op.List = lists.Share(h.Keys[op.Key], op.List, own)
		}
	}
	return &out
}

// spoiltListHistories calls f with thousands of histories from a store of
// stale snapshots (hundreds under -short), every other one spoilt, and
// returns how many.
func spoiltListHistories(f func(seed uint64, h *history.History)) int {
	n := 2000
	if testing.Short() {
		n = 300
	}
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 71))
		h := staleLists(r, 4+r.IntN(12), 1+r.IntN(3), 1+r.IntN(3))
		if seed%2 == 1 {
			spoilLists(r, h)
		}
		f(seed, h)
	}
	return n
}

// TestListSharingSameVerdicts: the list-append checker's shortcuts for
// reads whose lists share an array give exactly the verdicts and anomalies
// of its element-by-element checks, at every level, on thousands of
// histories from a store of stale snapshots, many of them spoilt (elements
// nobody appended, repeated, aborted, the reader's own, missing or out of
// order).
func TestListSharingSameVerdicts(t *testing.T) {
	shared, differ, withEvidence := 0, 0, 0
	n := spoiltListHistories(func(seed uint64, h *history.History) {
		hs := shareLists(h)
		arrays := map[*history.Value]int{}
		for i := range hs.Txns {
			for _, op := range hs.Txns[i].Ops {
				if op.Kind == history.ReadList && len(op.List) > 1 {
					arrays[&op.List[0]]++
				}
			}
		}
		for _, uses := range arrays {
			if uses > 1 {
				shared += uses
			}
		}
		for _, id := range listLevels {
			a, errA := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "list-append"})
			b, errB := check.Run(context.Background(), hs, level.Get(id), check.Options{Checker: "list-append"})
			same := (errA == nil) == (errB == nil) && a.Outcome == b.Outcome && reflect.DeepEqual(a.Anomalies, b.Anomalies)
			if same && len(a.Anomalies) > 0 {
				// The report's evidence of each edge: the list orders
				// the reads show, looked at once per shared array.
				same = reflect.DeepEqual(evidenceOf(h, id, a.Anomalies), evidenceOf(hs, id, b.Anomalies))
				withEvidence++
			}
			if !same {
				differ++
				if differ <= 3 {
					t.Errorf("seed %d %s: %v %v %v without sharing, %v %v %v with it\n%s", seed, level.Get(id).Name,
						a.Outcome, errA, kinds(a), b.Outcome, errB, kinds(b), history.Notation(h))
				}
			}
		}
	})
	if differ > 0 {
		t.Errorf("%d verdicts differ", differ)
	}
	if shared < n {
		t.Errorf("only %d reads share an array: the test does not reach the shortcuts", shared)
	}
	t.Logf("%d histories, %d list reads sharing an array, %d violations' evidence compared", n, shared, withEvidence)
}

// evidenceOf returns the evidence of every edge of every cycle of as.
func evidenceOf(h *history.History, id level.ID, as []anomaly.Anomaly) [][]evidence.Edge {
	f := evidence.New(history.NewIndex(h), level.Get(id), nil)
	f.Prepare(as)
	var out [][]evidence.Edge
	for i := range as {
		out = append(out, f.Cycle(&as[i]))
	}
	return out
}

// TestListEvidenceDeterministic: the evidence of a violation's edges (the
// known orders and the paths that force them) is the same in every run:
// the graph it searches is built in the order of keys and writers, not of
// Go's maps (12 of these histories' evidence changed between runs before).
func TestListEvidenceDeterministic(t *testing.T) {
	changed, compared := 0, 0
	spoiltListHistories(func(seed uint64, h *history.History) {
		for _, id := range listLevels {
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "list-append"})
			if err != nil || len(res.Anomalies) == 0 {
				continue
			}
			compared++
			first := evidenceOf(h, id, res.Anomalies)
			for range 3 {
				if !reflect.DeepEqual(first, evidenceOf(h, id, res.Anomalies)) {
					changed++
					if changed <= 3 {
						t.Errorf("seed %d %s: the evidence changed between runs\n%s", seed, level.Get(id).Name, history.Notation(h))
					}
					break
				}
			}
		}
	})
	if changed > 0 {
		t.Errorf("%d of %d violations' evidence changed between runs", changed, compared)
	}
}
