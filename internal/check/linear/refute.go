package linear

import (
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// refute looks, before any search, for a required operation R of register
// k that reads a value v no write can have left for it. In a linearization
// R reads from the last write placed before it (or the initial state), so
// a candidate writer W of v serves R only if W may come before R (it
// began before R ended) and no required write of another value is forced
// between them (one that began after W ended and ended before R began);
// the initial state serves R only if no required write at all ended
// before R began. When no candidate is left, every choice of R's writer
// closes a cycle through real time: R --rw--> Z --rt--> R for the write Z
// forced after W, or W --wr--> R --rt--> W for a W that began after R
// ended. It returns the first such R's cycle, in file order, with
// BestFound set when R had several candidate writers (the cycle is the
// one of its most recent candidate). O(n log n).
func refute(h *history.History, k *keyPlan) (anomaly.Anomaly, bool) {
	ops := k.ops
	// writers[v]: the operations writing v, by begin (ops are by begin).
	writers := make([][]int32, len(k.values))
	var zs []int32 // required writes, by end
	for i, o := range ops {
		if o.post == none {
			continue
		}
		writers[o.post] = append(writers[o.post], int32(i))
		if !o.optional {
			zs = append(zs, int32(i))
		}
	}
	slices.SortStableFunc(zs, func(a, b int32) int { return cmpInt(ops[a].end, ops[b].end) })
	zEnds := make([]int64, len(zs))
	// late[i] and other[i]: among zs[:i+1], the write that began last, and
	// the one that began last among those writing another value than it.
	late, other := make([]int32, len(zs)), make([]int32, len(zs))
	for i, z := range zs {
		zEnds[i] = ops[z].end
		late[i], other[i] = z, -1
		if i == 0 {
			continue
		}
		l, o := late[i-1], other[i-1]
		if ops[z].begin > ops[l].begin {
			if ops[z].post != ops[l].post {
				o = l // else o stays: it writes another value than l, which z writes
			}
			l = z
		} else if ops[z].post != ops[l].post && (o < 0 || ops[z].begin > ops[o].begin) {
			o = z
		}
		late[i], other[i] = l, o
	}
	// killer returns the required write of a value other than v that
	// ended before the instant `before` and began last (-1: none), and
	// whether any required write at all ended before it.
	killer := func(v int32, before int64) (int32, bool) {
		n, _ := slices.BinarySearch(zEnds, before)
		if n == 0 {
			return -1, false
		}
		if l := late[n-1]; ops[l].post != v {
			return l, true
		}
		return other[n-1], true
	}
	// For the writers of each value, by begin: the one that ends last
	// among the first i+1 (best[v][i]), and the one that ends last among
	// them but for that one (second[v][i]), so that a query can leave R
	// itself out.
	best, second := make([][]int32, len(writers)), make([][]int32, len(writers))
	begins := make([][]int64, len(writers))
	for v, ws := range writers {
		best[v], second[v], begins[v] = make([]int32, len(ws)), make([]int32, len(ws)), make([]int64, len(ws))
		b, s2 := int32(-1), int32(-1)
		for i, w := range ws {
			begins[v][i] = ops[w].begin
			switch {
			case b < 0 || ops[w].end > ops[b].end:
				b, s2 = w, b
			case s2 < 0 || ops[w].end > ops[s2].end:
				s2 = w
			}
			best[v][i], second[v][i] = b, s2
		}
	}
	order := make([]int32, len(ops))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return int(ops[a].txn) - int(ops[b].txn) })
	for _, r := range order {
		ro := &ops[r]
		if ro.optional || ro.pre == none {
			continue
		}
		v := ro.pre
		z, anyBefore := killer(v, ro.begin)
		candidates := len(writers[v])
		if ro.post == v {
			candidates-- // not its own source
		}
		if v == k.init {
			candidates++
		}
		if candidates == 0 || v == k.init && !anyBefore {
			continue
		}
		// recent: the candidate writer that may come before R (it began
		// before R ended) and ends last; it serves R unless a write of
		// another value is forced after it and before R.
		recent := int32(-1)
		if i, _ := slices.BinarySearch(begins[v], ro.end+1); i > 0 {
			if recent = best[v][i-1]; recent == r {
				recent = second[v][i-1]
			}
		}
		if recent >= 0 && (z < 0 || ops[recent].end >= ops[z].begin) {
			continue
		}
		early := int32(-1) // the candidate writer that began first
		for _, w := range writers[v] {
			if w != r {
				early = w
				break
			}
		}
		var cycle []anomaly.Step
		switch {
		case recent >= 0 || v == k.init && anyBefore:
			if z < 0 {
				// Only the initial state was a candidate, and every write
				// forced before R writes v: any of them overwrote it.
				n, _ := slices.BinarySearch(zEnds, ro.begin)
				z = late[n-1]
			}
			cycle = []anomaly.Step{{From: ro.txn, To: ops[z].txn, Dep: anomaly.RW, Key: k.key}, {From: ops[z].txn, To: ro.txn, Dep: anomaly.RT, Key: history.NoKey}}
		default:
			cycle = []anomaly.Step{{From: ops[early].txn, To: ro.txn, Dep: anomaly.WR, Key: k.key}, {From: ro.txn, To: ops[early].txn, Dep: anomaly.RT, Key: history.NoKey}}
		}
		kind, ph := anomaly.Classify(h, cycle)
		txns := make([]history.TxnID, len(cycle))
		for i, st := range cycle {
			txns[i] = st.From
		}
		return anomaly.Anomaly{Kind: kind, Phenomenon: ph, Txns: txns, Cycle: cycle, Key: k.key, BestFound: candidates > 1}, true
	}
	return anomaly.Anomaly{}, false
}

// cmpInt compares two instants.
func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// refuteSessions is refute for serializability, where only session order
// constrains the order: a required operation R that reads v can read from
// a write of v in another session, from the last write before it in its
// own session when that wrote v, or from the initial state when no write
// comes before it in its session. When none of these is left, every
// choice of its writer closes a cycle through session order:
// R --rw--> Z --so--> R for the last write Z before R in its session,
// which overwrote any earlier write of v (and the initial state), or
// W --wr--> R --so--> W when the only writers of v follow R in its
// session. It returns the first such R's cycle, in file order, with
// BestFound set when R had several candidate writers. O(n).
func refuteSessions(h *history.History, k *keyPlan) (anomaly.Anomaly, bool) {
	ops := k.ops
	writers := make([]int32, len(k.values)) // per value, in all sessions
	for _, o := range ops {
		if o.post != none {
			writers[o.post]++
		}
	}
	// inSession and prior count, per value, the writes in the session
	// being walked and those before the operation being walked; mark
	// stamps them with the session.
	inSession, prior, mark := make([]int32, len(k.values)), make([]int32, len(k.values)), make([]int32, len(k.values))
	var found anomaly.Anomaly
	first := history.TxnID(-1)
	for s, sess := range k.sessions {
		stamp := int32(s + 1)
		touch := func(v int32) {
			if mark[v] != stamp {
				mark[v], inSession[v], prior[v] = stamp, 0, 0
			}
		}
		for _, c := range sess {
			if v := ops[c].post; v != none {
				touch(v)
				inSession[v]++
			}
		}
		last := int32(-1) // the last write before the operation walked
		for _, c := range sess {
			o := &ops[c]
			if v := o.pre; v != none && !o.optional && (first < 0 || o.txn < first) {
				touch(v)
				own := inSession[v]
				if o.post == v {
					own-- // not its own source
				}
				var cycle []anomaly.Step
				switch {
				case writers[v]-inSession[v] > 0: // another session's write
				case last >= 0 && ops[last].post == v:
				case last < 0 && v == k.init:
				case last >= 0 && (prior[v] > 0 || v == k.init):
					cycle = []anomaly.Step{{From: o.txn, To: ops[last].txn, Dep: anomaly.RW, Key: k.key}, {From: ops[last].txn, To: o.txn, Dep: anomaly.SO, Key: history.NoKey}}
				default:
					// Only later operations of its own session write v.
					for _, w := range sess {
						if w != c && ops[w].post == v && ops[w].txn > o.txn {
							cycle = []anomaly.Step{{From: ops[w].txn, To: o.txn, Dep: anomaly.WR, Key: k.key}, {From: o.txn, To: ops[w].txn, Dep: anomaly.SO, Key: history.NoKey}}
							break
						}
					}
				}
				if cycle != nil {
					kind, ph := anomaly.Classify(h, cycle)
					candidates := own
					if v == k.init {
						candidates++
					}
					found = anomaly.Anomaly{Kind: kind, Phenomenon: ph, Txns: []history.TxnID{cycle[0].From, cycle[1].From}, Cycle: cycle, Key: k.key,
						BestFound: candidates > 1}
					first = o.txn
				}
			}
			if v := o.post; v != none {
				touch(v)
				prior[v]++
				last = c
			}
		}
	}
	return found, first >= 0
}
