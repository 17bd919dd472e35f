// Package evidence finds, for every edge of a dependency cycle, what
// makes it: the operations on each side (with their keys and values in
// the history) and why the edge holds — the read that returned the
// write's value, the read-modify-write, list read, white-box version
// order or commit timestamps that order two writes, the session, the
// instants — or that the solver chose it among the history's uncertain
// dependencies. It is derived after the check from the history, its index
// and the cycle, and it is exact: every fact it names is in the history.
// An edge for which it finds nothing has Basis Missing, which is a bug of
// the checker or of this package (the tests look for it).
//
// It is data: the report layer renders it (report.EdgeText) and puts it
// in the JSON result.
package evidence

import (
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Basis says why an edge holds.
type Basis uint8

// The bases.
const (
	// Missing: no evidence was found (a bug).
	Missing Basis = iota
	// Read (wr, pwr): the read returned what the write installed, and no
	// other transaction that took effect installed it.
	Read
	// ReadModifyWrite (ww, and the overwrite of rw and prw): the later
	// writer read the earlier one's version of the key before writing it.
	ReadModifyWrite
	// ListOrder: a list read shows the earlier writer's element before the
	// later one's (or the later one's element is in no read at all, so it
	// comes after every element the reads show).
	ListOrder
	// VersionOrder: the history's white-box version order says so.
	VersionOrder
	// CommitOrder: the commit-order module orders the writers of a key by
	// commit_ts, and the earlier committed first.
	CommitOrder
	// Initial (rw, prw): the read saw the initial state, which every
	// write of the key overwrites.
	Initial
	// Chain (ww, rw, prw): a chain of the orders above, link by link
	// (Edge.Order), from the version read or overwritten to the
	// overwriting write.
	Chain
	// Inferred: no single fact of the history shows the edge, but the
	// checker inferred it from the known dependencies, so that every
	// choice of the uncertain ones has it: the other order of two writes
	// closes a cycle of known dependencies (Edge.Path, when this package
	// finds one; the solver's pruning infers orders round after round,
	// and not every such path is rebuilt here), or the other writers of
	// the value a read returned are ruled out so (Edge.Writers).
	Inferred
	// Chosen: the solver chose the edge among the history's uncertain
	// dependencies (an order of two writes no operation shows, or one of
	// several writers of the value a read returned); another choice may
	// lack it. Only a best-found cycle has such edges.
	Chosen
	// Session (so): both transactions ran in one session, the source
	// first.
	Session
	// RealTime (rt): the source's end instant precedes the target's
	// begin instant.
	RealTime
	// Timestamps (rt, start-order module): the source's commit_ts
	// precedes the target's start_ts.
	Timestamps
	// EitherOrder (ww): both writers read the same version of the key
	// before overwriting it (a lost update no version order avoids): the
	// cycle shows one order of their writes, and the other order loses
	// the other update the same way.
	EitherOrder
	numBases
)

var basisNames = [numBases]string{"missing", "read", "read-modify-write", "list-order", "version-order", "commit-order",
	"initial-state", "version-chain", "inferred", "chosen", "session", "real-time", "timestamps", "either-order"}

// String is the basis's name in the JSON result ("read-modify-write", …).
func (b Basis) String() string {
	if b < numBases {
		return basisNames[b]
	}
	return "Basis(" + strconv.Itoa(int(b)) + ")"
}

// Bases lists every basis, in order.
func Bases() []Basis {
	out := make([]Basis, numBases)
	for i := range out {
		out[i] = Basis(i)
	}
	return out
}

// Op is one operation an edge rests on, at the key it is about: a read,
// write, delete, append, list read, or a scan or iterator that observed
// Key (returned it, or claims it absent). Ref.Txn is history.Init (and
// Ref.Op -1) for the initial state of Key.
type Op struct {
	Ref history.OpRef
	Key history.KeyID
}

// InitialOp is the initial state of key k as an Op.
func InitialOp(k history.KeyID) Op {
	return Op{Ref: history.OpRef{Txn: history.Init, Op: -1}, Key: k}
}

// IsInitial reports whether o is the initial state.
func (o Op) IsInitial() bool { return o.Ref.Txn == history.Init }

// Link is one known order of two writers of a key.
type Link struct {
	From, To history.TxnID
	// Basis is ReadModifyWrite, ListOrder, VersionOrder or CommitOrder.
	Basis Basis
	// Shown is the operation that shows the order, when one does: for
	// ReadModifyWrite, To's read of From's version; for ListOrder, the
	// list read.
	Shown    history.OpRef
	HasShown bool
	// Unobserved (ListOrder) says To's element is in no read: it comes
	// after every element of the longest read (Shown), From's last.
	Unobserved bool
}

// Edge is the evidence of one step of a cycle.
type Edge struct {
	anomaly.Step
	Basis Basis
	// Ops are the operations that make the edge, the source's first: wr
	// and pwr the write and the read (or scan); ww the two writes; rw and
	// prw the read (or scan) and the overwriting write. so and rt have
	// none.
	Ops []Op
	// ReadFrom is, for rw and prw, the version the read saw: its write,
	// or the initial state (HasReadFrom).
	ReadFrom    Op
	HasReadFrom bool
	// Order are the known orders, link by link, from the earlier version's
	// writer to the overwriting one (ww, rw, prw), when the order is
	// known that way.
	Order []Link
	// Writers lists, when several transactions that took effect installed
	// what the read returned, every one of them (the initial state as
	// history.Init): the edge's writer is one choice among them.
	Writers []history.TxnID
	// Path is, for an Inferred order of two writes (From's version before
	// To's), known dependencies from the earlier writer that the other
	// order would close into a cycle: a path to the later writer, or to
	// a transaction that read the later writer's version (then the last
	// step is that wr, from the later writer).
	Path []anomaly.Step
}

// Found reports whether evidence was found.
func (e *Edge) Found() bool { return e.Basis != Missing }

// Finder derives the evidence of cycles of one history.
type Finder struct {
	h  *history.History
	ix *history.Index
	// anti says the level's cycles may cross anti-dependencies freely
	// (serializability and stronger): known paths for Inferred may use rw
	// edges. Otherwise only dependencies count, as the solver's pruning
	// has it.
	anti bool
	// single says the level forbids a cycle with one anti-dependency
	// (all but read committed, read uncommitted and cursor stability).
	single              bool
	sessions, realTime  bool
	commitOrder, starts bool
	keys                map[history.KeyID]*keyFacts
	// known is the graph of known dependencies for Inferred, built on
	// first need.
	known *knownGraph
	// readUncommitted says the level lets reads see uncommitted writes:
	// a transaction of unknown outcome takes effect only as the index
	// says, not by being read.
	readUncommitted bool
	// appended marks the transactions of unknown outcome that took effect
	// by an append an effective transaction read (the index resolves
	// registers only; the list-append checker does the same for lists),
	// built on first need; appendedDone says it is.
	appended     []bool
	appendedDone bool
}

// effective reports whether t took effect: as the index says (committed,
// or of unknown outcome and read as a register), or of unknown outcome
// with an element an effective transaction's list read holds.
func (f *Finder) effective(t history.TxnID) bool {
	if f.ix.Effective(t) {
		return true
	}
	if !f.appendedDone {
		f.resolveAppended()
	}
	return f.appended != nil && t >= 0 && int(t) < len(f.appended) && f.appended[t]
}

// resolveAppended marks the transactions of unknown outcome whose
// appended element an effective transaction read, to a fixpoint, as the
// list-append checker resolves them (none at read uncommitted).
func (f *Finder) resolveAppended() {
	f.appendedDone = true
	h := f.h
	type elem struct {
		k history.KeyID
		v history.Value
	}
	byElem := map[elem]history.TxnID{}
	for i := range h.Txns {
		if h.Txns[i].Status != history.Unknown || f.ix.Effective(history.TxnID(i)) {
			continue
		}
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Append {
				if _, ok := byElem[elem{op.Key, op.Value}]; !ok {
					byElem[elem{op.Key, op.Value}] = history.TxnID(i)
				}
			}
		}
	}
	if len(byElem) == 0 || f.readUncommitted {
		return
	}
	f.appended = make([]bool, len(h.Txns))
	var work []history.TxnID
	for i := range h.Txns {
		if f.ix.Effective(history.TxnID(i)) {
			work = append(work, history.TxnID(i))
		}
	}
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		for _, op := range h.Txns[t].Ops {
			if op.Kind != history.ReadList {
				continue
			}
			for _, v := range op.List {
				if w, ok := byElem[elem{op.Key, v}]; ok && w != t && !f.appended[w] {
					f.appended[w] = true
					work = append(work, w)
				}
			}
		}
	}
}

// New returns a Finder over ix's history (indexed with the check's
// read-your-own-writes policy) for a check at level l that ran the named
// modules (check.Result.Modules).
func New(ix *history.Index, l level.Level, modules []string) *Finder {
	f := &Finder{h: ix.History(), ix: ix, keys: map[history.KeyID]*keyFacts{},
		sessions: l.SessionOrder, realTime: l.RealTime}
	switch l.ID {
	case level.Serializable, level.StrictSerializable:
		f.anti = true
	}
	switch l.ID {
	case level.ReadUncommitted, level.ReadCommitted, level.CursorStability:
	default:
		f.single = true
	}
	f.readUncommitted = l.ID == level.ReadUncommitted
	for _, m := range modules {
		switch m {
		case "commit-order":
			f.commitOrder = true
		case "start-order":
			f.starts = true
		case "session-order":
			f.sessions = true
		case "real-time":
			f.realTime = true
		}
	}
	return f
}

// Prepare indexes, in one pass over the history, what the evidence of
// anomalies' cycles needs: the writers, appends, list reads and
// read-modify-writes of every key their edges name. Cycle calls it for
// its own keys; calling it first for all anomalies makes one pass instead
// of one per anomaly.
func (f *Finder) Prepare(as []anomaly.Anomaly) {
	var want []history.KeyID
	for i := range as {
		for _, s := range as[i].Cycle {
			if s.Key != history.NoKey && s.Key >= 0 && int(s.Key) < len(f.h.Keys) && f.keys[s.Key] == nil && !slices.Contains(want, s.Key) {
				want = append(want, s.Key)
			}
		}
	}
	if len(want) > 0 {
		f.index(want)
	}
}

// Cycle returns the evidence of each step of a's cycle, in order (nil
// for an anomaly that is not a cycle).
func (f *Finder) Cycle(a *anomaly.Anomaly) []Edge {
	if !a.IsCycle() {
		return nil
	}
	f.Prepare([]anomaly.Anomaly{*a})
	out := make([]Edge, len(a.Cycle))
	for i, s := range a.Cycle {
		out[i] = f.edge(s, a.BestFound)
	}
	return out
}

// valid reports whether t is a transaction of the history.
func (f *Finder) valid(t history.TxnID) bool { return t >= 0 && int(t) < len(f.h.Txns) }

func (f *Finder) edge(s anomaly.Step, bestFound bool) Edge {
	e := Edge{Step: s}
	fromOK := f.valid(s.From) || s.From == history.Init
	if !fromOK || !f.valid(s.To) {
		return e
	}
	switch s.Dep {
	case anomaly.SO:
		if f.valid(s.From) && f.h.Txns[s.From].Session == f.h.Txns[s.To].Session && s.From < s.To {
			e.Basis = Session
		}
	case anomaly.RT:
		f.realTimeEdge(&e)
	case anomaly.WR, anomaly.PWR:
		f.readEdge(&e, bestFound)
	case anomaly.WW:
		f.writeEdge(&e, bestFound)
	case anomaly.RW, anomaly.PRW:
		f.antiEdge(&e, bestFound)
	}
	return e
}

func (f *Finder) realTimeEdge(e *Edge) {
	if !f.valid(e.From) {
		return
	}
	a, b := &f.h.Txns[e.From], &f.h.Txns[e.To]
	byTime := a.HasTime && b.HasTime && a.End < b.Begin
	byTS := a.HasCommitTS && b.HasStartTS && a.CommitTS < b.StartTS
	switch {
	case byTS && (f.starts || !byTime):
		e.Basis = Timestamps
	case byTime:
		e.Basis = RealTime
	}
}

// readEdge is the evidence of W --wr/pwr(k)--> R: R's external
// observation of k that W's final write (or append) installed.
func (f *Finder) readEdge(e *Edge, bestFound bool) {
	k := e.Key
	kf := f.facts(k)
	if kf == nil {
		return
	}
	if kf.lists {
		f.listReadEdge(e, kf)
		return
	}
	w, ok := kf.final[e.From]
	if !ok {
		return
	}
	pred := e.Dep == anomaly.PWR
	if e.From == e.To {
		// A transaction that read its own write (InnoDB's pieces: its view
		// read what its commit wrote).
		installed := f.h.Installed(f.h.Txns[e.From].Ops[w])
		f.ix.Observations(e.To, func(o history.Observation) {
			if e.Found() || o.Key != k || o.Pred != pred || !o.Agrees(installed) {
				return
			}
			e.Ops = []Op{{Ref: history.OpRef{Txn: e.From, Op: w}, Key: k}, {Ref: history.OpRef{Txn: e.To, Op: o.Op}, Key: k}}
			e.Basis = Read
		})
		return
	}
	found := false
	f.ix.Observations(e.To, func(o history.Observation) {
		if found || o.Key != k || o.Own >= 0 || o.Pred != pred {
			return
		}
		writers := f.sources(e.To, o)
		if !slices.Contains(writers, e.From) {
			return
		}
		found = true
		e.Ops = []Op{{Ref: history.OpRef{Txn: e.From, Op: w}, Key: k}, {Ref: history.OpRef{Txn: e.To, Op: o.Op}, Key: k}}
		if len(writers) == 1 {
			e.Basis = Read
			return
		}
		e.Writers = writers
		e.Basis = Inferred
		if bestFound {
			e.Basis = Chosen
		}
	})
}

// sources returns the transactions whose final write of o's key, or the
// initial state (history.Init), agree with external observation o of
// reader r: the transactions that took effect, other than r.
func (f *Finder) sources(r history.TxnID, o history.Observation) []history.TxnID {
	var out []history.TxnID
	if f.ix.InitiallySeen(o) {
		out = append(out, history.Init)
	}
	f.ix.Sources(o, func(id int32) bool {
		w := f.ix.WriteRef(id)
		if w.Txn != r && f.ix.WriteIsFinal(id) && f.effective(w.Txn) && !slices.Contains(out, w.Txn) {
			out = append(out, w.Txn)
		}
		return true
	})
	return out
}

// listReadEdge is the evidence of W --wr(k)--> R on a list: R's list
// read holds an element W appended.
func (f *Finder) listReadEdge(e *Edge, kf *keyFacts) {
	for _, r := range kf.reads {
		if r.Txn != e.To {
			continue
		}
		list := f.h.Txns[r.Txn].Ops[r.Op].List
		for i := len(list) - 1; i >= 0; i-- {
			if a, ok := kf.elems[list[i]]; ok && a.Txn == e.From {
				e.Ops = []Op{{Ref: a, Key: e.Key}, {Ref: r, Key: e.Key}}
				e.Basis = Read
				return
			}
		}
	}
}

// writeEdge is the evidence of A --ww(k)--> B: A's and B's last writes of
// k, and why A's version precedes B's.
func (f *Finder) writeEdge(e *Edge, bestFound bool) {
	k := e.Key
	kf := f.facts(k)
	if kf == nil {
		return
	}
	bw, ok := kf.final[e.To]
	if !ok {
		return
	}
	if e.From == history.Init {
		e.Ops = []Op{InitialOp(k), {Ref: history.OpRef{Txn: e.To, Op: bw}, Key: k}}
		e.Basis = Initial
		return
	}
	aw, ok := kf.final[e.From]
	if !ok {
		return
	}
	e.Ops = []Op{{Ref: history.OpRef{Txn: e.From, Op: aw}, Key: k}, {Ref: history.OpRef{Txn: e.To, Op: bw}, Key: k}}
	if kf.lists {
		// B's first append; where a read shows A's element just before
		// B's, those two.
		e.Ops[1].Ref.Op = kf.first[e.To]
		if l, ok := f.direct(kf, e.From, e.To); ok && l.Basis == ListOrder && !l.Unobserved {
			if pair := f.listPair(kf, l); pair != nil {
				e.Ops = pair
			}
		}
	}
	f.order(e, kf, e.From, e.To, bestFound)
}

// listPair returns the adjacent elements of link l's list read: From's
// append just before To's (nil when the read has no such pair).
func (f *Finder) listPair(kf *keyFacts, l Link) []Op {
	list := f.h.Txns[l.Shown.Txn].Ops[l.Shown.Op].List
	for i := 1; i < len(list); i++ {
		a, aok := kf.elems[list[i-1]]
		b, bok := kf.elems[list[i]]
		if aok && bok && a.Txn == l.From && b.Txn == l.To {
			return []Op{{Ref: a, Key: kf.key}, {Ref: b, Key: kf.key}}
		}
	}
	return nil
}
