package polygraph

import (
	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
)

// knownEdges returns the known graph's edges in parts, so that the large
// fixed ones are not copied each pruning round: the known wr and so edges,
// the ww edges of decided pairs with the rw edges they derive with reads
// whose writer is known, and KnownAnti. With dOnly the rw edges are left
// out (snapshot isolation's pruning reasons over dependency paths without
// anti-dependencies). It stops early, the edges incomplete, when p.g says
// to: callers look at p.Err.
func (p *Polygraph) knownEdges(dOnly bool) [][]Edge {
	var out []Edge
	// later maps (writer, 0, key) to the writers known to follow it; the
	// sparse construction has them in pairsOf already.
	var later map[pairKey][]history.TxnID
	if !dOnly && p.pairsOf == nil {
		later = map[pairKey][]history.TxnID{}
	}
	for _, pr := range p.Pairs {
		if p.g.step() {
			break
		}
		if pr.Order != 0 && p.certain(pr.A) && p.certain(pr.B) {
			a, b := pr.Before()
			out = append(out, Edge{From: a, To: b, Dep: anomaly.WW, Key: pr.Key})
			if later != nil {
				later[pairKey{a, 0, pr.Key}] = append(later[pairKey{a, 0, pr.Key}], b)
			}
		}
	}
	if dOnly {
		return [][]Edge{p.Known, out}
	}
	for _, r := range p.Reads {
		if p.g.step() {
			break
		}
		if len(r.Cands) != 1 || !p.certain(r.R) || !p.certain(r.Cands[0]) {
			continue
		}
		c := r.Cands[0]
		if c == history.Init {
			if p.chains != nil {
				continue // in KnownAnti
			}
			for _, w := range p.writers[r.Key] {
				if w != r.R && p.certain(w) {
					out = append(out, Edge{From: r.R, To: w, Dep: r.rwDep(), Key: r.Key})
				}
			}
			continue
		}
		if later != nil {
			for _, w := range later[pairKey{c, 0, r.Key}] {
				if w != r.R {
					out = append(out, Edge{From: r.R, To: w, Dep: r.rwDep(), Key: r.Key})
				}
			}
			continue
		}
		for _, pi := range p.pairsOf[pairKey{c, 0, r.Key}] {
			pr := &p.Pairs[pi]
			if pr.Order == 0 || !p.certain(pr.A) || !p.certain(pr.B) {
				continue
			}
			if a, w := pr.Before(); a == c && w != r.R {
				out = append(out, Edge{From: r.R, To: w, Dep: r.rwDep(), Key: r.Key})
			}
		}
	}
	return [][]Edge{p.Known, out, p.KnownAnti}
}

// reacher answers reachability over the known graph.
type reacher interface {
	// reaches reports whether a reaches b by a non-empty path.
	reaches(a, b history.TxnID) bool
}

// reach is a reachability matrix over transactions, one bitset per node.
type reach struct {
	words int
	bits  []uint64
}

func (r *reach) reaches(a, b history.TxnID) bool {
	if a < 0 || b < 0 {
		return false
	}
	i := int(a)*r.words + int(b)/64
	return r.bits[i]>>(uint(b)%64)&1 != 0
}

// reachability computes which transaction reaches which in an acyclic
// graph, given a topological order of it. It stops early, the matrix
// incomplete, when gd says to.
func reachability(g *graph.Graph, order []int32, gd *guard) *reach {
	n := g.Nodes()
	words := (n + 63) / 64
	r := &reach{words: words, bits: make([]uint64, n*words)}
	for i := len(order) - 1; i >= 0; i-- {
		if gd.step() {
			break
		}
		v := int(order[i])
		row := r.bits[v*words : (v+1)*words]
		lo, hi := g.Out(int32(v))
		for e := lo; e < hi; e++ {
			w := g.To(e)
			row[w/64] |= 1 << (uint(w) % 64)
			src := r.bits[int(w)*words : (int(w)+1)*words]
			for j, x := range src {
				row[j] |= x
			}
		}
	}
	return r
}

// maxPruneNodes bounds the reachability matrix (n² bits) of the dense
// construction.
const maxPruneNodes = 60000

// Prune decides pairs that the known graph already orders: a choice that
// would close a cycle with known edges (its ww edge, or an rw edge it
// derives from a read whose writer is known) is impossible, so the other
// holds (VeriStrong §6.1.1, pruning of 1-width cycles), repeated to a
// fixpoint. It returns the number of pairs decided and false when the
// known graph itself is cyclic (then the history violates the level).
//
// At levels that allow some cycles through anti-dependencies (snapshot
// isolation, and those with a rule or cursor stability) only the
// dependency edges count as known paths (a dependency cycle is forbidden
// everywhere), and a choice is impossible through an anti-dependency only
// when the level forbids a cycle with that one anti-dependency (see
// singleAnti).
//
// Pruning stops early, keeping what it decided, when the check's context
// ends or the reachability matrix would pass the construction's memory
// share: p.Err then says why.
func (p *Polygraph) Prune(si bool, rounds int) (int, bool) {
	n := len(p.h.Txns)
	if p.chains == nil && n > maxPruneNodes {
		return 0, true
	}
	if p.chains == nil && p.g.grow(2*int64(n)*int64((n+63)/64)*8, "the reachability matrix of pruning") {
		return 0, true
	}
	depsOnly := si || p.spec.rule != 0 || p.spec.cursor
	readersOf := map[pairKey][]history.TxnID{} // (writer, -, key) → readers with that known writer
	for _, r := range p.Reads {
		if p.g.step() {
			return 0, true
		}
		if len(r.Cands) == 1 && r.Cands[0] != history.Init && p.singleAnti(r) {
			k := pairKey{r.Cands[0], 0, r.Key}
			readersOf[k] = append(readersOf[k], r.R)
		}
	}
	decided := 0
	for round := 0; rounds <= 0 || round < rounds; round++ {
		g, order, ok := knownGraph(n, p.knownEdges(depsOnly)...)
		if p.g.err != nil {
			return decided, true
		}
		if !ok {
			return decided, false
		}
		if p.g.check() != nil {
			return decided, true
		}
		var r reacher
		if p.chains != nil {
			if !p.chains.compute(g, order, p.g) {
				return decided, true
			}
			r = p.chains
		} else if r = reachability(g, order, p.g); p.g.err != nil {
			return decided, true
		}
		p.reach = r
		// impossible reports whether "a before b" closes a known cycle.
		impossible := func(a, b history.TxnID, k history.KeyID) bool {
			if r.reaches(b, a) {
				return true
			}
			for _, rd := range readersOf[pairKey{a, 0, k}] {
				if rd != b && r.reaches(b, rd) {
					return true
				}
			}
			return false
		}
		changed := 0
		for i := range p.Pairs {
			if p.g.step() {
				return decided + changed, true
			}
			pr := &p.Pairs[i]
			if pr.Order != 0 || !p.certain(pr.A) || !p.certain(pr.B) {
				continue
			}
			noAB, noBA := impossible(pr.A, pr.B, pr.Key), impossible(pr.B, pr.A, pr.Key)
			switch {
			case noAB && noBA:
				pr.Order = 1 // both close a cycle: either shows it
				changed++
			case noAB:
				pr.Order = -1
				changed++
			case noBA:
				pr.Order = 1
				changed++
			}
		}
		changed += p.pruneCandidates(r)
		decided += changed
		if changed == 0 || p.g.err != nil {
			break
		}
	}
	return decided, true
}

// singleAnti reports whether the level forbids a cycle made of one
// anti-dependency of read r and dependency edges: everywhere but at
// cursor stability (which forbids only lost updates), for a predicate
// read at repeatable read (a phantom), at causal consistency (allowed
// through a ww edge) and at prefix consistency (allowed when a ww edge
// leads into the reader).
func (p *Polygraph) singleAnti(r Read) bool {
	return p.spec.anti && !p.spec.cursor && !p.spec.prefix && p.spec.rule != acyclic.NoCausalAnti &&
		!(p.spec.rule == acyclic.NoItemAnti && r.Pred)
}

// pruneCandidates drops candidate writers that the known graph rules out
// (VeriStrong §6.1.1 for uncertain wr): c cannot be the writer R read when
// R reaches c (the wr edge closes a cycle), or when some writer w of the
// key is known to follow c and to reach R (R would anti-depend on w, which
// reaches R). A read left with one candidate becomes known. It returns how
// many reads it narrowed.
func (p *Polygraph) pruneCandidates(r reacher) int {
	narrowed := 0
	for i := range p.Reads {
		rd := &p.Reads[i]
		if len(rd.Cands) < 2 || !p.certain(rd.R) {
			continue
		}
		keep := rd.Cands[:0:0]
		for _, c := range rd.Cands {
			if p.g.step() {
				return narrowed
			}
			if !p.certain(c) || !p.ruledOut(r, rd, c) {
				keep = append(keep, c)
			}
		}
		if len(keep) == len(rd.Cands) || len(keep) == 0 {
			continue // nothing ruled out, or everything: the solver will say
		}
		narrowed++
		rd.Cands = keep
		if len(keep) == 1 && p.chains != nil && !p.addKnownAnti(*rd) { // the encoder counts on KnownAnti for reads with one writer
			return narrowed
		}
		if len(keep) == 1 && keep[0] != history.Init && p.certain(keep[0]) {
			p.Known = append(p.Known, Edge{From: keep[0], To: rd.R, Dep: rd.wrDep(), Key: rd.Key})
			if rd.Writes {
				p.fix(keep[0], rd.R, rd.Key)
			}
		}
	}
	return narrowed
}

func (p *Polygraph) ruledOut(r reacher, rd *Read, c history.TxnID) bool {
	if c != history.Init && r.reaches(rd.R, c) {
		return true
	}
	if !p.singleAnti(*rd) {
		return false
	}
	// A writer known to follow c (by a path, or a decided pair) that
	// reaches the reader rules c out.
	follows := func(w history.TxnID) bool {
		return w != rd.R && w != c && p.certain(w) && r.reaches(w, rd.R)
	}
	for _, w := range p.writers[rd.Key] {
		if (c == history.Init || r.reaches(c, w)) && follows(w) {
			return true
		}
	}
	if c == history.Init {
		return false
	}
	if p.pairsOf != nil {
		// The sparse construction lists c's pairs on the key: no lookups.
		for _, pi := range p.pairsOf[pairKey{c, 0, rd.Key}] {
			pr := &p.Pairs[pi]
			if pr.Order == 0 {
				continue
			}
			if first, w := pr.Before(); first == c && follows(w) {
				return true
			}
		}
		return false
	}
	for _, w := range p.writers[rd.Key] {
		if !follows(w) {
			continue
		}
		if i, aFirst := p.pair(c, w, rd.Key); i >= 0 {
			if o := p.Pairs[i].Order; (o > 0 && aFirst) || (o < 0 && !aFirst) {
				return true
			}
		}
	}
	return false
}

// Open counts the pairs still undecided.
func (p *Polygraph) Open() int {
	n := 0
	for _, pr := range p.Pairs {
		if pr.Order == 0 {
			n++
		}
	}
	return n
}
