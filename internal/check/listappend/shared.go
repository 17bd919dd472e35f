package listappend

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// Reads whose lists share their storage (history.Lists: the native reader
// makes each key's reads slices of one array) are prefixes of one another,
// and what the checks of a list's elements find depends on the elements
// alone — who appended each, whether it took effect, whether one repeats
// (history.Repeats) — but for the reader's own appends. So the checks
// remember, for each array two or more reads share, how far its elements
// have been looked at, and each read looks only past that
// (history.Looked): a history whose 70,000 reads return 93 million
// elements looks at a few hundred thousand. A list that shares its array
// with no other read is checked as before, element by element.

// sharedArrays counts the reads of each array that two or more list reads
// of h's effective transactions share.
func sharedArrays(h *history.History, effective func(history.TxnID) bool) map[history.ListArray]*arrayState {
	uses := map[history.ListArray]int{}
	for i := range h.Txns {
		if !effective(history.TxnID(i)) {
			continue
		}
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.ReadList && len(op.List) > 1 {
				uses[history.ArrayOf(op.Key, op.List)]++
			}
		}
	}
	shared := map[history.ListArray]*arrayState{}
	for id, n := range uses {
		if n > 1 {
			shared[id] = &arrayState{}
		}
	}
	return shared
}

// arrayState is what the checks know of an array's first elements: clean
// ones from the first were appended by a transaction that took effect
// (stuck: the next was not); pos is where each of the first indexed is,
// kept once an own append is looked for in more than smallExt of them.
type arrayState struct {
	clean   int
	stuck   bool
	pos     map[history.Value]int
	indexed int
}

// smallExt is how many clean elements an own append is looked for among
// one by one before the array's elements get a map of their positions.
const smallExt = 256

// cleanUpTo extends the clean elements as far as ext allows and reports
// whether all of ext's are: appended by transactions that took effect,
// none of them t (whose appends to k are own).
func (a *analysis) cleanUpTo(s *arrayState, k history.KeyID, ext []history.Value, t history.TxnID) bool {
	for !s.stuck && s.clean < len(ext) {
		e := ext[s.clean]
		w, found := a.appends.get(k, e)
		if !found || !a.effective[w.t] {
			s.stuck = true
			break
		}
		s.clean++
	}
	if s.clean < len(ext) {
		return false
	}
	for _, op := range a.h.Txns[t].Ops {
		if op.Kind != history.Append || op.Key != k {
			continue
		}
		if len(ext) <= smallExt {
			if slices.Contains(ext, op.Value) {
				return false
			}
			continue
		}
		if s.pos == nil {
			s.pos = make(map[history.Value]int, len(ext))
		}
		for ; s.indexed < len(ext); s.indexed++ {
			s.pos[ext[s.indexed]] = s.indexed
		}
		if i, in := s.pos[op.Value]; in && i < len(ext) {
			return false
		}
	}
	return true
}

// lastOnly is elements for a read whose elements but the last are known to
// be fine: only the last can be an intermediate append.
func (a *analysis) lastOnly(t history.TxnID, ref history.OpRef, k history.KeyID, ext []history.Value) {
	if len(ext) == 0 {
		return
	}
	e := ext[len(ext)-1]
	if w := a.appends.at(k, e); !w.last && a.l.Proscribes.Has(anomaly.G1b) {
		a.add(anomaly.IntermediateRead, anomaly.G1b, k, e, []history.TxnID{t, w.t}, ref, history.OpRef{Txn: w.t, Op: w.op})
	}
}

// samePrefix reports whether list equals order's first len(list)
// elements, at once when both are slices of one array from its start.
func samePrefix(order, list []history.Value) bool {
	if len(list) > len(order) {
		return false
	}
	if len(list) == 0 || &list[0] == &order[0] {
		return true
	}
	return slices.Equal(order[:len(list)], list)
}
