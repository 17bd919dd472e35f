package polygraph

import (
	"cmp"
	"context"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/ir"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/sat"
)

// cond is when an edge or choice holds (ir.Cond).
type cond = ir.Cond

var (
	yes = ir.True
	no  = ir.False
)

// Encoding is the IR of a polygraph (VeriStrong §4–5 in Boomslang's shape):
// the lowering of the hyper-polygraph into an ir.Graph — a superposition
// per uncertain read over its candidate writers, a variable per undecided
// pair of writers, conjunctions for derived anti-dependencies
// (r ↔ wr ∧ ww) — that ir.Lower turns into clauses and theory edges.
type Encoding struct {
	p *Polygraph
	// G is the IR.
	G     *ir.Graph
	split int32 // offset of the second nodes (snapshot isolation), 0 if none
	// bc selects Viper's begin/commit-node graph for snapshot isolation:
	// the second node of a transaction is its begin, the first its commit.
	bc      bool
	nodes   int32 // transaction nodes (both copies with split); auxiliary ones follow
	total   int32
	pairs   []cond
	present []cond // per transaction: yes, or the variable of an optional one
	// Clauses counts the clauses and TwoWidth those that forbid 2-width
	// dsg.
	Clauses, TwoWidth int
	// LostUpdates are the G-cursor triples forbidden at cursor stability.
	LostUpdates []LostUpdate
	// twoWidth answers reachability in the known graph for the 2-width
	// clauses; nil switches them off.
	twoWidth reacher
	// wr holds, per read of p.Reads, when it read from each of its
	// candidates; inferredWhen, per inference of p.inferred, when its edge
	// holds.
	wr           [][]cond
	inferredWhen []cond
	// g stops the encoding when its context ends or what it adds passes
	// the construction's memory share.
	g *guard
}

// Node is the graph node of transaction t.
func node(t history.TxnID) int32 { return int32(t) + 1 }

// Encode builds the solver and theory for p. si selects the split graph of
// snapshot isolation; auxNodes reserves nodes after the transactions' for
// the real-time chain, which the caller adds with FixedEdge.
//
// Encode gives up with ctx's error when ctx ends, and with a *MemoryError
// when the edges, conjunctions and clauses it adds would take the memory
// the polygraph's construction kept past the construction's share.
//
// With twoWidth, a derived anti-dependency that would close a cycle with
// a known path is not added as an edge: a binary clause forbids the two
// choices that derive it (VeriStrong §6.1.2, case II), so unit propagation
// sees the conflict instead of the theory.
//
// With bc, snapshot isolation is encoded on Viper's BC-polygraph instead
// (Zhang et al., EuroSys 2023): a begin and a commit node per transaction
// with an edge from begin to commit, dependencies from the source's
// commit to the target's begin, anti-dependencies from the source's begin
// to the target's commit. A cycle there is a cycle of the dependency graph
// with no two adjacent anti-dependencies, as on the split graph, with one
// edge per dependency instead of two.
func Encode(ctx context.Context, p *Polygraph, si bool, auxNodes int, twoWidth, bc bool) (*Encoding, error) {
	n := int32(len(p.h.Txns) + 1)
	e := &Encoding{p: p, bc: si && bc, g: &guard{ctx: ctx, limit: p.g.limit, used: p.g.used}}
	if ctx == nil {
		e.g.ctx = context.Background()
	}
	if twoWidth {
		e.twoWidth = p.reach
	}
	e.nodes = n
	if si {
		e.split = n
		e.nodes = 2 * n
	}
	e.total = e.nodes + int32(auxNodes)
	e.G = ir.New(e.total)
	e.G.Rank = e.rank()
	e.present = make([]cond, len(p.h.Txns))
	for i := range e.present {
		e.present[i] = yes
		if p.Optional[i] {
			e.present[i] = ir.When(sat.Pos(e.G.NewVar()))
		}
	}
	for _, t := range p.Impossible {
		e.clause(e.present[t].Lit.Not())
	}
	if e.bc {
		for t := range p.h.Txns {
			if p.Present(history.TxnID(t)) {
				e.edge(node(history.TxnID(t))+e.split, node(history.TxnID(t)), anomaly.SO, history.NoKey, yes) // begin → commit
			}
		}
	}
	for _, k := range p.Known {
		e.dep(k.From, k.To, k.Dep, k.Key, yes)
	}
	for _, k := range p.KnownAnti {
		e.anti(k.From, k.To, k.Dep, k.Key, yes)
	}
	if e.g.check() != nil {
		return nil, e.g.err
	}
	e.pairs = make([]cond, len(p.Pairs))
	for i, pr := range p.Pairs {
		if e.g.step() { // the pair's edges count as edges (edge)
			return nil, e.g.err
		}
		switch pr.Order {
		case 1:
			e.pairs[i] = yes
		case -1:
			e.pairs[i] = no
		default:
			e.pairs[i] = ir.When(sat.Pos(e.G.NewVar()))
		}
		e.dep(pr.A, pr.B, anomaly.WW, pr.Key, e.pairs[i])
		e.dep(pr.B, pr.A, anomaly.WW, pr.Key, e.pairs[i].Not())
	}
	e.wr = make([][]cond, len(p.Reads))
	for i, r := range p.Reads {
		if e.wr[i] = e.read(r); e.g.step() {
			return nil, e.g.err
		}
	}
	e.inferEdges()
	for _, so := range p.OptionalSO {
		e.dep(so.From, so.To, so.Dep, so.Key, yes)
	}
	for _, alts := range p.Choices {
		lits := make([]sat.Lit, len(alts))
		for i, alt := range alts {
			lits[i] = sat.Pos(e.G.NewVar())
			for _, ed := range alt {
				if ed.Dep.IsAnti() {
					e.anti(ed.From, ed.To, ed.Dep, ed.Key, ir.When(lits[i]))
				} else {
					e.dep(ed.From, ed.To, ed.Dep, ed.Key, ir.When(lits[i]))
				}
			}
		}
		e.G.Superpose(lits, no)
	}
	if e.twoWidth != nil && p.chains != nil {
		e.canonicalTwoWidth()
	}
	e.g.grow(int64(e.G.Vars())*varBytes+int64(len(e.G.Clauses))*clauseBytes, "the variables and clauses")
	return e, e.g.check()
}

// rank ranks the graph's nodes for the theory's initial order
// (ir.Graph.Rank) by how the transactions ran: by the clients' clock when
// every transaction has its begin and end (a transaction's node at its
// end, on the split graph its second node at its begin), else by the
// history's order of transactions (which follows how they ran in most
// recorded histories; on the split graph a transaction's second node
// comes just before its first). Auxiliary nodes come as soon as they may.
// A breadth-first order instead interleaves the sessions by their depth
// in the known graph and puts the two copies of a transaction apart, and
// the search then pays for each write order it decides against how the
// transactions ran: thousands of conflicts on 20,000 transactions at
// snapshot isolation, each undoing thousands of decisions, where this
// order needs none.
func (e *Encoding) rank() []int32 {
	txns := e.p.h.Txns
	r := make([]int32, e.total)
	timed := len(txns) > 0
	for _, t := range txns {
		timed = timed && t.HasTime
	}
	if !timed {
		for v := range e.nodes {
			t := v
			if e.split > 0 && v >= e.split {
				t = v - e.split
			}
			r[v] = 2 * t
			if e.split == 0 || v < e.split {
				r[v]++
			}
		}
		return r
	}
	// By instant, then as above; the initial node first.
	type at struct {
		when int64
		tie  int32
		node int32
	}
	nodes := make([]at, 0, e.nodes)
	for i, t := range txns {
		v := node(history.TxnID(i))
		nodes = append(nodes, at{t.End, 2*v + 1, v})
		if e.split > 0 {
			nodes = append(nodes, at{t.Begin, 2 * v, v + e.split})
		}
	}
	slices.SortFunc(nodes, func(x, y at) int {
		return cmp.Or(cmp.Compare(x.when, y.when), cmp.Compare(x.tie, y.tie))
	})
	for i, x := range nodes {
		r[x.node] = int32(i) + 1
	}
	return r
}

// twoWidthScan bounds how far along each session canonicalTwoWidth looks
// for the second edge of a cycle.
const twoWidthScan = 4

// twoWidthBudget bounds the candidate pairs canonicalTwoWidth examines in
// all: with thousands of open pairs per transaction (many writers of few
// keys) the enumeration would take longer than solving. The clauses are
// redundant, so stopping early loses only speed.
const twoWidthBudget = 20_000_000

// canonicalTwoWidth forbids canonical 2-width cycles between write orders
// (VeriStrong §6.1.2, case I): when choosing S→T for one open pair and
// T'→S' for another closes a cycle through known paths T ⇝ T' and S' ⇝ S,
// the clause ¬(S→T) ∨ ¬(T'→S') lets unit propagation see it. T' is looked
// for near the start of what T reaches in each session (a cycle's second
// edge joins transactions that run concurrently with the first's), so the
// enumeration is bounded; every clause it adds is a real cycle.
func (e *Encoding) canonicalTwoWidth() {
	p, c := e.p, e.p.chains
	bySession := make([][]history.TxnID, c.count)
	for t, s := range c.sess {
		if s >= 0 {
			bySession[s] = append(bySession[s], history.TxnID(t))
		}
	}
	open := make([][]int32, len(p.h.Txns))
	for i, pr := range p.Pairs {
		if e.pairs[i].Const == 0 {
			open[pr.A] = append(open[pr.A], int32(i))
			open[pr.B] = append(open[pr.B], int32(i))
		}
	}
	// out returns the edge leaving t in pair j: its head and literal.
	out := func(j int32, t history.TxnID) (history.TxnID, sat.Lit) {
		if pr := p.Pairs[j]; pr.A == t {
			return pr.B, e.pairs[j].Lit
		} else {
			return pr.A, e.pairs[j].Lit.Not()
		}
	}
	seen := map[[2]sat.Lit]bool{}
	budget := twoWidthBudget
	try := func(i int32, from, to history.TxnID, l1 sat.Lit, t2 history.TxnID) {
		for _, j := range open[t2] {
			if budget--; budget < 0 || e.g.step() {
				return
			}
			if j == i {
				continue
			}
			s2, l2 := out(j, t2)
			if s2 != from && !e.twoWidth.reaches(s2, from) {
				continue
			}
			k := [2]sat.Lit{min(l1, l2), max(l1, l2)}
			if !seen[k] {
				seen[k] = true
				e.TwoWidth++
				e.clause(l1.Not(), l2.Not())
				e.g.grow(edgeBytes, "2-width clauses")
			}
		}
	}
	for i := range p.Pairs {
		if e.pairs[i].Const != 0 || budget < 0 || e.g.err != nil {
			continue
		}
		for _, dir := range [2]bool{true, false} {
			from, to := p.Pairs[i].A, p.Pairs[i].B
			l1 := e.pairs[i].Lit
			if !dir {
				from, to, l1 = to, from, l1.Not()
			}
			try(int32(i), from, to, l1, to)
			for s, txns := range bySession {
				start := int(c.first[int(to)*c.count+s])
				for n := start; n < len(txns) && n < start+twoWidthScan; n++ {
					if t2 := txns[n]; !e.twoWidth.reaches(t2, from) {
						try(int32(i), from, to, l1, t2)
					} else {
						break
					}
				}
			}
		}
	}
}

// presence is the condition that t takes part.
func (e *Encoding) presence(t history.TxnID) cond {
	if t == history.Init {
		return yes
	}
	return e.present[t]
}

func (e *Encoding) clause(lits ...sat.Lit) {
	e.Clauses++
	e.G.Clause(lits...)
}

// ww is the condition "a precedes b in k's version order".
func (e *Encoding) ww(a, b history.TxnID, k history.KeyID) cond {
	switch {
	case a == history.Init:
		return yes
	case b == history.Init:
		return no
	}
	i, aFirst := e.p.pair(a, b, k)
	if i < 0 {
		if c := e.p.chains; c != nil && c.reaches(a, b) {
			return yes // the sparse construction made no pair: the known graph orders them
		}
		return no
	}
	if aFirst {
		return e.pairs[i]
	}
	return e.pairs[i].Not()
}

// and returns a condition equivalent to x ∧ y.
func (e *Encoding) and(x, y cond) cond { return e.G.And(x, y) }

// inferEdges adds the edges the level's axiom infers (read committed,
// read atomic), each under the choices of writers it follows from, and
// an edge from the initial state to every transaction an inference may
// put before it.
func (e *Encoding) inferEdges() {
	p := e.p
	e.inferredWhen = make([]cond, len(p.inferred))
	for i, f := range p.inferred {
		when := e.wr[f.Alpha][f.A]
		if f.Beta >= 0 {
			when = e.and(when, e.wr[f.Beta][f.B])
		} else {
			when = e.and(when, e.presence(f.From))
		}
		e.inferredWhen[i] = when
		if !p.inferenceKnown(f) { // a known one is in p.Known
			e.dep(f.From, f.To, anomaly.WW, f.Key, when)
		}
		if e.g.step() {
			return
		}
	}
	for _, t := range p.initFirst {
		e.edge(node(history.Init), node(t), anomaly.SO, history.NoKey, e.presence(t))
	}
}

// read encodes one read: the choice of its writer, the writer preceding
// the reader's own write, and the anti-dependencies to every later writer.
// It returns when the read read from each candidate. It stops early when
// e.g says to (Encode then returns e.g.err).
func (e *Encoding) read(r Read) []cond {
	p := e.p
	wr := make([]cond, len(r.Cands))
	if len(r.Cands) == 1 && p.certain(r.R) && p.certain(r.Cands[0]) {
		wr[0] = yes // a known wr edge (Build put it in Known)
	} else {
		lits := make([]sat.Lit, len(r.Cands))
		for i, c := range r.Cands {
			lits[i] = sat.Pos(e.G.NewVar())
			wr[i] = ir.When(lits[i])
			if pc := e.presence(c); pc.Const == 0 {
				e.clause(lits[i].Not(), pc.Lit) // read from c only if c took effect
			}
		}
		e.G.Superpose(lits, e.presence(r.R).Not())
		for i, c := range r.Cands {
			if c != history.Init {
				e.dep(c, r.R, r.wrDep(), r.Key, wr[i])
			}
		}
	}
	if p.spec.cursor && r.Writes && !r.Pred {
		e.noLostUpdate(r, wr)
	}
	if !p.spec.anti {
		return wr // no anti-dependencies, and the version order is free
	}
	for i, c := range r.Cands {
		if e.g.err != nil {
			return wr
		}
		if r.Writes && c != history.Init && wr[i].Const == 0 {
			if o := e.ww(c, r.R, r.Key); o.Const == 0 {
				e.clause(wr[i].Lit.Not(), o.Lit)
			} else if o.Const < 0 {
				e.clause(wr[i].Lit.Not())
			}
		}
		if p.chains != nil {
			e.sparseAnti(r, c, wr[i])
			continue
		}
		for _, w := range p.writers[r.Key] {
			if w == r.R || w == c {
				continue
			}
			if e.derivedAnti(r, w, wr[i], e.ww(c, w, r.Key)) {
				return wr
			}
		}
	}
	return wr
}

// LostUpdate is a G-cursor that Encode forbids at cursor stability: the
// reader R read key Key from From, R also writes it, and Between's write
// would come between the two in the version order (R →rw Between →ww R,
// every edge on Key). Conds are when R read from From, From precedes
// Between and Between precedes R.
type LostUpdate struct {
	R, From, Between history.TxnID
	Key              history.KeyID
	Conds            [3]cond
}

// noLostUpdate records, for a read of a key its transaction also writes,
// every other writer whose version could fall between the one read and
// the reader's own (Adya's G-cursor: a cycle of one item anti-dependency
// and write dependencies, all on one key); ForbidLostUpdates forbids them.
func (e *Encoding) noLostUpdate(r Read, wr []cond) {
	p := e.p
	for i, c := range r.Cands {
		for _, u := range p.writers[r.Key] {
			if u == r.R || u == c {
				continue
			}
			lu := LostUpdate{R: r.R, From: c, Between: u, Key: r.Key,
				Conds: [3]cond{wr[i], e.and(e.ww(c, u, r.Key), e.presence(u)), e.ww(u, r.R, r.Key)}}
			if lu.Conds[0].Const >= 0 && lu.Conds[1].Const >= 0 && lu.Conds[2].Const >= 0 {
				e.LostUpdates = append(e.LostUpdates, lu)
			}
		}
	}
}

// ForbidLostUpdates adds a clause against each recorded lost update: not
// all three of its conditions (cursor stability's G-cursor).
func (e *Encoding) ForbidLostUpdates() {
	for _, lu := range e.LostUpdates {
		var lits []sat.Lit
		for _, x := range lu.Conds {
			if x.Const == 0 {
				lits = append(lits, x.Lit.Not())
			}
		}
		e.clause(lits...)
	}
}

// derivedAnti adds r.R →rw w, present when r read from a writer (wr) that
// precedes w (ww). When w already reaches the reader in the known graph
// and both conditions are open, the edge would close a 2-width cycle: a
// clause forbids the pair instead (VeriStrong §6.1.2, case II). It
// reports whether the encoding must stop (e.g.err says why).
func (e *Encoding) derivedAnti(r Read, w history.TxnID, wr, ww cond) bool {
	if e.twoWidth != nil && wr.Const == 0 && ww.Const == 0 && e.p.singleAnti(r) && e.twoWidth.reaches(w, r.R) {
		e.TwoWidth++
		e.clause(wr.Lit.Not(), ww.Lit.Not())
		return e.g.grow(edgeBytes, "derived anti-dependencies")
	}
	if ww.Const < 0 || wr.Const < 0 {
		return e.g.step()
	}
	e.anti(r.R, w, r.rwDep(), r.Key, e.and(wr, ww))
	if wr.Const == 0 && ww.Const == 0 {
		return e.g.grow(derivedBytes, "derived anti-dependencies") // a conjunction, its variable and clauses
	}
	return e.g.step() // one condition holds: the edge alone, counted by edge
}

// sparseAnti adds the anti-dependencies of r reading from c (under
// condition wr) in the sparse construction: to the writers c forms a pair
// with, under the pair's order, and, unless KnownAnti has them already, to
// the first writer of each session the known graph orders after c.
func (e *Encoding) sparseAnti(r Read, c history.TxnID, wr cond) {
	p := e.p
	for _, pi := range p.pairsOf[pairKey{c, 0, r.Key}] {
		w := p.Pairs[pi].A
		if w == c {
			w = p.Pairs[pi].B
		}
		if w != r.R && e.derivedAnti(r, w, wr, e.ww(c, w, r.Key)) {
			return
		}
	}
	if wr.Const > 0 {
		return
	}
	for _, w := range p.firstWritersAfter(c, r.Key) {
		if w != r.R {
			e.anti(r.R, w, r.rwDep(), r.Key, wr)
		}
	}
}

// dep adds a dependency that is not an anti-dependency; with the split
// encoding also into the target's second node (but for a ww edge at
// prefix consistency).
func (e *Encoding) dep(from, to history.TxnID, d anomaly.Dep, k history.KeyID, when cond) {
	if from == history.Init || when.Const < 0 {
		return
	}
	when = e.and(when, e.and(e.presence(from), e.presence(to)))
	// At prefix consistency a ww edge orders versions without making the
	// first transaction visible to the second: it does not enter the
	// second node (the begin node in the BC graph; commit → commit).
	order := d == anomaly.WW && e.p.spec.prefix
	if e.bc {
		if order {
			e.edge(node(from), node(to), d, k, when)
			return
		}
		e.edge(node(from), node(to)+e.split, d, k, when) // commit → begin
		return
	}
	e.edge(node(from), node(to), d, k, when)
	if e.split > 0 && !order {
		e.edge(node(from), node(to)+e.split, d, k, when)
	}
}

// anti adds an anti-dependency; with the split encoding from the source's
// second node.
func (e *Encoding) anti(from, to history.TxnID, d anomaly.Dep, k history.KeyID, when cond) {
	if when.Const < 0 {
		return
	}
	when = e.and(when, e.and(e.presence(from), e.presence(to)))
	e.edge(node(from)+e.split, node(to), d, k, when)
}

func (e *Encoding) edge(from, to int32, d anomaly.Dep, k history.KeyID, when cond) {
	if when.Const < 0 {
		return
	}
	e.G.Edge(from, to, d, k, when)
	e.g.grow(irEdgeBytes, "the edges of the dependency graph") // the loops adding edges look at e.g.err
}

// FixedEdge adds an always-present edge between graph nodes (the real-time
// chain).
func (e *Encoding) FixedEdge(from, to int32, d anomaly.Dep) {
	e.G.Edge(from, to, d, history.NoKey, yes)
}
