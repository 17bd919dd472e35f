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
	// orders after it (reduced to the first such writer of each session,
	// as later ones follow it in session order, and of those to the ones
	// no other reaches, except at causal consistency: see
	// firstWritersAfter). Only the sparse construction makes them; the
	// dense one derives them from Pairs.
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

// Edge is an edge of a dependency graph (checker.Edge).
type Edge = checker.Edge

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

// Present reports whether t takes part: it took effect or is optional.
func (p *Polygraph) Present(t history.TxnID) bool {
	return t == history.Init || p.ix.Effective(t) || p.Optional[t]
}

// certain reports whether t takes part for sure.
func (p *Polygraph) certain(t history.TxnID) bool { return t == history.Init || p.ix.Effective(t) }

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
