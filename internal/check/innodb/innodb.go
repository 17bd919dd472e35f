// Package innodb models MariaDB/InnoDB's REPEATABLE READ (Boomslang's Case
// 4) as a rewriting of the history: each physical transaction becomes
// logical pieces that a serializability check then judges.
//
// What InnoDB does at REPEATABLE READ: a plain SELECT (a snapshot read)
// reads the read view the transaction's first plain SELECT created, plus
// the transaction's own changes; a locking read (SELECT … FOR UPDATE or
// LOCK IN SHARE MODE, and the search of an UPDATE or DELETE) and every
// write read and lock the latest committed version and hold the lock until
// commit; a transaction's writes become visible when it commits.
//
// The pieces of a transaction T, in T's session and in this order:
//
//   - the view piece: T's snapshot reads of keys T has not written yet, at
//     the instant of T's read view. A locking read that comes before T's
//     first snapshot read and before any write of T is copied here too:
//     the lock keeps its version the latest one until T commits, so the
//     view, created after it, sees the same version.
//   - the commit piece: everything else in program order — writes,
//     deletes, locking reads, and reads of keys T wrote before (its own
//     writes) — at the instant T commits: the version a locking read saw
//     is still the latest then, since T holds its lock.
//
// A snapshot scan whose range holds keys T wrote before is cut around
// them: the view piece scans the rest of the range, and the commit piece
// reads each own key as the scan returned it. An iterator is the scan of
// the range up to the last key it returned.
//
// A commit piece keeps its transaction's commit_ts (for the commit-order
// module); no piece keeps start_ts, which InnoDB does not have: its view
// is taken at the first snapshot read.
//
// Every dependency of an execution InnoDB's documented behaviour allows
// goes forward in time between these instants (a piece reads versions
// committed before it; the next version of what it read commits after it;
// versions commit in their writers' commit order), so the pieces of such a
// history are serializable: checking them at serializability with session
// order never rejects InnoDB's documented behaviour — lost updates through
// a snapshot read and an UPDATE, a snapshot read that does not see what a
// later locking read saw — and rejects what InnoDB does not allow: a
// fractured snapshot, a snapshot read of a version its view cannot hold,
// G1 anomalies, a lost update through locking reads, and a read after the
// transaction's own write that does not see it (Boomslang's Case 2 bug).
//
// The model is deliberately not tight (as Boomslang says of its own): the
// pieces of a transaction are only ordered view → commit, so a history is
// accepted whenever some placement of each view fits, whether or not the
// view was really created where the client's first read was; what an
// UPDATE's own search saw is not in the history and is not checked; and a
// snapshot read of a key after the transaction wrote it is checked only
// against that write.
package innodb

import (
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// Pieces is a history rewritten into logical pieces, with the way back.
type Pieces struct {
	// H is the history of the pieces. Keys, sessions and the initial state
	// are the physical history's.
	H *history.History
	// Txn maps each piece to its physical transaction.
	Txn []history.TxnID
	// Op maps each piece's operations to the physical transaction's
	// operation they come from.
	Op [][]int32
	// View marks view pieces.
	View []bool
}

// Split rewrites h into pieces.
func Split(h *history.History) *Pieces {
	ph := &history.History{Header: h.Header, Keys: h.Keys, Sessions: h.Sessions, Name: h.Name}
	p := &Pieces{H: ph}
	commitOf := make([]history.TxnID, len(h.Txns))
	for i := range h.Txns {
		t := &h.Txns[i]
		view, commit := split(h, t)
		add := func(ops []history.Op, at []int32, isView bool, suffix string) history.TxnID {
			x := *t
			x.Ops = ops
			// The pieces are not at the database's start timestamp: a
			// view piece carries none, a commit piece only commit_ts.
			x.HasStartTS, x.StartTS = false, 0
			if isView {
				x.HasCommitTS, x.CommitTS = false, 0
			}
			if suffix != "" {
				x.ID = history.StringValue(t.ID.String() + suffix)
			}
			ph.Txns = append(ph.Txns, x)
			p.Txn = append(p.Txn, history.TxnID(i))
			p.Op = append(p.Op, at)
			p.View = append(p.View, isView)
			return history.TxnID(len(ph.Txns) - 1)
		}
		if len(view.ops) > 0 {
			suffix := ""
			if len(commit.ops) > 0 {
				suffix = "/view"
			}
			commitOf[i] = add(view.ops, view.at, true, suffix)
		}
		if len(commit.ops) > 0 || len(view.ops) == 0 {
			commitOf[i] = add(commit.ops, commit.at, false, "")
		}
	}
	if h.Header.VersionOrder != nil {
		vo := make(map[history.KeyID][]history.TxnID, len(h.Header.VersionOrder))
		for k, order := range h.Header.VersionOrder {
			for _, t := range order {
				if t >= 0 && int(t) < len(commitOf) {
					vo[k] = append(vo[k], commitOf[t])
				}
			}
		}
		ph.Header.VersionOrder = vo
	}
	return p
}

// piece collects a piece's operations and where each came from.
type piece struct {
	ops []history.Op
	at  []int32
}

func (p *piece) add(op history.Op, j int) {
	p.ops = append(p.ops, op)
	p.at = append(p.at, int32(j))
}

// split sorts t's operations into its view and commit pieces.
func split(h *history.History, t *history.Txn) (view, commit piece) {
	firstSnap := len(t.Ops)
	for j, op := range t.Ops {
		if isRead(op.Kind) && !op.Lock {
			firstSnap = j
			break
		}
	}
	var written []history.KeyID // in program order
	for j, op := range t.Ops {
		switch {
		case op.Kind.IsWrite():
			commit.add(op, j)
			if !slices.Contains(written, op.Key) {
				written = append(written, op.Key)
			}
		case op.Lock:
			commit.add(op, j)
			if j < firstSnap && firstSnap < len(t.Ops) && len(written) == 0 {
				view.add(op, j)
			}
		case op.Kind.IsRange():
			splitScan(h, op, j, written, &view, &commit)
		case slices.Contains(written, op.Key):
			commit.add(op, j) // a read of an own write
		default:
			view.add(op, j)
		}
	}
	return view, commit
}

func isRead(k history.OpKind) bool {
	return k == history.Read || k == history.ReadList || k.IsRange()
}

// splitScan puts a snapshot scan or iterator op into the view piece, cut
// around the keys of its range that the transaction wrote before: those it
// reads in the commit piece, as the scan returned them (null when it did
// not).
func splitScan(h *history.History, op history.Op, j int, written []history.KeyID, view, commit *piece) {
	r := op.Range
	if r == nil {
		view.add(op, j)
		return
	}
	lo, hi, hiOpen := r.Lo, r.Hi, r.HiOpen
	if op.Kind == history.Iter {
		if len(r.Pairs) == 0 {
			view.add(op, j) // claims nothing
			return
		}
		// An iterator claims the range up to its last returned key.
		hi, hiOpen = succ(h.Keys[r.Pairs[len(r.Pairs)-1].Key])
	}
	in := func(k history.KeyID) bool {
		v := h.Keys[k]
		return history.Compare(v, lo) >= 0 && (hiOpen || history.Compare(v, hi) < 0)
	}
	var own []history.KeyID
	for _, k := range written {
		if in(k) {
			own = append(own, k)
		}
	}
	if len(own) == 0 {
		view.add(op, j)
		return
	}
	slices.SortFunc(own, func(a, b history.KeyID) int { return history.Compare(h.Keys[a], h.Keys[b]) })
	returned := func(k history.KeyID) history.Value {
		for _, kv := range r.Pairs {
			if kv.Key == k {
				return kv.Value
			}
		}
		return history.NullValue
	}
	// The sub-ranges between own keys: [lo, k1), [succ k1, k2), …, [succ kn, hi).
	from, fromOpen := lo, false // fromOpen: past the largest key
	emit := func(to history.Value, toOpen bool) {
		if fromOpen || !toOpen && history.Compare(from, to) >= 0 {
			return
		}
		sub := &history.Range{Lo: from, Hi: to, HiOpen: toOpen}
		for _, kv := range r.Pairs {
			v := h.Keys[kv.Key]
			if history.Compare(v, from) >= 0 && (toOpen || history.Compare(v, to) < 0) {
				sub.Pairs = append(sub.Pairs, kv)
			}
		}
		view.add(history.Op{Kind: history.Scan, Key: history.NoKey, Range: sub}, j)
	}
	for _, k := range own {
		emit(h.Keys[k], false)
		from, fromOpen = succ(h.Keys[k])
		commit.add(history.Op{Kind: history.Read, Key: k, Value: returned(k)}, j)
	}
	emit(hi, hiOpen)
}

// succ returns the smallest key after v, or open when there is none.
func succ(v history.Value) (next history.Value, open bool) {
	switch v.Kind {
	case history.Int:
		if v.N == 1<<63-1 {
			return history.NullValue, true
		}
		return history.IntValue(v.N + 1), false
	case history.String:
		return history.StringValue(v.S + "\x00"), false
	}
	return history.NullValue, true
}

// Physical returns the physical transaction of piece t (Init stays Init).
func (p *Pieces) Physical(t history.TxnID) history.TxnID {
	if t < 0 || int(t) >= len(p.Txn) {
		return t
	}
	return p.Txn[t]
}

// MapBack rewrites an anomaly found on the pieces into the physical
// history's terms: transactions and operations are the physical ones, and
// the session-order step from a transaction's view piece to its commit
// piece leaves the cycle.
func (p *Pieces) MapBack(a anomaly.Anomaly) anomaly.Anomaly {
	b := a
	b.Txns = p.mapTxns(a.Txns)
	b.Core = p.mapTxns(a.Core)
	if a.Cycle != nil {
		b.Cycle = make([]anomaly.Step, 0, len(a.Cycle))
		for _, st := range a.Cycle {
			st.From, st.To = p.Physical(st.From), p.Physical(st.To)
			if st.From == st.To && st.Dep == anomaly.SO {
				continue
			}
			b.Cycle = append(b.Cycle, st)
		}
	}
	if a.Ops != nil {
		b.Ops = make([]history.OpRef, len(a.Ops))
		for i, r := range a.Ops {
			b.Ops[i] = r
			if r.Txn >= 0 && int(r.Txn) < len(p.Txn) && int(r.Op) < len(p.Op[r.Txn]) {
				b.Ops[i] = history.OpRef{Txn: p.Txn[r.Txn], Op: p.Op[r.Txn][r.Op]}
			}
		}
	}
	return b
}

func (p *Pieces) mapTxns(ts []history.TxnID) []history.TxnID {
	if ts == nil {
		return nil
	}
	out := make([]history.TxnID, 0, len(ts))
	for _, t := range ts {
		if u := p.Physical(t); !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// String describes the pieces, for tests and debugging: one line per
// piece in the test notation's operation syntax.
func (p *Pieces) String() string {
	s := ""
	for i := range p.H.Txns {
		s += fmt.Sprintf("%s:", p.H.TxnName(history.TxnID(i)))
		for _, op := range p.H.Txns[i].Ops {
			s += " " + history.OpString(p.H, op)
		}
		s += "\n"
	}
	return s
}
