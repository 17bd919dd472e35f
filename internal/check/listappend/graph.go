package listappend

import (
	"cmp"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// reads checks every list read of the transactions that took effect:
// duplicates, own appends at the end, elements nobody appended, aborted or
// intermediate appends, non-repeatable reads; and keeps the external part
// of each read for the version order.
func (a *analysis) reads() {
	h := a.h
	shared := sharedArrays(h, func(t history.TxnID) bool { return a.effective[t] })
	nReads := 0
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.ReadList {
				nReads++
			}
		}
	}
	a.listReads = make([]readRef, 0, nReads)
	var repeats history.Repeats
	for i := range h.Txns {
		t := history.TxnID(i)
		if !a.effective[t] {
			continue
		}
		ops := h.Txns[i].Ops
		firstExternal := map[history.KeyID]int32{}
		for j, op := range ops {
			if op.Kind != history.ReadList {
				continue
			}
			ref := history.OpRef{Txn: t, Op: int32(j)}
			var st *arrayState // what is known of the list's array, when shared
			if len(op.List) > 1 {
				st = shared[history.ArrayOf(op.Key, op.List)]
			}
			if dup, isDup := repeats.First(op.List); isDup {
				a.add(anomaly.DuplicateElements, anomaly.None, op.Key, dup, []history.TxnID{t}, ref)
				continue
			}
			var own []history.Value
			lastOwn := -1
			for i, p := range ops[:j] {
				if p.Kind == history.Append && p.Key == op.Key {
					own = append(own, p.Value)
					lastOwn = i
				}
			}
			ext := op.List
			if len(own) > 0 {
				if len(ext) < len(own) || !slices.Equal(ext[len(ext)-len(own):], own) {
					a.add(anomaly.NotMyOwnWrite, anomaly.None, op.Key, own[len(own)-1], []history.TxnID{t}, ref, history.OpRef{Txn: t, Op: int32(lastOwn)})
					continue
				}
				ext = ext[:len(ext)-len(own)]
			}
			if st != nil && a.cleanUpTo(st, op.Key, ext, t) {
				a.lastOnly(t, ref, op.Key, ext)
			} else if !a.elements(t, ref, op.Key, ext) {
				continue
			}
			if len(own) == 0 {
				if f, ok := firstExternal[op.Key]; ok {
					if (len(ops[f].List) != len(op.List) || !samePrefix(ops[f].List, op.List)) && a.l.NoNonRepeatableReads {
						last := history.NullValue
						if len(op.List) > 0 {
							last = op.List[len(op.List)-1]
						}
						a.add(anomaly.NonRepeatableRead, anomaly.None, op.Key, last, []history.TxnID{t},
							history.OpRef{Txn: t, Op: f}, ref)
					}
				} else {
					firstExternal[op.Key] = int32(j)
				}
			}
			a.listReads = append(a.listReads, readRef{t: t, op: int32(j), k: op.Key, n: int32(len(ext))})
		}
	}
}

// elements checks the elements of an external list; false means the read
// cannot place itself in the version order (an element nobody appended).
func (a *analysis) elements(t history.TxnID, ref history.OpRef, k history.KeyID, ext []history.Value) bool {
	ok := true
	for n, e := range ext {
		w, found := a.appends.get(k, e)
		switch {
		case !found:
			a.add(anomaly.ThinAirRead, anomaly.None, k, e, []history.TxnID{t}, ref)
			ok = false
		case w.t == t:
			a.add(anomaly.FutureRead, anomaly.None, k, e, []history.TxnID{t}, ref, history.OpRef{Txn: t, Op: w.op})
			ok = false
		case !a.effective[w.t]:
			if a.l.Proscribes.Has(anomaly.G1a) {
				a.add(anomaly.AbortedRead, anomaly.G1a, k, e, []history.TxnID{t, w.t}, ref, history.OpRef{Txn: w.t, Op: w.op})
			}
		case n == len(ext)-1 && !w.last:
			if a.l.Proscribes.Has(anomaly.G1b) {
				a.add(anomaly.IntermediateRead, anomaly.G1b, k, e, []history.TxnID{t, w.t}, ref, history.OpRef{Txn: w.t, Op: w.op})
			}
		}
	}
	return ok
}

// graph builds the dependency graph that the lists' version order gives
// (collecting its edges first), without the split encoding, which
// snapshot isolation searches on it (splitOrder, split); check calls it
// once, last.
func (a *analysis) graph(l level.Level) *dsg.Graph {
	// Past the graph no step looks at the reads, the appends' index, the
	// lists' orders or the edges again (the guess looks at the graph and
	// the open keys; the solver, which snapshot isolation with open keys
	// may reach, collects the edges anew: again): the edges go straight
	// into the graph's builder, sized for about a wr and an rw edge per
	// read, a ww edge per append and the session and real-time edges, and
	// the rest goes before the graph is laid out.
	n := len(a.h.Txns)
	hint := len(a.listReads) + a.appends.len() + n
	if l.ID != level.ReadCommitted && l.ID != level.ReadUncommitted {
		hint += len(a.listReads) // rw edges (collect)
	}
	if l.RealTime {
		hint += 3 * n
	}
	a.sink, a.spent = dsg.NewEdges(n, false, hint), true
	a.collect(l)
	e := a.sink
	a.sink, a.listReads, a.appends, a.orders = nil, nil, appendIndex{}, nil
	return a.finish(l, e)
}

// splitAnti holds the labels of the anti-dependencies the lists give
// (antiDep): rw edges only.
var splitAnti = dsg.Mask(anomaly.RW)

// splitOrder returns a topological order of the split encoding of g, a
// graph build made (the snapshot-isolation graph, internal/check/dsg, with
// transaction t's second node Node(t)+n+1), without building it: the
// order TopoOrder gives on the built one (split), or false when it has a
// cycle. Snapshot isolation has no real time, so g has no auxiliary
// nodes.
func splitOrder(g *dsg.Graph) ([]int32, bool) {
	return graph.SplitTopoOrder(splitAnti, g.Mask, g.G)
}

// split returns the split encoding of g, a graph build made, built: the
// graph dsg.NewEdges builds from the same edges with split set, edge for
// edge and in the same order.
func (a *analysis) split(g *dsg.Graph) *dsg.Graph {
	second := int32(len(a.h.Txns) + 1)
	return &dsg.Graph{G: g.G.Split(splitAnti), Mask: g.Mask, Nodes: func(v int32) (history.TxnID, bool) {
		if v >= second {
			v -= second
		}
		return history.TxnID(v - 1), true
	}}
}

// collect gathers the edges the lists give, key by key, in edges, the keys whose unobserved appends the lists leave
// unordered in open, and incompatible orders in found.
func (a *analysis) collect(l level.Level) {
	h := a.h
	nk := len(h.Keys)
	// The reads grouped by key in file order: a counting sort.
	start := make([]int32, nk+1)
	for _, r := range a.listReads {
		start[r.k+1]++
	}
	for k := range nk {
		start[k+1] += start[k]
	}
	reads := make([]readRef, len(a.listReads))
	next := slices.Clone(start[:nk])
	for _, r := range a.listReads {
		reads[next[r.k]] = r
		next[r.k]++
	}
	next = nil
	if a.sink != nil {
		a.listReads = nil // graph looks at them no more
	}
	// The elements of each key that the flat tables do not hold.
	var others map[history.KeyID][]history.Value
	for ek := range a.appends.others {
		if others == nil {
			others = map[history.KeyID][]history.Value{}
		}
		others[ek.k] = append(others[ek.k], ek.e)
	}
	anti := l.ID != level.ReadCommitted && l.ID != level.ReadUncommitted
	if a.edges == nil && a.sink == nil {
		// About a wr and an rw edge per read and a ww edge per append.
		a.edges = make([]depEdge, 0, 2*len(reads)+a.appends.len())
	}
	for k := range nk {
		key := history.KeyID(k)
		kr := reads[start[k]:start[k+1]]
		if len(kr) == 0 && a.appends.keys[k].n == 0 && len(others[key]) == 0 {
			continue
		}
		a.key(key, kr, others[key], anti)
	}
}

// build builds a graph of the collected edges and extra (ww edges), with
// session order and real time as l asks, without the split encoding.
func (a *analysis) build(l level.Level, extra []checker.Edge) *dsg.Graph {
	h := a.h
	// The builder's arrays are sized for every edge, or growing them
	// would leave copies behind.
	hint := len(a.edges) + len(extra) + len(h.Txns)
	e := dsg.NewEdges(len(h.Txns), false, hint)
	for _, d := range a.edges {
		if d.anti {
			e.Anti(d.From, d.To, d.Dep, d.Key)
		} else {
			e.Dep(d.From, d.To, d.Dep, d.Key)
		}
	}
	for _, d := range extra {
		e.Dep(d.From, d.To, d.Dep, d.Key)
	}
	return a.finish(l, e)
}

// finish adds session order and real time to e as l asks and builds the
// graph.
func (a *analysis) finish(l level.Level, e *dsg.Edges) *dsg.Graph {
	h := a.h
	if l.SessionOrder {
		e.SessionOrder(h, a.isEffective)
	}
	if l.RealTime {
		e.RealTime(h, a.isEffective)
	}
	return e.Finish()
}

// depEdge is a collected edge: an anti-dependency or not.
type depEdge struct {
	checker.Edge
	anti bool
}

// dep collects a dependency that is not an anti-dependency, in the
// graph's builder when graph collects.
func (a *analysis) dep(from, to history.TxnID, d anomaly.Dep, k history.KeyID) {
	if a.sink != nil {
		a.sink.Dep(from, to, d, k)
		return
	}
	a.edges = append(a.edges, depEdge{Edge: checker.Edge{From: from, To: to, Dep: d, Key: k}})
}

// antiDep collects an anti-dependency, in the graph's builder when graph
// collects.
func (a *analysis) antiDep(from, to history.TxnID, d anomaly.Dep, k history.KeyID) {
	if a.sink != nil {
		a.sink.Anti(from, to, d, k)
		return
	}
	a.edges = append(a.edges, depEdge{Edge: checker.Edge{From: from, To: to, Dep: d, Key: k}, anti: true})
}

// key adds the edges of one key: its reads, and others, the elements
// appended to it that its flat table does not hold.
func (a *analysis) key(k history.KeyID, reads []readRef, others []history.Value, anti bool) {
	var order []history.Value
	var longest readRef
	for _, r := range reads {
		if int(r.n) > len(order) {
			order, longest = a.external(r), r
		}
	}
	if a.orders == nil {
		a.orders = map[history.KeyID][]history.Value{}
	}
	a.orders[k] = order
	// The appenders of order's elements, marked in the flat table (or,
	// for the elements it does not hold, kept in a set) so that the
	// unobserved appends are those not marked.
	appenders := make([]history.TxnID, len(order))
	var inOrder map[history.Value]bool
	for i, v := range order {
		if s := a.appends.slot(k, v); s != nil {
			appenders[i] = s.r.t
			s.seen = true
			continue
		}
		appenders[i] = a.appends.at(k, v).t
		if inOrder == nil {
			inOrder = map[history.Value]bool{}
		}
		inOrder[v] = true
	}
	appender := func(i int) history.TxnID {
		if i < 0 {
			return history.Init
		}
		return appenders[i]
	}
	// ww joins consecutive effective appenders; at read uncommitted also
	// across elements of appenders that did not take effect (package
	// comment). last is the last of them, when the list ends with one.
	last, haveLast := history.Init, false
	for i := range order {
		v := appender(i)
		if !a.isEffective(v) {
			haveLast = haveLast && a.l.ID == level.ReadUncommitted
			continue
		}
		if haveLast && last != v {
			a.dep(last, v, anomaly.WW, k)
		}
		last, haveLast = v, true
	}
	if !haveLast {
		last = history.Init
	}
	var unobserved []history.TxnID
	unseen := func(w history.TxnID) {
		if a.effective[w] && !slices.Contains(unobserved, w) {
			unobserved = append(unobserved, w)
		}
	}
	if d := a.appends.keys[k]; d.n > 0 {
		for i := range a.appends.slots[d.off : d.off+int64(d.n)] {
			s := &a.appends.slots[d.off+int64(i)]
			if s.ok && !s.seen {
				unseen(s.r.t)
			}
		}
	}
	for _, el := range others {
		if !inOrder[el] {
			unseen(a.appends.at(k, el).t)
		}
	}
	for _, v := range order {
		if s := a.appends.slot(k, v); s != nil {
			s.seen = false
		}
	}
	slices.Sort(unobserved)
	if len(unobserved) >= 2 {
		a.open = append(a.open, openKey{k, unobserved})
	}
	for _, u := range unobserved {
		if last != history.Init && last != u {
			a.dep(last, u, anomaly.WW, k)
		}
	}
	for _, r := range reads {
		p := int(r.n)
		if !samePrefix(order, a.external(r)) {
			a.add(anomaly.IncompatibleOrder, anomaly.None, k, history.NullValue, []history.TxnID{longest.t, r.t},
				history.OpRef{Txn: longest.t, Op: longest.op}, history.OpRef{Txn: r.t, Op: r.op})
			continue
		}
		if w := appender(p - 1); w != history.Init && w != r.t && a.isEffective(w) {
			a.dep(w, r.t, anomaly.WR, k)
		}
		if !anti {
			continue
		}
		if p < len(order) {
			if next := appender(p); next != r.t && a.isEffective(next) {
				a.antiDep(r.t, next, anomaly.RW, k)
			}
			continue
		}
		for _, u := range unobserved {
			if u != r.t {
				a.antiDep(r.t, u, anomaly.RW, k)
			}
		}
	}
}

// snapshot reports whether l is snapshot isolation, with session order or
// without (generalized SI): the split graph.
func snapshot(l level.Level) bool { return l.ID == level.SnapshotIsolation || l.ID == level.GSI }

// keyTxn is a key and a transaction.
type keyTxn struct {
	k history.KeyID
	t history.TxnID
}

// cursorGuess orders the unobserved appenders of every open key for
// cursor stability: the one that read the key's whole observed list first
// (its version can then follow the one it read), the others in a
// topological order of the ww and wr edges. It returns that order per key
// and as ww edges, or false when two of them read the whole observed list
// (one of the two then loses the other's update whatever the order, and
// the solver says so with its counterexample).
func (a *analysis) cursorGuess(l level.Level) (map[history.KeyID][]history.TxnID, []checker.Edge, bool) {
	if len(a.open) == 0 {
		return nil, nil, true
	}
	merged := a.build(l, nil)
	comp, _ := merged.G.SCC(merged.Mask & dsg.Mask(anomaly.WW, anomaly.WR))
	readAll := map[keyTxn]bool{} // read the whole observed list of the key
	for _, r := range a.listReads {
		k := r.k
		if int(r.n) == len(a.orders[k]) {
			readAll[keyTxn{k, r.t}] = true
		}
	}
	order := map[history.KeyID][]history.TxnID{}
	var extra []checker.Edge
	for _, o := range a.open {
		ts := slices.Clone(o.txns)
		first := -1
		for i, t := range ts {
			if readAll[keyTxn{o.k, t}] {
				if first >= 0 {
					return nil, nil, false
				}
				first = i
			}
		}
		slices.SortFunc(ts, func(x, y history.TxnID) int {
			// An edge from u to v has comp[u] >= comp[v].
			return cmp.Or(cmp.Compare(comp[dsg.Node(y)], comp[dsg.Node(x)]), cmp.Compare(x, y))
		})
		if first >= 0 {
			t := o.txns[first]
			i := slices.Index(ts, t)
			ts = append([]history.TxnID{t}, slices.Delete(ts, i, i+1)...)
		}
		order[o.k] = ts
		for i := 1; i < len(ts); i++ {
			extra = append(extra, checker.Edge{From: ts[i-1], To: ts[i], Dep: anomaly.WW, Key: o.k})
		}
	}
	return order, extra, true
}

// cursor returns the lost updates (G-cursor) the lists show with every
// key's order known (guessed, for the unobserved appends of an open key:
// unobserved[k], after every observed one): a transaction read a version
// of a key and appends to it, and another effective appender's version
// lies between the one it read and its own (its own comes after every
// observed one when no read saw it).
func (a *analysis) cursor(unobserved map[history.KeyID][]history.TxnID) []anomaly.Anomaly {
	appendsTo := map[keyTxn]bool{}
	for i := range a.h.Txns {
		for _, op := range a.h.Txns[i].Ops {
			if op.Kind == history.Append {
				appendsTo[keyTxn{op.Key, history.TxnID(i)}] = true
			}
		}
	}
	lost := func(r readRef, k history.KeyID, w history.TxnID, op int32) anomaly.Anomaly {
		return anomaly.Anomaly{
			Kind: anomaly.LostUpdate, Phenomenon: anomaly.GCursor, Txns: []history.TxnID{r.t, w},
			Cycle: []anomaly.Step{{From: r.t, To: w, Dep: anomaly.RW, Key: k}, {From: w, To: r.t, Dep: anomaly.WW, Key: k}},
			Key:   k, Value: history.NullValue,
			Ops: []history.OpRef{{Txn: r.t, Op: r.op}, {Txn: w, Op: op}},
		}
	}
	var out []anomaly.Anomaly
reads:
	for _, r := range a.listReads {
		k := r.k
		if !appendsTo[keyTxn{k, r.t}] {
			continue
		}
		order := a.orders[k]
		for i := int(r.n); i < len(order); i++ {
			ref := a.appends.at(k, order[i])
			if ref.t == r.t {
				continue reads // its own version: nothing between
			}
			if a.isEffective(ref.t) {
				out = append(out, lost(r, k, ref.t, ref.op))
				continue reads
			}
		}
		for _, u := range unobserved[k] {
			if u == r.t {
				break
			}
			if a.isEffective(u) {
				out = append(out, lost(r, k, u, a.firstAppend(u, k)))
				break
			}
		}
	}
	return out
}

// firstAppend returns the position of t's first append to k.
func (a *analysis) firstAppend(t history.TxnID, k history.KeyID) int32 {
	for j, op := range a.h.Txns[t].Ops {
		if op.Kind == history.Append && op.Key == k {
			return int32(j)
		}
	}
	return -1
}
