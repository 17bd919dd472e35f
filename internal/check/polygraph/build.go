package polygraph

import (
	"context"
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/precheck"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
)

// Read is one external read and the transactions whose final write of its
// key holds the value read (Init for the initial state): its candidate
// writers. With one candidate the wr edge is known; with several the
// solver chooses (VeriStrong's uncertain WR, §3.2).
type Read struct {
	R     history.TxnID
	Key   history.KeyID
	Cands []history.TxnID
	// Writes says R itself writes or deletes the key (read-modify-write):
	// whichever candidate it read from precedes it in the version order.
	Writes bool
	// Pred says every observation behind the read came from a scan or
	// iterator: its dependencies are predicate ones (pwr, prw).
	Pred bool
	// Op is the position in R of the (first) operation behind the read.
	Op int32
}

// wrDep is the kind of the read's read dependency: wr, or pwr for a
// predicate read.
func (r Read) wrDep() anomaly.Dep {
	if r.Pred {
		return anomaly.PWR
	}
	return anomaly.WR
}

// rwDep is the kind of the read's anti-dependencies: rw, or prw.
func (r Read) rwDep() anomaly.Dep {
	if r.Pred {
		return anomaly.PRW
	}
	return anomaly.RW
}

// Pair is an unordered pair of writers of one key, A < B by id; the solver
// chooses which comes first unless pruning already knows (Order ≠ 0).
type Pair struct {
	A, B  history.TxnID
	Key   history.KeyID
	Order int8 // +1: A before B; -1: B before A; 0: unknown
}

// Polygraph is the hyper-polygraph of a history (VeriStrong §3): the known
// graph, the writers of each key with an order to choose between every
// two of them, and the reads with their candidate writers. The
// anti-dependencies follow from these by derivation at encoding time.
type Polygraph struct {
	spec      graphSpec
	h         *history.History
	ix        *history.Index
	effective func(history.TxnID) bool
	// Known are the edges every dependency graph has (so, rt through the
	// encoder's chain, known wr).
	Known   []Edge
	Reads   []Read
	Pairs   []Pair
	pairs   map[pairKey]int32
	writers map[history.KeyID][]history.TxnID
	keys    []history.KeyID
	// Choices are the modules' superpositions: exactly one alternative's
	// edges hold (ASG.Either).
	Choices [][][]Edge
	// Optional marks unknown transactions that may or may not have taken
	// effect; OptionalSO are session-order edges involving them.
	Optional   []bool
	OptionalSO []Edge
	// Impossible are optional transactions that cannot have committed:
	// alone they show an anomaly the level proscribes.
	Impossible []history.TxnID
	// KnownAnti are anti-dependencies every dependency graph has, from
	// reads with a known writer to the writers the known graph already
	// orders after it (reduced to the first such writer of each session;
	// later ones follow it in session order). Only the sparse
	// construction makes them; the dense one derives them from Pairs.
	KnownAnti []Edge
	// inferred are the commit-order edges read committed's or read
	// atomic's axiom infers (spec.infer), each under the choices of
	// writers it follows from; initFirst the transactions an inferred
	// edge may put before the initial state (each gets an edge from it,
	// which then closes a cycle).
	inferred  []inference
	initFirst []history.TxnID
	// lost are the lost updates every version order shows
	// (knownLostUpdates), found before the pairs; when there are any, the
	// construction stops there.
	lost []anomaly.Anomaly
	// chains is the known graph's reachability in the sparse
	// construction, nil in the dense one.
	chains *chains
	// reach is the known graph's reachability as pruning last computed
	// it (the chains in the sparse construction), or nil.
	reach reacher
	// pairsOf lists, in the sparse construction, the pairs of each
	// (writer, 0, key).
	pairsOf map[pairKey][]int32
	// bySession lists, in the sparse construction, the writers of each
	// key per session in session order.
	bySession map[history.KeyID][]sessionWriters
	// g stops the construction, pruning and encoding when the check's
	// context ends or the construction passes its memory share.
	g *guard
}

// inference is a commit-order edge an axiom infers: From (t2) precedes To
// (t1, Init for the initial state) because transaction R =
// Reads[Alpha].R read Key from To (candidate A of read Alpha) while t2
// also wrote Key and R read from t2 earlier in program order (read
// committed) or at all (read atomic) — candidate B of read Beta — or, with
// Beta < 0, t2 precedes R in its session (read atomic). Alpha, Beta, A
// and B index Reads and their candidates, which nothing narrows at the
// levels that infer.
type inference struct {
	From, To    history.TxnID
	Key         history.KeyID
	Alpha, Beta int32
	A, B        int32
}

// sessionWriters are the writers of a key in one session, in session order.
type sessionWriters struct {
	s  int32
	ws []history.TxnID
}

// Edge is an edge of a dependency graph (checker.Edge).
type Edge = checker.Edge

type pairKey struct {
	a, b history.TxnID
	k    history.KeyID
}

// graphSpec is what a level asks of the dependency graph — which
// dependencies enter it and how its cycles are judged. A level is this
// small definition, not a checker of its own (Boomslang §6).
type graphSpec struct {
	// reads: wr and pwr edges enter (every level above read uncommitted).
	reads bool
	// anti: rw and prw edges enter, derived from the reads and a version
	// order the solver chooses.
	anti bool
	// split: snapshot isolation's split graph, where every cycle must
	// hold two adjacent anti-dependencies.
	split bool
	// rule, when set, forbids only the cycles it names instead of every
	// cycle (PL-2+ and PL-FCV: none with at most one anti-dependency;
	// repeatable read with predicate reads: none through an item one).
	rule acyclic.Rule
	// cursor: no lost update on any key (cursor stability's G-cursor),
	// as clauses over the version order; no anti-dependency enters.
	cursor bool
	// session and realTime: so and rt edges enter.
	session, realTime bool
	// infer: the commit-order edges read committed's or read atomic's
	// axiom infers enter, each under the choices of writers it follows
	// from (see inferred); the version order is free.
	infer level.Axiom
	// prefix: in the split graph, ww edges enter only the target's first
	// node (prefix consistency: writing after a transaction does not
	// make it visible).
	prefix bool
	// perRead: every read is a choice of its own, even where a
	// transaction read the same thing twice (read committed: the two may
	// come from different writers).
	perRead bool
}

// specOf returns level l's graph definition for history h, or false for a
// level the solver does not decide.
func specOf(l level.Level, h *history.History) (graphSpec, bool) {
	s := graphSpec{session: l.SessionOrder, realTime: l.RealTime}
	switch l.ID {
	case level.ReadUncommitted:
	case level.ReadCommitted:
		s.reads = true
	case level.CursorStability:
		s.reads, s.cursor = true, true
	case level.PL2Plus, level.PLFCV:
		// PL-FCV proscribes G-SIb on the start-ordered graph: a black-box
		// history allows every transaction to start before any commits,
		// which leaves no start-dependency, so it is PL-2+ unless a module
		// (start-order) adds the database's start dependencies.
		s.reads, s.anti, s.rule = true, true, acyclic.NoSingleAnti
	case level.Serializable, level.StrictSerializable:
		s.reads, s.anti = true, true
	case level.RepeatableRead:
		// PL-2.99 proscribes cycles with an item anti-dependency. Without
		// predicate reads every anti-dependency is one, and that is plain
		// acyclicity (serializability without session order).
		s.reads, s.anti = true, true
		if l.Phantoms && h != nil && hasRanges(h) {
			s.rule = acyclic.NoItemAnti
		}
	case level.SnapshotIsolation, level.GSI:
		s.reads, s.anti, s.split = true, true, true
	case level.PlainSerializable:
		s.reads, s.anti = true, true
	case level.RCSession:
		// Biswas and Enea's axiom: the commit order extends so and wr and
		// the edges the axiom infers; it exists iff they are acyclic.
		s.reads, s.infer, s.perRead = true, level.AxiomRC, true
	case level.ReadAtomic:
		s.reads, s.infer = true, level.AxiomRA
	case level.Causal:
		// No cycle of so, wr and ww; none of one anti-dependency and so
		// and wr edges alone (a read that missed a causal predecessor's
		// write).
		s.reads, s.anti, s.rule = true, true, acyclic.NoCausalAnti
	case level.Prefix:
		// (so ∪ wr ∪ ww ∪ (so ∪ wr) ; rw) acyclic: the split graph with
		// ww kept out of the second nodes.
		s.reads, s.anti, s.split, s.prefix = true, true, true, true
	default:
		return s, false
	}
	return s, true
}

// hasRanges reports whether some transaction scans or iterates.
func hasRanges(h *history.History) bool {
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind.IsRange() {
				return true
			}
		}
	}
	return false
}

// Build constructs the polygraph of ix's history. With dense false, and
// when the level has session order and every transaction's status is
// known, the construction is sparse: only writers the known graph leaves
// unordered form pairs (see chains); dense makes every two writers of a
// key a pair, as VeriStrong does before pruning. Transactions that took
// effect take part; so do unknown transactions that did not (nobody read
// them unambiguously) but whose write some read could have observed
// (values repeat): they are optional, present exactly when a variable
// says so, and every constraint they bring is conditioned on it.
func Build(ix *history.Index, l level.Level, dense bool, modules ...checker.Module) (*Polygraph, error) {
	return build(context.Background(), ix, l, dense, 0, modules...)
}

// build is Build, giving up with ctx's error when ctx ends, and with a
// *MemoryError when what it keeps (candidates, pairs, known edges) passes
// limit bytes (0: no limit).
func build(ctx context.Context, ix *history.Index, l level.Level, dense bool, limit int64, modules ...checker.Module) (*Polygraph, error) {
	spec, _ := specOf(l, ix.History())
	sessionOrder := spec.session
	h := ix.History()
	p := &Polygraph{spec: spec, h: h, ix: ix, effective: ix.Effective, pairs: map[pairKey]int32{},
		writers: map[history.KeyID][]history.TxnID{}, Optional: make([]bool, len(h.Txns)), g: newGuard(ctx, limit)}
	// Reads and their candidates, growing the optional set to a fixpoint:
	// an optional transaction's reads may name further candidates.
	var work []history.TxnID
	for i := range h.Txns {
		if ix.Effective(history.TxnID(i)) {
			work = append(work, history.TxnID(i))
		}
	}
	if !spec.reads {
		work = nil // below read committed, what was read takes no part
	}
	for len(work) > 0 {
		if p.g.step() {
			return nil, p.g.err
		}
		t := work[0]
		work = work[1:]
		for _, r := range p.readsOf(t) {
			if p.g.grow(int64(cap(r.Cands))*candBytes+readBytes, "the candidate writers of reads") {
				return nil, p.g.err
			}
			p.Reads = append(p.Reads, r)
			for _, c := range r.Cands {
				if c != history.Init && !ix.Effective(c) && !p.Optional[c] {
					p.Optional[c] = true
					work = append(work, c)
					// It may have committed only if that shows no anomaly.
					if len(precheck.Txn(ix, l, c)) > 0 {
						p.Impossible = append(p.Impossible, c)
					}
				}
			}
		}
	}
	// Writers of each key: the final writes of present or optional
	// transactions.
	for i := range h.Txns {
		t := history.TxnID(i)
		if p.g.step() {
			return nil, p.g.err
		}
		if !p.Present(t) {
			continue
		}
		var seen []history.KeyID
		for _, op := range h.Txns[i].Ops {
			if (op.Kind == history.Write || op.Kind == history.Delete) && !slices.Contains(seen, op.Key) {
				seen = append(seen, op.Key)
				if p.writers[op.Key] == nil {
					p.keys = append(p.keys, op.Key)
				}
				p.writers[op.Key] = append(p.writers[op.Key], t)
			}
		}
	}
	slices.Sort(p.keys)
	for _, r := range p.Reads {
		if len(r.Cands) == 1 && r.Cands[0] != history.Init && p.certain(r.R) && p.certain(r.Cands[0]) {
			p.Known = append(p.Known, Edge{From: r.Cands[0], To: r.R, Dep: r.wrDep(), Key: r.Key})
		}
	}
	if sessionOrder {
		p.sessionOrder()
	}
	if spec.infer != level.NoAxiom && !p.infer() {
		return nil, p.g.err
	}
	a := &asg{p}
	for _, m := range append([]checker.Module{HeaderVersionOrder{}}, modules...) {
		if err := m.Extend(a); err != nil {
			return nil, fmt.Errorf("module %s: %w", m.Name(), err)
		}
	}
	if len(p.Choices) == 0 {
		// Lost updates that every version order shows decide the check
		// before the writers' pairs, quadratic in a hot key's writers, are
		// built.
		if p.lost = p.knownLostUpdates(); len(p.lost) > 0 {
			return p, nil
		}
	}
	switch {
	case !spec.anti && !spec.cursor:
		// Without anti-dependencies the version order is free: any
		// topological order of the graph gives one that closes no cycle,
		// so writers need no pairs.
	case !dense && sessionOrder && !slices.Contains(p.Optional, true) && len(h.Txns)*len(h.Sessions) <= maxChainCells:
		p.sparsePairs()
	default:
		// Every two writers of a key form a pair.
	pairs:
		for _, k := range p.keys {
			ws := p.writers[k]
			for a := range ws {
				for b := a + 1; b < len(ws); b++ {
					if !p.addPair(ws[a], ws[b], k) {
						break pairs
					}
				}
			}
		}
	}
	if p.g.err != nil {
		return nil, p.g.err
	}
	// Known ww edges (a white-box version order, modules) decide the pairs
	// they name.
	for _, k := range p.Known {
		if k.Dep == anomaly.WW {
			p.fix(k.From, k.To, k.Key)
		}
	}
	// Read-modify-write: a known source precedes the reader's own write.
	for _, r := range p.Reads {
		if r.Writes && len(r.Cands) == 1 && r.Cands[0] != history.Init && p.certain(r.R) && p.certain(r.Cands[0]) {
			p.fix(r.Cands[0], r.R, r.Key)
		}
	}
	return p, nil
}

// infer lists the commit-order edges read committed's or read atomic's
// axiom infers (Biswas and Enea's saturation): for every read Alpha of key
// x by R and each of its candidate writers t1, an edge to t1 from every
// other writer t2 of x that R read from earlier in program order (read
// committed) or at all (read atomic), or (read atomic) that precedes R in
// its session: the last such writer that took effect for sure, and every
// optional one after it (earlier ones precede that one in session order,
// which the commit order extends). The inferences whose every choice is
// certain join the known graph. It reports false when the construction
// must stop (p.g.err says why).
func (p *Polygraph) infer() bool {
	h := p.h
	writes := map[pairKey]bool{}
	for _, k := range p.keys {
		for _, w := range p.writers[k] {
			writes[pairKey{w, 0, k}] = true
		}
	}
	readsOf := map[history.TxnID][]int32{}
	for i, r := range p.Reads {
		readsOf[r.R] = append(readsOf[r.R], int32(i))
	}
	add := func(f inference) bool {
		if p.g.grow(inferenceBytes, "the edges the axiom infers") {
			return false
		}
		p.inferred = append(p.inferred, f)
		return true
	}
	for _, t3 := range p.readers() {
		rs := readsOf[t3]
		for _, a := range rs {
			ra := &p.Reads[a]
			for _, b := range rs {
				rb := &p.Reads[b]
				if a == b || p.spec.infer == level.AxiomRC && rb.Op >= ra.Op {
					continue
				}
				for bi, t2 := range rb.Cands {
					if t2 == history.Init || !writes[pairKey{t2, 0, ra.Key}] {
						continue
					}
					for ai, t1 := range ra.Cands {
						if t1 != t2 && !add(inference{From: t2, To: t1, Key: ra.Key, Alpha: a, Beta: b, A: int32(ai), B: int32(bi)}) {
							return false
						}
					}
				}
			}
		}
	}
	if p.spec.infer == level.AxiomRA {
		for _, txns := range p.presentBySession() {
			last := map[history.KeyID]history.TxnID{}    // the last certain writer so far
			later := map[history.KeyID][]history.TxnID{} // optional writers after it
			for _, t3 := range txns {
				for _, a := range readsOf[t3] {
					ra := &p.Reads[a]
					srcs := later[ra.Key]
					if w, ok := last[ra.Key]; ok {
						srcs = append([]history.TxnID{w}, srcs...)
					}
					for _, t2 := range srcs {
						for ai, t1 := range ra.Cands {
							if t1 != t2 && !add(inference{From: t2, To: t1, Key: ra.Key, Alpha: a, Beta: -1, A: int32(ai)}) {
								return false
							}
						}
					}
				}
				for _, op := range h.Txns[t3].Ops {
					if op.Kind != history.Write && op.Kind != history.Delete {
						continue
					}
					if p.certain(t3) {
						last[op.Key], later[op.Key] = t3, nil
					} else if l := later[op.Key]; len(l) == 0 || l[len(l)-1] != t3 {
						later[op.Key] = append(l, t3)
					}
				}
			}
		}
	}
	first := map[history.TxnID]bool{}
	for _, f := range p.inferred {
		if f.To == history.Init && !first[f.From] {
			first[f.From] = true
			p.initFirst = append(p.initFirst, f.From)
		}
		if p.inferenceKnown(f) {
			p.Known = append(p.Known, Edge{From: f.From, To: f.To, Dep: anomaly.WW, Key: f.Key})
		}
	}
	return p.g.check() == nil
}

// inferenceBytes is what one inference keeps.
const inferenceBytes = 32

// inferenceKnown reports whether f holds in every choice: its reads have
// one candidate each and every transaction involved takes part for sure.
func (p *Polygraph) inferenceKnown(f inference) bool {
	ra := p.Reads[f.Alpha]
	if len(ra.Cands) != 1 || !p.certain(ra.R) || !p.certain(f.From) || !p.certain(f.To) {
		return false
	}
	return f.Beta < 0 || len(p.Reads[f.Beta].Cands) == 1
}

// readers returns the transactions with reads, in the order of Reads.
func (p *Polygraph) readers() []history.TxnID {
	var out []history.TxnID
	for i, r := range p.Reads {
		if i == 0 || p.Reads[i-1].R != r.R {
			out = append(out, r.R)
		}
	}
	return out
}

// presentBySession returns, for each session, its transactions that take
// part, in session order.
func (p *Polygraph) presentBySession() [][]history.TxnID {
	by := make([][]history.TxnID, len(p.h.Sessions))
	for i := range p.h.Txns {
		if t := history.TxnID(i); p.Present(t) {
			by[p.h.Txns[i].Session] = append(by[p.h.Txns[i].Session], t)
		}
	}
	return by
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
// initial state): every writer ordered after t is one of them or follows
// one in session order.
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
	return out
}

// Present reports whether t takes part: it took effect or is optional.
func (p *Polygraph) Present(t history.TxnID) bool {
	return t == history.Init || p.ix.Effective(t) || p.Optional[t]
}

// certain reports whether t takes part for sure.
func (p *Polygraph) certain(t history.TxnID) bool { return t == history.Init || p.ix.Effective(t) }

// readsOf returns the keys t observed externally — by reads, scans and
// iterators, once per key and observation — with their candidate writers:
// transactions that took effect or are of unknown status whose final write
// or delete of the key left what was observed, and the initial state.
func (p *Polygraph) readsOf(t history.TxnID) []Read {
	ix, h := p.ix, p.h
	ops := h.Txns[t].Ops
	var out []Read
	var seen []history.Observation
	// A large transaction (Cobra's fauna-page has 860 operations in one)
	// looks its earlier observations and its written keys up in maps
	// instead of scanning for them: the scans are quadratic in its size.
	var (
		seenAt  map[observed]int
		written map[history.KeyID]bool
	)
	if len(ops) > largeTxn {
		seenAt = make(map[observed]int)
		written = writtenKeys(ops)
	}
	ix.Observations(t, func(o history.Observation) {
		if o.Own >= 0 {
			return
		}
		if !p.spec.perRead {
			if seenAt != nil {
				if i, ok := seenAt[observed{o.Key, o.Seen, o.Value}]; ok {
					out[i].Pred = out[i].Pred && o.Pred
					return
				}
				seenAt[observed{o.Key, o.Seen, o.Value}] = len(out)
			} else {
				for i, s := range seen {
					if s.Key == o.Key && s.Seen == o.Seen && s.Value == o.Value {
						out[i].Pred = out[i].Pred && o.Pred
						return
					}
				}
			}
		}
		writes := false
		if written != nil {
			writes = written[o.Key]
		} else {
			writes = writesKey(ops, o.Key)
		}
		r := Read{R: t, Key: o.Key, Writes: writes, Pred: o.Pred, Op: o.Op}
		if ix.InitiallySeen(o) {
			r.Cands = append(r.Cands, history.Init)
		}
		ix.Sources(o, func(w int32) bool {
			ref := ix.WriteRef(w)
			// A transaction has one final write of the key, and the
			// writes come in file order: a repeat can only be the last.
			if ref.Txn == t || !ix.WriteIsFinal(w) || len(r.Cands) > 0 && r.Cands[len(r.Cands)-1] == ref.Txn {
				return true
			}
			if ix.Effective(ref.Txn) || h.Txns[ref.Txn].Status == history.Unknown {
				r.Cands = append(r.Cands, ref.Txn)
			}
			return true
		})
		// An observation nobody can have served is reported by the shared
		// checks; it takes no part here. The slot in seen still keeps
		// out aligned.
		if seenAt == nil {
			seen = append(seen, o)
		}
		out = append(out, r)
	})
	kept := out[:0]
	for _, r := range out {
		if len(r.Cands) > 0 {
			kept = append(kept, r)
		}
	}
	return kept
}

// sessionOrder adds so edges: known ones between consecutive transactions
// that took effect, and for optional transactions edges to and from their
// nearest certain neighbours, which the encoder conditions on them.
func (p *Polygraph) sessionOrder() {
	for _, txns := range p.presentBySession() {
		last := history.TxnID(-1)
		for n, t := range txns {
			if p.certain(t) {
				if last >= 0 {
					p.Known = append(p.Known, Edge{From: last, To: t, Dep: anomaly.SO, Key: history.NoKey})
				}
				last = t
				continue
			}
			if last >= 0 {
				p.OptionalSO = append(p.OptionalSO, Edge{From: last, To: t, Dep: anomaly.SO, Key: history.NoKey})
			}
			for _, u := range txns[n+1:] {
				p.OptionalSO = append(p.OptionalSO, Edge{From: t, To: u, Dep: anomaly.SO, Key: history.NoKey})
				if p.certain(u) {
					break
				}
			}
		}
	}
}

// largeTxn is the number of operations past which a transaction's reads
// look up, rather than scan for, what the transaction did before.
const largeTxn = 32

// observed is what an observation saw of a key, as a map key.
type observed struct {
	k    history.KeyID
	seen history.Seen
	v    history.Value
}

// writtenKeys returns the keys ops write or delete.
func writtenKeys(ops []history.Op) map[history.KeyID]bool {
	w := make(map[history.KeyID]bool)
	for _, op := range ops {
		if op.Kind == history.Write || op.Kind == history.Delete {
			w[op.Key] = true
		}
	}
	return w
}

// writesKey reports whether ops write or delete k.
func writesKey(ops []history.Op, k history.KeyID) bool {
	for _, op := range ops {
		if (op.Kind == history.Write || op.Kind == history.Delete) && op.Key == k {
			return true
		}
	}
	return false
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
