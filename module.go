package isoscope

import (
	"fmt"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
)

// Module is Boomslang's extension point: a pass over the history's
// dependency graph that adds what the caller knows about its database and
// the history does not say — a version order the database exposes, an
// order its clients observed. Modules run before the search, and only the
// SAT checker runs them (with modules, Auto picks it).
type Module interface {
	// Name names the module in messages and in Result.Modules.
	Name() string
	// Extend reads the graph and adds edges with Graph.Before, or
	// superpositions of edge sets — exactly one holds — with
	// Graph.Either. An error says the history contradicts what the module
	// assumes; the check then fails with it.
	Extend(g *Graph) error
}

// Dep is a kind of dependency edge.
type Dep string

// The dependency kinds.
const (
	// WW: the target overwrote the source's version (version order).
	WW Dep = "ww"
	// WR: the target read a version the source wrote.
	WR Dep = "wr"
	// RW: the source read a version the target overwrote
	// (anti-dependency).
	RW Dep = "rw"
	// SO: the source ran earlier in the same session.
	SO Dep = "so"
	// RT: the source ended before the target began (real time).
	RT Dep = "rt"
	// PWR: the target's scan or iterator observed the source's write.
	PWR Dep = "pwr"
	// PRW: the source's scan or iterator missed the target's write
	// (predicate anti-dependency).
	PRW Dep = "prw"
)

var deps = map[Dep]anomaly.Dep{WW: anomaly.WW, WR: anomaly.WR, RW: anomaly.RW, SO: anomaly.SO, RT: anomaly.RT, PWR: anomaly.PWR, PRW: anomaly.PRW}

// Graph is the history's abstract semantic graph as a Module sees it:
// transactions and keys named as the history names them.
type Graph struct {
	a    checker.ASG
	txns map[history.Value]history.TxnID
}

// History returns the history being checked: the one passed to Check, or
// a part of it (the counterexample search checks sub-histories, whose
// transactions keep their ids).
func (g *Graph) History() *History { return &History{h: g.a.History()} }

func (g *Graph) txn(id Value) (history.TxnID, error) {
	if g.txns == nil {
		h := g.a.History()
		g.txns = make(map[history.Value]history.TxnID, len(h.Txns))
		for i := range h.Txns {
			g.txns[h.Txns[i].ID] = history.TxnID(i)
		}
	}
	t, ok := g.txns[id.v]
	if !ok {
		return 0, fmt.Errorf("no transaction %s", id)
	}
	return t, nil
}

func (g *Graph) key(k Value) (history.KeyID, error) {
	if k.IsNull() {
		return history.NoKey, nil
	}
	id, ok := g.a.History().LookupKey(k.v)
	if !ok {
		return 0, fmt.Errorf("no key %s", k)
	}
	return id, nil
}

// TakesPart reports whether the transaction named id certainly took
// effect (it committed, or a transaction that did read its write): the
// transactions an edge may join.
func (g *Graph) TakesPart(id Value) bool {
	t, err := g.txn(id)
	return err == nil && g.a.TakesPart(t)
}

// Writers returns, in history order, the transactions taking part whose
// last write or delete of key is final: the key's version order is an
// order of them.
func (g *Graph) Writers(key Value) []Value {
	k, err := g.key(key)
	if err != nil || k == history.NoKey {
		return nil
	}
	h := g.a.History()
	var out []Value
	for _, t := range g.a.Writers(k) {
		out = append(out, Value{h.Txns[t].ID})
	}
	return out
}

// Before adds an edge from → to of kind d, on key (Null for an edge on no
// key) that every dependency graph of the history has. A WW edge between
// two writers of key fixes their order in its version order. Both
// transactions must take part.
func (g *Graph) Before(from, to Value, d Dep, key Value) error {
	e, err := g.edge(ModuleEdge{from, to, d, key})
	if err != nil {
		return err
	}
	return g.a.Before(e.From, e.To, e.Dep, e.Key)
}

// ModuleEdge is an edge a Module adds: From → To of kind Dep on Key (Null
// for none), transactions named as the history names them.
type ModuleEdge struct {
	From, To Value
	Dep      Dep
	Key      Value
}

func (g *Graph) edge(m ModuleEdge) (checker.Edge, error) {
	d, ok := deps[m.Dep]
	if !ok {
		return checker.Edge{}, fmt.Errorf("unknown dependency kind %q", m.Dep)
	}
	from, err := g.txn(m.From)
	if err != nil {
		return checker.Edge{}, err
	}
	to, err := g.txn(m.To)
	if err != nil {
		return checker.Edge{}, err
	}
	k, err := g.key(m.Key)
	if err != nil {
		return checker.Edge{}, err
	}
	return checker.Edge{From: from, To: to, Dep: d, Key: k}, nil
}

// Either adds a superposition: exactly one of the alternatives holds, and
// every edge of the one that holds is in the dependency graph (an
// alternative may be empty: "or none of these"). It is how a module says
// what it knows only in part — "T1's write came before T2's or after
// T3's" — and the solver chooses, as it chooses a read's writer.
func (g *Graph) Either(alts ...[]ModuleEdge) error {
	out := make([][]checker.Edge, len(alts))
	for i, alt := range alts {
		for _, m := range alt {
			e, err := g.edge(m)
			if err != nil {
				return err
			}
			out[i] = append(out[i], e)
		}
	}
	return g.a.Either(out...)
}

// builtin is one of the solver's own modules.
type builtin struct{ m checker.Module }

func (b builtin) Name() string { return b.m.Name() }

// Extend runs the built-in module on the solver's own graph.
func (b builtin) Extend(g *Graph) error { return b.m.Extend(g.a) }

// The built-in modules (`check --module`).
var (
	// CommitOrder is for databases whose version order is their commit
	// order: every key's writers ordered by commit_ts.
	CommitOrder Module = builtin{check.Modules()["commit-order"]}
	// StartOrder is for databases that take a transaction's snapshot at
	// its start_ts: T1 precedes T2 whenever commit_ts(T1) < start_ts(T2)
	// (Adya's start-dependency).
	StartOrder Module = builtin{check.Modules()["start-order"]}
	// SessionOrder adds session order to a level that does not ask for it
	// (the weak levels and repeatable read).
	SessionOrder Module = builtin{check.Modules()["session-order"]}
	// RealTime adds real-time order, from the begin and end instants, to
	// a level that does not ask for it.
	RealTime Module = builtin{check.Modules()["real-time"]}
)

// asChecker adapts a public Module to the checker's contract.
func asChecker(m Module) checker.Module {
	if b, ok := m.(builtin); ok {
		return b.m
	}
	return adapted{m}
}

type adapted struct{ m Module }

func (a adapted) Name() string { return a.m.Name() }

func (a adapted) Extend(g checker.ASG) error { return a.m.Extend(&Graph{a: g}) }
