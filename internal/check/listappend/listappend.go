// Package listappend checks list-append histories (Elle's workload: appends
// of unique elements to lists, and reads of whole lists) against every
// level: read uncommitted (below), read committed, snapshot isolation and
// serializability (with session order, or without it: generalized SI and
// plain serializability) and strict serializability by the graph below,
// the others with the solver (last paragraph). The lists reveal most of
// the version order.
//
// A read of [1 2 3] says that the appends of 1, 2 and 3 were installed in
// that order, so the longest list read of each key orders every append it
// contains, and every other read must be a prefix of it. Appends that no
// read saw come after all observed ones, in an order the lists do not
// give; they get ww edges from the last observed appender and rw edges
// from the readers of the whole observed list. The wr, ww and rw edges
// (and so, rt) then go to the same cycle search as the other checkers
// (Kingsbury and Alvaro, "Elle", §4; the split encoding of
// internal/check/depgraph for snapshot isolation).
//
// At read committed, serializability and strict serializability that
// partial graph decides: an acyclic one extends to a total order by a
// topological sort, which orders the unobserved appends too. Snapshot
// isolation is different: it orders every two committed writers of a key
// one way or the other, and in the split graph either order may close a
// forbidden cycle (two transactions that read the same list and both
// append to it: a lost update). So at snapshot isolation, when a key has
// two or more unobserved appenders and the partial graph has no cycle,
// one order of them is guessed in linear time (a topological order of the
// serializability graph): if the split graph stays acyclic with it, it
// witnesses snapshot isolation. Otherwise the history is rewritten as
// reads and writes with the same transactions and operations and the
// solver checker (internal/check/polygraph) orders the unobserved
// appends, with the order the lists reveal given as known edges. No other
// history is searched.
//
// At the axiomatic levels (rc-session, read atomic, causal and prefix
// consistency: Biswas and Enea's commit-order axioms) a list's versions
// are its appends applied in commit order, so the order the lists reveal
// is commit order among the appenders. After the lists' own anomalies,
// which each of those levels forbids, the history goes to the solver
// rewritten as registers as above, with that order as known edges: the
// solver finds a commit order or proves none exists. PL-FCV goes the same
// way, the lists' order being the version order. Before the solver, the
// stronger levels that the graph decides are tried first: serializability
// (with session order where the level has it), then snapshot isolation
// (generalized without it) with one guessed order of the open keys; when
// one holds, so does every level it implies. PL-2+ (G1 and G-single) is
// decided on the graph itself (plus): a cycle of ww and wr edges, or with
// exactly one rw edge, among the edges every order has; with no key open
// nothing more is needed, and with open keys one order along the graph is
// tried before the solver. Cursor stability has a direct path of its own
// (cursorGuess), and repeatable read on lists is serializability without
// session order.
package listappend

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the list-append checker, named "list-append".
type Checker struct{}

// Name returns "list-append".
func (Checker) Name() string { return "list-append" }

// Capabilities: none beyond the histories it decides.
func (Checker) Capabilities() checker.Capabilities { return checker.Capabilities{} }

// Plan accepts histories made only of appends and list reads, with each
// element appended at most once per key, at every level (strict
// serializability with instants).
// The check finds the intra-transaction and read anomalies of the lists,
// then the cycles of the dependency graph the version order gives. At
// snapshot isolation, when that graph has no cycle, the lists are
// otherwise sound and some key's unobserved appends may be ordered more
// than one way, one order is guessed (guess) and, if it closes a cycle,
// the solver chooses their order (solve), within o's limits.
func (Checker) Plan(ix *history.Index, l level.Level, o checker.Options) (checker.Check, error) {
	appends, err := decides(ix, l)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]anomaly.Anomaly, error) { return checkWith(ctx, ix, appends, l, o) }, nil
}

// decides returns nil when Plan accepts ix's history at l, with the index
// of its appends that the check reads.
func decides(ix *history.Index, l level.Level) (appendIndex, error) {
	switch l.ID {
	case level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation, level.GSI, level.Serializable, level.PlainSerializable,
		level.StrictSerializable, level.RepeatableRead, level.CursorStability:
	default:
		if !viaSolver(l) {
			return appendIndex{}, fmt.Errorf("it does not decide %s", l.Name)
		}
	}
	h := ix.History()
	lists := false
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			switch op.Kind {
			case history.Append, history.ReadList:
				lists = true
			default:
				return appendIndex{}, fmt.Errorf("transaction %s has %s operation; it handles appends and list reads only", h.TxnName(history.TxnID(i)), op.Kind.Noun())
			}
		}
	}
	if !lists {
		return appendIndex{}, fmt.Errorf("the history has no appends or list reads")
	}
	seen, err := indexAppends(h, true)
	if err != nil {
		return appendIndex{}, err
	}
	if l.RealTime {
		for i := range h.Txns {
			if h.Txns[i].Status != history.Aborted && !h.Txns[i].HasTime {
				return appendIndex{}, fmt.Errorf("strict serializability needs begin and end instants; transaction %s (line %d) has none",
					h.TxnName(history.TxnID(i)), h.Txns[i].Line)
			}
		}
	}
	return seen, nil
}

// indexAppends returns the index of h's appends (flat tables where they
// fit, when flat is set), or an error naming an element appended to a key
// twice.
func indexAppends(h *history.History, flat bool) (appendIndex, error) {
	x := newAppendIndex(h, flat)
	for i := range h.Txns {
		ops := h.Txns[i].Ops
		for j, op := range ops {
			if op.Kind != history.Append {
				continue
			}
			if w, dup := x.get(op.Key, op.Value); dup {
				return appendIndex{}, fmt.Errorf("element %s is appended to %s twice (transactions %s and %s)",
					op.Value, h.KeyName(op.Key), h.TxnName(w.t), h.TxnName(history.TxnID(i)))
			}
			last := true
			for _, later := range ops[j+1:] {
				if later.Kind == history.Append && later.Key == op.Key {
					last = false
					break
				}
			}
			x.put(op.Key, op.Value, appendRef{history.TxnID(i), int32(j), last})
		}
	}
	return x, nil
}

// viaSolver reports whether l is one of the levels this checker leaves
// to the solver after the lists' own anomalies and the stronger levels the
// graph decides: the axiomatic ones (rc-session, read atomic, causal,
// prefix) and PL-FCV (PL-2+ and cursor stability go to the solver only
// when some key's order is open and the order guessed shows a violation;
// repeatable read is serializability without session order on lists).
func viaSolver(l level.Level) bool {
	switch l.ID {
	case level.RCSession, level.ReadAtomic, level.Causal, level.Prefix,
		level.CursorStability, level.PL2Plus, level.PLFCV:
		return true
	}
	return false
}

// check runs the check Plan returns.
func check(ctx context.Context, ix *history.Index, l level.Level, o checker.Options) ([]anomaly.Anomaly, error) {
	appends, err := indexAppends(ix.History(), true)
	if err != nil {
		return nil, err
	}
	return checkWith(ctx, ix, appends, l, o)
}

// checkWith is check with the index of the history's appends.
func checkWith(ctx context.Context, ix *history.Index, appends appendIndex, l level.Level, o checker.Options) ([]anomaly.Anomaly, error) {
	if l.ID == level.RepeatableRead {
		// Lists have no predicate reads, so G2-item is all of G2: PL-2.99
		// is serializability without session order.
		l = level.Get(level.PlainSerializable)
	}
	a := newAnalysisWith(ix.History(), l, appends)
	a.resolve()
	a.reads()
	if err := ctx.Err(); err != nil {
		return a.found, err
	}
	if l.ID == level.ReadUncommitted {
		// G0: a cycle of the certain ww edges (package comment).
		a.collect(l)
		g := a.build(l, nil)
		found, err := dsg.FindCycles(ctx, a.h, g.G, g.Mask&dsg.Mask(anomaly.WW), g.Nodes)
		return append(a.found, found...), err
	}
	if l.ID == level.CursorStability {
		// With every key's version order known from the lists, cursor
		// stability is G0 and G1c (cycles of ww and wr) and G-cursor
		// (a writer between the version a transaction read and its own
		// append), each found directly; open keys go to the solver.
		a.collect(l)
		if len(a.found) > 0 {
			return a.found, nil
		}
		order, extra, ok := a.cursorGuess(l)
		if !ok {
			return a.solve(ctx, l, o)
		}
		g := a.build(l, extra)
		found, err := dsg.FindCycles(ctx, a.h, g.G, g.Mask&dsg.Mask(anomaly.WW, anomaly.WR), g.Nodes)
		if err != nil {
			return found, err
		}
		if len(found) == 0 {
			found = a.cursor(order)
		}
		if len(found) == 0 || len(a.open) == 0 {
			return found, nil
		}
		// The guessed order of some key's unobserved appends shows a
		// violation, which another order might not: the solver decides.
		return a.solve(ctx, l, o)
	}
	if l.ID == level.PL2Plus {
		// G1 and G-single, found directly on the lists' graph; the solver
		// only when an open key's order matters (plus).
		a.collect(l)
		if len(a.found) > 0 {
			return a.found, nil
		}
		if found, ok, err := a.plus(ctx, l); ok || err != nil {
			return found, err
		}
		return a.solve(ctx, l, o)
	}
	if viaSolver(l) {
		// The axiomatic levels constrain a commit order, and the others
		// forbid only some cycles of the graph: after the lists' own
		// anomalies (which every one of them forbids), the solver decides
		// the history rewritten as registers, with the order the lists
		// give as version (or commit) order.
		a.collect(l)
		if len(a.found) > 0 {
			return a.found, nil
		}
		// Serializability, with session order where l has it, which the
		// lists' graph decides, implies each of these levels (the
		// axiomatic ones and PL-FCV): stronger first.
		strong := level.Get(level.PlainSerializable)
		if l.SessionOrder {
			strong = level.Get(level.Serializable)
		}
		if strong.Implies(l.ID) {
			if ser := a.build(strong, nil); len(ser.G.NontrivialSCCs(ser.Mask)) == 0 {
				return nil, nil
			}
		}
		// Then snapshot isolation (generalized without session order),
		// when the split graph and one guessed order of the open keys'
		// appends witness it.
		si := level.Get(level.GSI)
		if l.SessionOrder {
			si = level.Get(level.SnapshotIsolation)
		}
		if si.Implies(l.ID) {
			g := a.build(si, nil)
			if order, ok := splitOrder(g); ok {
				if len(a.open) == 0 {
					return nil, nil
				}
				if ok, err := a.guess(ctx, si, g, order); ok || err != nil {
					return nil, err
				}
			}
		}
		return a.solve(ctx, l, o)
	}
	g := a.graph(l)
	if !snapshot(l) {
		found, err := dsg.FindCycles(ctx, a.h, g.G, g.Mask, g.Nodes)
		return append(a.found, found...), err
	}
	// Snapshot isolation: the split encoding of g, searched without being
	// built, and built only to name the cycles it has.
	order, acyclic := splitOrder(g)
	if !acyclic {
		s := a.split(g)
		g = nil
		found, err := dsg.FindCycles(ctx, a.h, s.G, s.Mask, s.Nodes)
		return append(a.found, found...), err
	}
	if len(a.found) > 0 || len(a.open) == 0 {
		return a.found, nil
	}
	if ok, err := a.guess(ctx, l, g, order); ok || err != nil {
		return nil, err
	}
	return a.solve(ctx, l, o)
}

// appendRef is one append: who, where in the transaction, and its position
// among that transaction's appends to the key.
type appendRef struct {
	t    history.TxnID
	op   int32
	last bool // the transaction's last append to the key
}

type elemKey struct {
	k history.KeyID
	e history.Value
}

// readRef is one effective list read of key k, with the length of the
// part of its list that another transaction's state explains (own appends
// stripped): n elements from the list's start.
type readRef struct {
	t  history.TxnID
	op int32
	k  history.KeyID
	n  int32
}

// external returns r's external part: the first r.n elements of its list.
func (a *analysis) external(r readRef) []history.Value {
	return a.h.Txns[r.t].Ops[r.op].List[:r.n]
}

type analysis struct {
	h         *history.History
	l         level.Level
	appends   appendIndex
	effective []bool
	listReads []readRef
	found     []anomaly.Anomaly
	// edges are the dependency edges the lists give, and open the keys
	// with two or more appenders no read saw, whose order the lists leave
	// open (collect fills them).
	edges []depEdge
	open  []openKey
	// sink, while graph collects, is the builder of its graph, which
	// takes the edges instead of edges; spent says the graph let the
	// edges and the appends' index go (the solver, when it follows,
	// collects them anew).
	sink  *dsg.Edges
	spent bool
	// orders holds each key's order of observed elements: its longest
	// list read (collect fills it).
	orders map[history.KeyID][]history.Value
}

// openKey is a key whose unobserved appenders (two or more transactions)
// the lists leave unordered.
type openKey struct {
	k    history.KeyID
	txns []history.TxnID
}

// newAnalysis returns the analysis of h at l, indexing its appends (the
// last of an element appended twice wins: Plan refuses such histories).
func newAnalysis(h *history.History, l level.Level) *analysis {
	x := newAppendIndex(h, true)
	for i := range h.Txns {
		ops := h.Txns[i].Ops
		for j, op := range ops {
			if op.Kind != history.Append {
				continue
			}
			last := true
			for _, later := range ops[j+1:] {
				if later.Kind == history.Append && later.Key == op.Key {
					last = false
					break
				}
			}
			x.put(op.Key, op.Value, appendRef{history.TxnID(i), int32(j), last})
		}
	}
	return newAnalysisWith(h, l, x)
}

// newAnalysisWith returns the analysis of h at l with appends, the index
// of its appends.
func newAnalysisWith(h *history.History, l level.Level, appends appendIndex) *analysis {
	return &analysis{h: h, l: l, appends: appends, effective: make([]bool, len(h.Txns))}
}

// resolve decides which transactions took effect: the committed ones, and
// unknown ones whose element an effective transaction read (fixpoint) at
// the levels that forbid aborted reads; at read uncommitted the committed
// ones only.
func (a *analysis) resolve() {
	var work []history.TxnID
	for i := range a.h.Txns {
		if a.h.Txns[i].Status == history.Committed {
			a.effective[i] = true
			work = append(work, history.TxnID(i))
		}
	}
	if a.l.ID == level.ReadUncommitted {
		return
	}
	// Marking an element's appender depends on the element alone: each
	// array of list elements is looked at once (shared.go).
	looked := history.Looked{}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		for _, op := range a.h.Txns[t].Ops {
			if op.Kind != history.ReadList {
				continue
			}
			for _, e := range op.List[looked.From(op.Key, op.List):] {
				w, ok := a.appends.get(op.Key, e)
				if ok && !a.effective[w.t] && a.h.Txns[w.t].Status == history.Unknown {
					a.effective[w.t] = true
					work = append(work, w.t)
				}
			}
		}
	}
}

func (a *analysis) isEffective(t history.TxnID) bool { return t == history.Init || a.effective[t] }

func (a *analysis) add(k anomaly.Kind, p anomaly.Phenomenon, key history.KeyID, v history.Value, txns []history.TxnID, ops ...history.OpRef) {
	a.found = append(a.found, anomaly.Anomaly{Kind: k, Phenomenon: p, Txns: txns, Key: key, Value: v, Ops: ops})
}
