package htmlreport

import (
	"cmp"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// window is one timeline: the transactions of some sessions around some
// anomalies (or the whole history when it is small).
type window struct {
	// txns are the transactions drawn, in file order.
	txns []history.TxnID
	// anomalies are the indices of the anomalies it shows, in order.
	anomalies []int
	// lanes are the sessions the anomalies involve, drawn first, in order.
	lanes []int32
	// whole says the window is the whole history.
	whole bool
}

// involved returns an anomaly's transactions that the history holds (not
// the initial state), each once, in order of appearance.
func involved(h *history.History, a *anomaly.Anomaly) []history.TxnID {
	var out []history.TxnID
	add := func(t history.TxnID) {
		if validTxn(h, t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, s := range a.Cycle {
		add(s.From)
	}
	for _, t := range a.Txns {
		add(t)
	}
	for _, r := range a.Ops {
		add(r.Txn)
	}
	return out
}

// planTimelines chooses what the timeline draws: a history of at most
// o.WholeTimeline transactions whole; otherwise, for each shown anomaly,
// the o.Neighbours transactions before and after each of its transactions
// in that transaction's session, and for context the o.Neighbours/2
// before and after it in file order, whatever their session. Windows
// that share a transaction are merged, up to o.MaxBars bars in all. It
// returns the windows and the shown anomalies left without one.
func planTimelines(h *history.History, as []anomaly.Anomaly, shown []int, o *Options) ([]window, []int) {
	if len(h.Txns) <= o.WholeTimeline {
		w := window{whole: true, anomalies: shown}
		w.txns = make([]history.TxnID, len(h.Txns))
		for i := range w.txns {
			w.txns[i] = history.TxnID(i)
		}
		return []window{w}, nil
	}
	// The session order of every session an anomaly involves, in one pass.
	bySession := map[int32][]history.TxnID{}
	for _, i := range shown {
		for _, t := range involved(h, &as[i]) {
			bySession[h.Txns[t].Session] = nil
		}
	}
	for i := range h.Txns {
		s := h.Txns[i].Session
		if l, ok := bySession[s]; ok {
			bySession[s] = append(l, history.TxnID(i))
		}
	}
	var (
		windows []*window
		owner   = map[history.TxnID]*window{}
		left    []int
		bars    int
	)
	for _, i := range shown {
		set := map[history.TxnID]bool{}
		var lanes []int32
		ctx := history.TxnID(o.Neighbours / 2)
		for _, t := range involved(h, &as[i]) {
			s := h.Txns[t].Session
			if !slices.Contains(lanes, s) {
				lanes = append(lanes, s)
			}
			l := bySession[s]
			j, _ := slices.BinarySearch(l, t)
			for _, u := range l[max(0, j-o.Neighbours):min(len(l), j+o.Neighbours+1)] {
				set[u] = true
			}
			for u := max(0, t-ctx); u <= min(history.TxnID(len(h.Txns)-1), t+ctx); u++ {
				set[u] = true
			}
		}
		fresh := 0
		for t := range set {
			if owner[t] == nil {
				fresh++
			}
		}
		if len(set) == 0 || bars+fresh > o.MaxBars {
			left = append(left, i)
			continue
		}
		bars += fresh
		// Merge every window this one touches into the first of them.
		var into *window
		for _, t := range sortedTxns(set) {
			w := owner[t]
			switch {
			case w == nil || w == into:
				continue
			case into == nil:
				into = w
				continue
			}
			into.anomalies = append(into.anomalies, w.anomalies...)
			for _, l := range w.lanes {
				if !slices.Contains(into.lanes, l) {
					into.lanes = append(into.lanes, l)
				}
			}
			for _, u := range w.txns {
				owner[u] = into
			}
			into.txns = append(into.txns, w.txns...)
			w.txns, w.anomalies = nil, nil
		}
		if into == nil {
			into = &window{}
			windows = append(windows, into)
		}
		into.anomalies = append(into.anomalies, i)
		for _, l := range lanes {
			if !slices.Contains(into.lanes, l) {
				into.lanes = append(into.lanes, l)
			}
		}
		for t := range set {
			if owner[t] == nil {
				owner[t] = into
				into.txns = append(into.txns, t)
			}
		}
	}
	var out []window
	for _, w := range windows {
		if len(w.txns) == 0 {
			continue
		}
		slices.Sort(w.txns)
		slices.Sort(w.anomalies)
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b window) int { return cmp.Compare(a.txns[0], b.txns[0]) })
	return out, left
}

func sortedTxns(set map[history.TxnID]bool) []history.TxnID {
	out := make([]history.TxnID, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
