package polygraph

import (
	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/sat"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
)

// cond is a literal or a constant: c is +1 (true), -1 (false) or 0 (l).
type cond struct {
	l sat.Lit
	c int8
}

var (
	yes = cond{c: 1}
	no  = cond{c: -1}
)

// litEdge is an edge of the encoded graph with the condition under which it
// is present, kept to map solver conflicts back to dependency cycles.
type litEdge struct {
	from, to int32 // graph nodes
	dep      anomaly.Dep
	key      history.KeyID
	when     cond
}

// Encoding is a polygraph as SAT clauses plus an acyclicity theory (VeriStrong
// §4–5): a variable per undecided pair of writers, a variable per candidate
// writer of an uncertain read with exactly-one clauses, and auxiliary
// variables for derived anti-dependencies (r ↔ wr ∧ ww).
type Encoding struct {
	p       *Polygraph
	S       *sat.Solver
	T       *acyclic.Theory
	split   int32 // offset of the second nodes (snapshot isolation), 0 if none
	nodes   int32 // transaction nodes (both copies with split); auxiliary ones follow
	total   int32
	pairs   []cond
	present []cond // per transaction: yes, or the variable of an optional one
	edges   []litEdge
	// byVar maps a variable to the edges whose condition is it.
	byVar map[sat.Var][]int32
	ands  map[[2]sat.Lit]sat.Lit
	// Vars and Clauses count the encoding's size.
	Vars, Clauses int
	// TwoWidth counts the clauses that forbid 2-width cycles.
	TwoWidth int
	// twoWidth answers reachability in the known graph for the 2-width
	// clauses; nil switches them off.
	twoWidth reacher
}

// Node is the graph node of transaction t.
func node(t history.TxnID) int32 { return int32(t) + 1 }

// Encode builds the solver and theory for p. si selects the split graph of
// snapshot isolation; auxNodes reserves nodes after the transactions' for
// the real-time chain, which the caller adds with FixedEdge.
//
// With twoWidth, a derived anti-dependency that would close a cycle with
// a known path is not added as an edge: a binary clause forbids the two
// choices that derive it (VeriStrong §6.1.2, case II), so unit propagation
// sees the conflict instead of the theory.
func Encode(p *Polygraph, si bool, auxNodes int, twoWidth bool) *Encoding {
	n := int32(len(p.h.Txns) + 1)
	e := &Encoding{p: p, S: sat.New(), byVar: map[sat.Var][]int32{}, ands: map[[2]sat.Lit]sat.Lit{}}
	if twoWidth {
		e.twoWidth = p.reach
	}
	e.nodes = n
	if si {
		e.split = n
		e.nodes = 2 * n
	}
	e.total = e.nodes + int32(auxNodes)
	e.T = acyclic.New(int(e.total))
	e.S.SetTheory(e.T)
	e.present = make([]cond, len(p.h.Txns))
	for i := range e.present {
		e.present[i] = yes
		if p.Optional[i] {
			e.present[i] = cond{l: sat.Pos(e.newVar())}
		}
	}
	for _, t := range p.Impossible {
		e.clause(e.present[t].l.Not())
	}
	for _, k := range p.Known {
		e.dep(k.From, k.To, k.Dep, k.Key, yes)
	}
	for _, k := range p.KnownAnti {
		e.anti(k.From, k.To, k.Dep, k.Key, yes)
	}
	e.pairs = make([]cond, len(p.Pairs))
	for i, pr := range p.Pairs {
		switch pr.Order {
		case 1:
			e.pairs[i] = yes
		case -1:
			e.pairs[i] = no
		default:
			e.pairs[i] = cond{l: sat.Pos(e.newVar())}
		}
		e.dep(pr.A, pr.B, anomaly.WW, pr.Key, e.pairs[i])
		e.dep(pr.B, pr.A, anomaly.WW, pr.Key, e.pairs[i].not())
	}
	for _, r := range p.Reads {
		e.read(r)
	}
	for _, so := range p.OptionalSO {
		e.dep(so.From, so.To, so.Dep, so.Key, yes)
	}
	if e.twoWidth != nil && p.chains != nil {
		e.canonicalTwoWidth()
	}
	return e
}

// twoWidthScan bounds how far along each session canonicalTwoWidth looks
// for the second edge of a cycle.
const twoWidthScan = 4

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
		if e.pairs[i].c == 0 {
			open[pr.A] = append(open[pr.A], int32(i))
			open[pr.B] = append(open[pr.B], int32(i))
		}
	}
	// out returns the edge leaving t in pair j: its head and literal.
	out := func(j int32, t history.TxnID) (history.TxnID, sat.Lit) {
		if pr := p.Pairs[j]; pr.A == t {
			return pr.B, e.pairs[j].l
		} else {
			return pr.A, e.pairs[j].l.Not()
		}
	}
	seen := map[[2]sat.Lit]bool{}
	try := func(i int32, from, to history.TxnID, l1 sat.Lit, t2 history.TxnID) {
		for _, j := range open[t2] {
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
			}
		}
	}
	for i := range p.Pairs {
		if e.pairs[i].c != 0 {
			continue
		}
		for _, dir := range [2]bool{true, false} {
			from, to := p.Pairs[i].A, p.Pairs[i].B
			l1 := e.pairs[i].l
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

func (e *Encoding) newVar() sat.Var {
	e.Vars++
	return e.S.NewVar()
}

func (e *Encoding) clause(lits ...sat.Lit) {
	e.Clauses++
	e.S.AddClause(lits...)
}

func (c cond) not() cond {
	if c.c != 0 {
		return cond{c: -c.c}
	}
	return cond{l: c.l.Not()}
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
	return e.pairs[i].not()
}

// and returns a condition equivalent to x ∧ y.
func (e *Encoding) and(x, y cond) cond {
	switch {
	case x.c < 0 || y.c < 0:
		return no
	case x.c > 0:
		return y
	case y.c > 0:
		return x
	}
	if x.l > y.l {
		x, y = y, x
	}
	if z, ok := e.ands[[2]sat.Lit{x.l, y.l}]; ok {
		return cond{l: z}
	}
	z := sat.Pos(e.newVar())
	e.ands[[2]sat.Lit{x.l, y.l}] = z
	e.clause(x.l.Not(), y.l.Not(), z)
	e.clause(z.Not(), x.l)
	e.clause(z.Not(), y.l)
	return cond{l: z}
}

// read encodes one read: the choice of its writer, the writer preceding
// the reader's own write, and the anti-dependencies to every later writer.
func (e *Encoding) read(r Read) {
	p := e.p
	wr := make([]cond, len(r.Cands))
	if len(r.Cands) == 1 && p.certain(r.R) && p.certain(r.Cands[0]) {
		wr[0] = yes // a known wr edge (Build put it in Known)
	} else {
		lits := make([]sat.Lit, len(r.Cands))
		for i, c := range r.Cands {
			lits[i] = sat.Pos(e.newVar())
			wr[i] = cond{l: lits[i]}
			if pc := e.presence(c); pc.c == 0 {
				e.clause(lits[i].Not(), pc.l) // read from c only if c took effect
			}
			if pr := e.presence(r.R); pr.c == 0 {
				e.clause(lits[i].Not(), pr.l)
			}
		}
		atLeast := append([]sat.Lit(nil), lits...)
		if pr := e.presence(r.R); pr.c == 0 {
			atLeast = append(atLeast, pr.l.Not())
		}
		e.clause(atLeast...)
		e.atMostOne(lits)
		for i, c := range r.Cands {
			if c != history.Init {
				e.dep(c, r.R, anomaly.WR, r.Key, wr[i])
			}
		}
	}
	for i, c := range r.Cands {
		if r.Writes && c != history.Init && wr[i].c == 0 {
			if o := e.ww(c, r.R, r.Key); o.c == 0 {
				e.clause(wr[i].l.Not(), o.l)
			} else if o.c < 0 {
				e.clause(wr[i].l.Not())
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
			e.derivedAnti(r, w, wr[i], e.ww(c, w, r.Key))
		}
	}
}

// derivedAnti adds r.R →rw w, present when r read from a writer (wr) that
// precedes w (ww). When w already reaches the reader in the known graph
// and both conditions are open, the edge would close a 2-width cycle: a
// clause forbids the pair instead (VeriStrong §6.1.2, case II).
func (e *Encoding) derivedAnti(r Read, w history.TxnID, wr, ww cond) {
	if e.twoWidth != nil && wr.c == 0 && ww.c == 0 && e.twoWidth.reaches(w, r.R) {
		e.TwoWidth++
		e.clause(wr.l.Not(), ww.l.Not())
		return
	}
	e.anti(r.R, w, anomaly.RW, r.Key, e.and(wr, ww))
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
		if w != r.R {
			e.derivedAnti(r, w, wr, e.ww(c, w, r.Key))
		}
	}
	if wr.c > 0 {
		return
	}
	for _, w := range p.firstWritersAfter(c, r.Key) {
		if w != r.R {
			e.anti(r.R, w, anomaly.RW, r.Key, wr)
		}
	}
}

// atMostOne adds pairwise exclusion, or a sequential counter for long lists.
func (e *Encoding) atMostOne(lits []sat.Lit) {
	if len(lits) <= 6 {
		for i := range lits {
			for j := i + 1; j < len(lits); j++ {
				e.clause(lits[i].Not(), lits[j].Not())
			}
		}
		return
	}
	prev := sat.Pos(e.newVar()) // s_0: some of lits[..0] is true
	e.clause(lits[0].Not(), prev)
	for i := 1; i < len(lits); i++ {
		s := sat.Pos(e.newVar())
		e.clause(lits[i].Not(), s)
		e.clause(prev.Not(), s)
		e.clause(prev.Not(), lits[i].Not())
		prev = s
	}
}

// dep adds a dependency that is not an anti-dependency; with the split
// encoding also into the target's second node.
func (e *Encoding) dep(from, to history.TxnID, d anomaly.Dep, k history.KeyID, when cond) {
	if from == history.Init || when.c < 0 {
		return
	}
	when = e.and(when, e.and(e.presence(from), e.presence(to)))
	e.edge(node(from), node(to), d, k, when)
	if e.split > 0 {
		e.edge(node(from), node(to)+e.split, d, k, when)
	}
}

// anti adds an anti-dependency; with the split encoding from the source's
// second node.
func (e *Encoding) anti(from, to history.TxnID, d anomaly.Dep, k history.KeyID, when cond) {
	if when.c < 0 {
		return
	}
	when = e.and(when, e.and(e.presence(from), e.presence(to)))
	e.edge(node(from)+e.split, node(to), d, k, when)
}

func (e *Encoding) edge(from, to int32, d anomaly.Dep, k history.KeyID, when cond) {
	id := int32(len(e.edges))
	e.edges = append(e.edges, litEdge{from, to, d, k, when})
	if when.c > 0 {
		e.T.AddFixedEdge(from, to)
		return
	}
	e.T.AddEdge(from, to, when.l)
	e.byVar[when.l.Var()] = append(e.byVar[when.l.Var()], id)
}

// FixedEdge adds an always-present edge between graph nodes (the real-time
// chain).
func (e *Encoding) FixedEdge(from, to int32, d anomaly.Dep) {
	e.edges = append(e.edges, litEdge{from, to, d, history.NoKey, yes})
	e.T.AddFixedEdge(from, to)
}
