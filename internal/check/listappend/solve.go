package listappend

import (
	"cmp"
	"context"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/check/polygraph"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// guess tries one order of the unobserved appends of every open key, in
// linear time, before any search: the order of a topological sort of g,
// the graph without the split encoding (the serializability graph: its
// strongly connected components in topological order), ties broken by
// the order of the transactions' first nodes in order, a topological
// order of g's split encoding (splitOrder; acyclic here). When the split
// graph with those ww edges added is acyclic, that order witnesses
// snapshot isolation: the collected edges with the chosen ww chains are
// the dependency graph of that version order, up to edges its paths
// imply (rw and ww edges to every unobserved appender where the graph has
// them to the first). It reports false when the guess closes a cycle,
// which proves nothing: the solver decides then. No split graph is built:
// the last one is searched as g's and the chains' split encoding.
func (a *analysis) guess(ctx context.Context, l level.Level, g *dsg.Graph, order []int32) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	n := len(a.h.Txns)
	pos := make([]int32, n)
	for i, v := range order {
		if v >= 1 && int(v) <= n { // the first node of transaction v-1
			pos[v-1] = int32(i)
		}
	}
	order = nil
	comp, _ := g.G.SCC(g.Mask)
	chains := a.openChains(comp, pos)
	comp, pos = nil, nil
	e := dsg.NewEdges(n, false, len(chains))
	for _, c := range chains {
		e.Dep(c.From, c.To, c.Dep, c.Key)
	}
	chains = nil
	x := e.Finish()
	_, acyclic := graph.SplitTopoOrder(splitAnti, g.Mask|x.Mask, g.G, x.G)
	return acyclic, ctx.Err()
}

// openChains orders the unobserved appenders of every open key along the
// components comp of a graph (an edge from u to v has comp[u] >= comp[v])
// and, within one, by pos, and returns the order as chains of ww edges.
func (a *analysis) openChains(comp []int32, pos []int32) []checker.Edge {
	var extra []checker.Edge
	for _, o := range a.open {
		ts := slices.Clone(o.txns)
		slices.SortFunc(ts, func(x, y history.TxnID) int {
			cx, cy := comp[dsg.Node(x)], comp[dsg.Node(y)]
			return cmp.Or(cmp.Compare(cy, cx), cmp.Compare(pos[x], pos[y]), cmp.Compare(x, y))
		})
		for i := 1; i < len(ts); i++ {
			extra = append(extra, checker.Edge{From: ts[i-1], To: ts[i], Dep: anomaly.WW, Key: o.k})
		}
	}
	return extra
}

// solve decides the cycle part of a list-append history at snapshot
// isolation when the lists leave the order of some key's appends open
// (two or more transactions appended to it and no read saw their
// elements). Snapshot isolation needs every two committed writers of a key
// ordered, and either order may close a forbidden cycle, so the order is
// searched: the history is rewritten as reads and writes (registers) and
// handed to the solver checker with the order the lists reveal as known
// ww edges (the listOrder module); the solver orders only the unobserved
// appends. The rewriting keeps every transaction and operation position,
// so the counterexample names the history's own transactions and
// operations.
//
// The solver runs within o's limits and memory bound.
func (a *analysis) solve(ctx context.Context, l level.Level, o checker.Options) ([]anomaly.Anomaly, error) {
	if a.spent {
		a = a.again()
	}
	rw := a.registers()
	var ww []checker.Edge
	for _, e := range a.edges {
		if e.Dep == anomaly.WW {
			ww = append(ww, e.Edge)
		}
	}
	// Shrinking and the unsat search check sub-histories without the
	// lists' order: the refutation's own cycle is the counterexample.
	check, err := polygraph.Checker{}.Plan(history.NewIndexWith(rw, history.ReadsExternal), l, checker.Options{
		Modules: []checker.Module{listOrder{edges: ww}}, Tuning: checker.Tuning{NoUnsatSearch: true},
		NoShrink: true, Limits: o.Limits, MemoryLimit: o.MemoryLimit,
	})
	if err != nil {
		return nil, err
	}
	return check(ctx)
}

// again returns a's history analysed anew up to the collected edges, with
// the appends' index they need, for the solver when the graph let them go
// (spent): what resolve, reads and collect find the first time, again.
func (a *analysis) again() *analysis {
	b := newAnalysis(a.h, a.l)
	b.resolve()
	b.reads()
	b.collect(a.l)
	return b
}

// registers returns the history as reads and writes with the same
// transactions, sessions, keys and operation positions: an append of e to
// k becomes a write of e to k, and a list read becomes a read of the last
// element its transaction did not append itself (null, the initial state,
// when there is none): it reads the version of the transaction whose
// append ends that part of the list. The result is read with the
// history.ReadsExternal policy: a list read after the transaction's own
// appends observes another transaction's version. Unknown transactions
// that took effect (an effective transaction read their elements) become
// committed, the others aborted, as resolve decided. When some element is
// null, every element is renumbered (a write of null would be a delete).
//
// The rewriting keeps only which version each read saw; the order the
// lists reveal among appends (the listOrder module) and every check of the
// lists themselves (duplicates, prefixes, own appends) stay here.
func (a *analysis) registers() *history.History {
	h := a.h
	val := func(k history.KeyID, e history.Value) history.Value { return e }
	if a.appends.hasNull() {
		number := make(map[elemKey]history.Value, a.appends.len())
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				if op.Kind == history.Append {
					number[elemKey{op.Key, op.Value}] = history.IntValue(int64(len(number) + 1))
				}
			}
		}
		val = func(k history.KeyID, e history.Value) history.Value { return number[elemKey{k, e}] }
	}
	out := *h
	out.Txns = make([]history.Txn, len(h.Txns))
	for i := range h.Txns {
		t := h.Txns[i]
		switch {
		case t.Status != history.Unknown:
		case a.effective[i]:
			t.Status = history.Committed
		default:
			t.Status = history.Aborted
		}
		ops := make([]history.Op, len(t.Ops))
		own := map[history.KeyID]int{}
		for j, op := range t.Ops {
			switch op.Kind {
			case history.Append:
				ops[j] = history.Op{Kind: history.Write, Key: op.Key, Value: val(op.Key, op.Value)}
				own[op.Key]++
			case history.ReadList:
				v := history.NullValue
				if n := len(op.List) - own[op.Key]; n > 0 {
					v = val(op.Key, op.List[n-1])
				}
				ops[j] = history.Op{Kind: history.Read, Key: op.Key, Value: v}
			default:
				ops[j] = op
			}
		}
		t.Ops = ops
		out.Txns[i] = t
	}
	return &out
}

// listOrder is the module that gives the solver the version order the
// lists reveal: ww edges along the longest list read of each key, and
// from its last appender to every appender no read saw.
type listOrder struct{ edges []checker.Edge }

// Name returns "list-order".
func (listOrder) Name() string { return "list-order" }

// Extend adds the lists' ww edges.
func (m listOrder) Extend(g checker.ASG) error {
	for _, e := range m.edges {
		if err := g.Before(e.From, e.To, e.Dep, e.Key); err != nil {
			return err
		}
	}
	return nil
}
