package polygraph

import (
	"slices"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
)

// The writer pairs: two writers of a key the known graph leaves unordered,
// a choice for the solver; the sparse construction that finds them, and
// the anti-dependencies the known order implies.

// Pair is an unordered pair of writers of one key, A < B by id; the solver
// chooses which comes first unless pruning already knows (Order ≠ 0).
type Pair struct {
	A, B  history.TxnID
	Key   history.KeyID
	Order int8 // +1: A before B; -1: B before A; 0: unknown
}

// sessionWriters are the writers of a key in one session, in session order.
type sessionWriters struct {
	s  int32
	ws []history.TxnID
}

type pairKey struct {
	a, b history.TxnID
	k    history.KeyID
}

// addPair makes a and b (a < b) a pair on k. It reports false, making
// none, when the construction must stop (p.g.err says why).
func (p *Polygraph) addPair(a, b history.TxnID, k history.KeyID) bool {
	if p.g.grow(pairBytes, "the pairs of writers to order") {
		return false
	}
	i := int32(len(p.Pairs))
	p.pairs[pairKey{a, b, k}] = i
	p.Pairs = append(p.Pairs, Pair{A: a, B: b, Key: k})
	if p.pairsOf != nil {
		p.pairsOf[pairKey{a, 0, k}] = append(p.pairsOf[pairKey{a, 0, k}], i)
		p.pairsOf[pairKey{b, 0, k}] = append(p.pairsOf[pairKey{b, 0, k}], i)
	}
	return true
}

// sparsePairs is the sparse construction: the known graph (session order,
// known wr) orders most writers of a key already, since a writer that
// reaches another must precede it; only writers it leaves unordered form
// pairs, found per session as the positions between the last one that
// reaches the writer and the first one it reaches. The anti-dependencies
// the known order implies go to KnownAnti. When the known graph is cyclic
// no pair is made: the cycle search reports it. It stops early when p.g
// says to (p.g.err says why).
func (p *Polygraph) sparsePairs() {
	// The chains' two tables hold transactions × sessions entries each.
	if p.g.grow(2*int64(len(p.h.Txns))*int64(len(p.h.Sessions))*4+int64(len(p.Known))*edgeBytes, "the reachability index of the known graph") || p.g.check() != nil {
		return
	}
	g, order, ok := knownGraph(len(p.h.Txns), p.Known)
	if !ok {
		return
	}
	c := newChains(p.h, p.ix.Effective)
	if !c.compute(g, order, p.g) {
		return
	}
	p.chains, p.reach, p.pairsOf = c, c, map[pairKey][]int32{}
	last := c.reachedBy(g, order, p.g)
	if p.g.check() != nil {
		return
	}
	p.bySession = make(map[history.KeyID][]sessionWriters, len(p.keys))
	for _, k := range p.keys {
		var by []sessionWriters
		for _, w := range p.writers[k] { // in id order, so in session order
			i, found := slices.BinarySearchFunc(by, c.sess[w], func(x sessionWriters, s int32) int { return int(x.s - s) })
			if !found {
				by = slices.Insert(by, i, sessionWriters{s: c.sess[w]})
			}
			by[i].ws = append(by[i].ws, w)
		}
		p.bySession[k] = by
		for _, a := range p.writers[k] {
			if p.g.step() {
				return
			}
			row := int(a) * c.count
			for _, sw := range by {
				s, ws := sw.s, sw.ws
				if s <= c.sess[a] {
					continue
				}
				lo, hi := last[row+int(s)], c.first[row+int(s)]
				i, _ := slices.BinarySearchFunc(ws, lo+1, func(w history.TxnID, p int32) int { return int(c.pos[w] - p) })
				for ; i < len(ws) && c.pos[ws[i]] < hi; i++ {
					if !p.addPair(min(a, ws[i]), max(a, ws[i]), k) {
						return
					}
				}
			}
		}
	}
	for _, r := range p.Reads {
		if len(r.Cands) == 1 && !p.addKnownAnti(r) {
			return
		}
	}
}

// addKnownAnti adds, in the sparse construction, the anti-dependencies of
// a read whose writer is known to the writers ordered after that one. It
// reports false when the construction must stop (p.g.err says why).
func (p *Polygraph) addKnownAnti(r Read) bool {
	ws := p.firstWritersAfter(r.Cands[0], r.Key)
	if p.g.grow(int64(len(ws))*edgeBytes, "the anti-dependencies of known reads") {
		return false
	}
	for _, w := range ws {
		if w != r.R {
			p.KnownAnti = append(p.KnownAnti, Edge{From: r.R, To: w, Dep: r.rwDep(), Key: r.Key})
		}
	}
	return true
}

// firstWritersAfter returns, in the sparse construction, for each session
// the first writer of k that the known graph orders after t (t may be the
// initial state), every writer ordered after t being one of them or
// following one in session order; and of those only the ones no other of
// them reaches (chains.minimal). An anti-dependency into a writer another
// one reaches is implied by the one into that other writer and the known
// path, which holds in every dependency graph: a cycle through the first
// is a closed walk through the second, with the same anti-dependencies,
// so the level forbids a cycle of it too — at every level but causal
// consistency, whose rule tells ww edges apart and where the path may
// hold one (there every first writer stays). On the 24-session general
// histories of docs/benchmarks.md a read keeps 1.5 writers on average
// instead of 21.
func (p *Polygraph) firstWritersAfter(t history.TxnID, k history.KeyID) []history.TxnID {
	c := p.chains
	var out []history.TxnID
	for _, sw := range p.bySession[k] {
		ws, from := sw.ws, int32(0)
		if t != history.Init {
			from = c.first[int(t)*c.count+int(sw.s)]
		}
		i, _ := slices.BinarySearchFunc(ws, from, func(w history.TxnID, p int32) int { return int(c.pos[w] - p) })
		if i < len(ws) {
			out = append(out, ws[i])
		}
	}
	if p.spec.rule != acyclic.NoCausalAnti {
		out = c.minimal(out)
	}
	return out
}

// pair returns the index of the pair of a and b on k, and whether a is its A.
func (p *Polygraph) pair(a, b history.TxnID, k history.KeyID) (int32, bool) {
	if a < b {
		i, ok := p.pairs[pairKey{a, b, k}]
		if !ok {
			return -1, true
		}
		return i, true
	}
	i, ok := p.pairs[pairKey{b, a, k}]
	if !ok {
		return -1, false
	}
	return i, false
}

// fix records that a precedes b on k. It reports false when the opposite
// was already known (a cycle the known graph will show).
func (p *Polygraph) fix(a, b history.TxnID, k history.KeyID) bool {
	i, aFirst := p.pair(a, b, k)
	if i < 0 {
		return true
	}
	want := int8(1)
	if !aFirst {
		want = -1
	}
	switch p.Pairs[i].Order {
	case 0:
		p.Pairs[i].Order = want
		return true
	case want:
		return true
	}
	return false
}

// Before returns the pair's order as (first, second).
func (pr Pair) Before() (history.TxnID, history.TxnID) {
	if pr.Order < 0 {
		return pr.B, pr.A
	}
	return pr.A, pr.B
}
