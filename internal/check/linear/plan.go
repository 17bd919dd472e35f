package linear

import (
	"fmt"
	"math"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/lwt"
	"github.com/isoscope/isoscope/internal/check/precheck"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// none marks an operation without a precondition or without an effect.
const none int32 = -1

// op is one transaction as a step of its register.
type op struct {
	txn history.TxnID
	// begin and end are its instants (end is math.MaxInt64 for an
	// optional op: if it took effect, it may have done so at any time
	// after it began).
	begin, end int64
	// pre is the value it read (an index into keyPlan.values), or none;
	// post the value it wrote last, or none.
	pre, post int32
	// readOp and writeOp are the positions in the transaction of the read
	// and of the last write (-1 without).
	readOp, writeOp int32
	// optional: the transaction's outcome is unknown, so it may be left
	// out; impossible: it is, and cannot have taken effect.
	optional, impossible bool
	// session indexes keyPlan.sessions (serializability only).
	session int32
}

// keyPlan is one register's part of the check.
type keyPlan struct {
	key history.KeyID
	// ops are the register's operations, by begin instant (file order
	// among equals).
	ops []op
	// values are the register's values, by index; init is the index of
	// its initial value.
	values []history.Value
	init   int32
	// sessions are, for serializability, the register's sessions, each
	// its operations (indices into ops) in session order.
	sessions [][]int32
	// unique, when not nil, are the transactions on the register that
	// took effect, for Algorithm 2: the values are unique.
	unique []history.TxnID
}

// plan is what Plan decided: the registers to check and how.
type plan struct {
	ix *history.Index
	h  *history.History
	// realTime: strict serializability (linearizability); otherwise
	// serializability, with session order alone.
	realTime bool
	keys     []keyPlan
}

// shape is what a transaction does to its register.
type shape struct {
	key             history.KeyID
	pre, post       history.Value
	hasPre, hasPost bool
	readOp, writeOp int32
	impossible      bool
}

// shapeOf returns what t does, or an error when t is not one operation on
// one register: reads and writes of one key, every read before the first
// write of the same value.
func shapeOf(h *history.History, id history.TxnID) (shape, error) {
	t := &h.Txns[id]
	s := shape{key: history.NoKey, readOp: -1, writeOp: -1}
	for j, o := range t.Ops {
		if o.Kind != history.Read && o.Kind != history.Write {
			return s, fmt.Errorf("transaction %s has %s operation: it decides registers with reads and writes", h.TxnName(id), o.Kind.Noun())
		}
		if s.key != history.NoKey && o.Key != s.key {
			return s, fmt.Errorf("transaction %s works on more than one key", h.TxnName(id))
		}
		s.key = o.Key
		switch {
		case o.Kind == history.Write:
			s.post, s.hasPost, s.writeOp = o.Value, true, int32(j)
		case s.hasPost:
			// A read of its own write: the shared checks judge it.
		case !s.hasPre:
			s.pre, s.hasPre, s.readOp = o.Value, true, int32(j)
		case o.Value != s.pre:
			return s, fmt.Errorf("transaction %s reads %s twice and sees %s, then %s", h.TxnName(id), h.KeyName(o.Key), s.pre, o.Value)
		}
	}
	return s, nil
}

// newPlan decides whether the checker is sound and complete for ix's
// history at l: strict serializability, or serializability; every
// transaction that may take effect (committed, or of unknown outcome with a
// write) works on one register (shapeOf); at strict serializability each
// has begin and end instants, and at serializability each session works on
// one register; and session order adds nothing to what the level
// otherwise asks: within a session, every transaction that may take effect
// but the last is committed, and at strict serializability ended before
// the next one began (so real time orders them already). A transaction of
// unknown outcome followed by another in its session is left to the
// solver, which orders them if it took effect.
func newPlan(ix *history.Index, l level.Level) (*plan, error) {
	if l.ID != level.StrictSerializable && l.ID != level.Serializable {
		return nil, fmt.Errorf("it decides strict-serializable (linearizability) and serializable, not %s", l.Name)
	}
	h := ix.History()
	p := &plan{ix: ix, h: h, realTime: l.ID == level.StrictSerializable}
	shapes := make([]shape, len(h.Txns))
	takes := make([]bool, len(h.Txns))
	last := make([]history.TxnID, len(h.Sessions))
	for i := range last {
		last[i] = -1
	}
	sessionKey := make([]history.KeyID, len(h.Sessions))
	for i := range h.Txns {
		t := &h.Txns[i]
		id := history.TxnID(i)
		if t.Status == history.Aborted || len(t.Ops) == 0 {
			continue
		}
		s, err := shapeOf(h, id)
		if err != nil {
			return nil, err
		}
		if t.Status == history.Unknown && !s.hasPost {
			continue // had it taken effect, nobody could tell
		}
		if t.Status == history.Unknown && len(precheck.Txn(ix, l, id)) > 0 {
			// It cannot have taken effect (it read what nothing it may
			// have read from wrote, say): it still counts among the
			// writers a read may name, as for the solver, but is never
			// placed.
			s.impossible = true
		}
		if p.realTime && !t.HasTime {
			return nil, fmt.Errorf("transaction %s (line %d) has no begin and end instants", h.TxnName(id), t.Line)
		}
		if prev := last[t.Session]; prev >= 0 {
			pt := &h.Txns[prev]
			switch {
			case pt.Status != history.Committed:
				return nil, fmt.Errorf("transaction %s, of unknown outcome, is followed by %s in its session", h.TxnName(prev), h.TxnName(id))
			case p.realTime && pt.End >= t.Begin:
				return nil, fmt.Errorf("transaction %s begins before the previous transaction of its session, %s, ended", h.TxnName(id), h.TxnName(prev))
			case !p.realTime && sessionKey[t.Session] != s.key:
				return nil, fmt.Errorf("session %s works on more than one key (serializability is not local)", h.Sessions[t.Session])
			}
		}
		last[t.Session], sessionKey[t.Session] = id, s.key
		shapes[i], takes[i] = s, true
	}
	p.build(shapes, takes)
	return p, nil
}

// build makes the registers' plans from the transactions that take part.
func (p *plan) build(shapes []shape, takes []bool) {
	h := p.h
	index := map[history.KeyID]int{}
	type valueKey struct {
		k history.KeyID
		v history.Value
	}
	ids := map[valueKey]int32{}
	value := func(k *keyPlan, v history.Value) int32 {
		vk := valueKey{k.key, v}
		if id, ok := ids[vk]; ok {
			return id
		}
		id := int32(len(k.values))
		k.values = append(k.values, v)
		ids[vk] = id
		return id
	}
	for i := range h.Txns {
		if !takes[i] {
			continue
		}
		s := &shapes[i]
		t := &h.Txns[i]
		n, ok := index[s.key]
		if !ok {
			n = len(p.keys)
			index[s.key] = n
			p.keys = append(p.keys, keyPlan{key: s.key})
			k := &p.keys[n]
			k.init = value(k, h.InitialValue(s.key))
		}
		k := &p.keys[n]
		o := op{txn: history.TxnID(i), begin: t.Begin, end: t.End, pre: none, post: none, readOp: s.readOp, writeOp: s.writeOp,
			optional: t.Status == history.Unknown, impossible: s.impossible, session: t.Session}
		if o.optional {
			o.end = math.MaxInt64
		}
		if s.hasPre {
			o.pre = value(k, s.pre)
		}
		if s.hasPost {
			o.post = value(k, s.post)
		}
		k.ops = append(k.ops, o)
	}
	for n := range p.keys {
		p.finish(&p.keys[n])
	}
}

// finish settles one register's plan: operations that cannot have taken
// effect are left out, then reads that no operation (nor the initial
// state) can have served (the shared checks report them, and the solver
// leaves them out alike), then operations left with nothing to do; the rest are sorted by begin; and the plan of a
// register with unique values goes to Algorithm 2.
func (p *plan) finish(k *keyPlan) {
	writers := make([]int, len(k.values))
	for _, o := range k.ops {
		if o.post != none {
			writers[o.post]++
		}
	}
	kept := k.ops[:0]
	for _, o := range k.ops {
		if o.impossible {
			continue
		}
		if o.pre != none && o.pre != k.init {
			n := writers[o.pre]
			if o.post == o.pre {
				n-- // not its own source
			}
			if n == 0 {
				o.pre, o.readOp = none, -1
			}
		}
		if o.pre == none && o.post == none {
			continue
		}
		kept = append(kept, o)
	}
	k.ops = kept
	if !p.realTime {
		p.sessionsOf(k)
		return
	}
	slices.SortStableFunc(k.ops, func(a, b op) int {
		switch {
		case a.begin < b.begin:
			return -1
		case a.begin > b.begin:
			return 1
		}
		return 0
	})
	// Unique values (no value written twice, nor the initial one written
	// again) and every operation reads first: Algorithm 2.
	unique := true
	for _, o := range k.ops {
		switch {
		case o.pre == none:
			unique = false // a blind write: its place in the order is not read off the values
		case !lwt.Fits(&p.h.Txns[o.txn]):
			unique = false
		case o.post != none && (writers[o.post] > 1 || o.post == k.init):
			unique = false
		case o.post != none && !p.soleWriter(k, o.post):
			// Algorithm 2 finds loops of links by the sole writer of a
			// value: no other write of it, aborted ones included.
			unique = false
		}
	}
	if !unique {
		return
	}
	// Algorithm 2 passes over a read whose value none of its
	// transactions writes (the shared checks report it when nothing
	// could have written it): every value read must be the initial one
	// or written by one of them.
	served := make([]bool, len(k.values))
	served[k.init] = true
	for _, o := range k.ops {
		if p.ix.Effective(o.txn) {
			k.unique = append(k.unique, o.txn)
			if o.post != none {
				served[o.post] = true
			}
		}
	}
	for _, o := range k.ops {
		if p.ix.Effective(o.txn) && !served[o.pre] {
			k.unique = nil
			return
		}
	}
	slices.Sort(k.unique)
	if k.unique == nil {
		k.unique = []history.TxnID{}
	}
}

// soleWriter reports whether exactly one write in the whole history, of
// any status, writes value v to k's register.
func (p *plan) soleWriter(k *keyPlan, v int32) bool {
	_, ok := p.ix.SoleWriter(k.key, k.values[v])
	return ok
}

// sessionsOf groups a register's operations by session, in session (file)
// order.
func (p *plan) sessionsOf(k *keyPlan) {
	slices.SortStableFunc(k.ops, func(a, b op) int { return int(a.txn) - int(b.txn) })
	local := map[int32]int32{}
	for i := range k.ops {
		o := &k.ops[i]
		s, ok := local[o.session]
		if !ok {
			s = int32(len(k.sessions))
			local[o.session] = s
			k.sessions = append(k.sessions, nil)
		}
		o.session = s
		k.sessions[s] = append(k.sessions[s], int32(i))
	}
}

// checkUnique runs Algorithm 2 on a register with unique values.
func checkUnique(ix *history.Index, k *keyPlan) (anomaly.Anomaly, bool) {
	return lwt.CheckKey(ix, k.key, k.unique)
}
