package reference

import (
	"fmt"
	"math"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// MaxTxns is the largest number of transactions that may take effect
// (committed or of unknown status) in a history the oracle accepts. Beyond
// it, enumerating orders and commit choices is too slow to be useful.
const MaxTxns = 9

// Check decides whether h satisfies the level. It returns an error when h is
// too large to enumerate (more than MaxTxns effective-candidate
// transactions: committed or of unknown status) or uses operations it does
// not model. Every level is supported, and reads, writes, deletes
// (physical or tombstones), scans and iterators at every one of them;
// cursor stability, PL-2+, PL-FCV and repeatable read with predicate reads
// go through the Adya enumeration (adya.go), which takes at most
// MaxAdyaTxns effective transactions (without predicate reads G2 is
// G2-item, so PL-2.99 is a serial order without session order). At SI, SER and SSER with deletes,
// scans or iterators every transaction's operations are run against the
// state its position gives it (ops.go); at RU and RC their observations
// are explained one by one. Strict serializability needs the real-time instants of every
// transaction that is not aborted.
//
// Aborted transactions never take effect; committed ones do; h satisfies
// the level iff some choice of which unknown-status transactions committed
// makes it satisfy the level. Only the reads of transactions that take
// effect are constrained.
func Check(h *history.History, id level.ID) (bool, error) {
	switch id {
	case level.ReadUncommitted, level.ReadCommitted, level.CursorStability, level.PL2Plus, level.PLFCV,
		level.RepeatableRead, level.SnapshotIsolation, level.Serializable, level.StrictSerializable,
		level.RCSession, level.ReadAtomic, level.Causal, level.Prefix, level.GSI, level.PlainSerializable:
	default:
		return false, fmt.Errorf("reference: level %v is not supported", id)
	}
	c, err := newChecker(h)
	if err != nil {
		return false, err
	}
	if c.lists {
		if err := c.listLevel(id); err != nil {
			return false, err
		}
	}
	return c.check(id)
}

// check is Check on a built checker.
func (c *checker) check(id level.ID) (bool, error) {
	h := c.h
	var committed, unknown []int
	for i := range h.Txns {
		switch h.Txns[i].Status {
		case history.Committed:
			committed = append(committed, i)
		case history.Unknown:
			unknown = append(unknown, i)
		case history.Aborted:
		default:
			return false, fmt.Errorf("reference: transaction %s has status %v", h.TxnName(history.TxnID(i)), h.Txns[i].Status)
		}
	}
	if n := len(committed) + len(unknown); n > MaxTxns {
		return false, fmt.Errorf("reference: %d committed or unknown transactions, more than the %d the oracle enumerates", n, MaxTxns)
	}
	if id == level.StrictSerializable {
		for _, i := range append(append([]int{}, committed...), unknown...) {
			if !h.Txns[i].HasTime {
				return false, fmt.Errorf("reference: strict serializability needs real time, and transaction %s has no begin/end instants", h.TxnName(history.TxnID(i)))
			}
		}
	}
	for choice := 0; choice < 1<<len(unknown); choice++ {
		// The effective transactions, in file order (so that session order
		// is the order of this slice restricted to a session).
		var eff []int
		isEff := make([]bool, len(h.Txns))
		for _, i := range committed {
			isEff[i] = true
		}
		for b, i := range unknown {
			if choice&(1<<b) != 0 {
				isEff[i] = true
			}
		}
		for i := range h.Txns {
			if isEff[i] {
				eff = append(eff, i)
			}
		}
		if ax := level.Get(id).Axiom; ax != level.NoAxiom {
			axiomatic := c.axiomatic
			if c.lists {
				axiomatic = c.axiomaticLists
			}
			if ok, err := axiomatic(ax, eff); ok || err != nil {
				return ok, err
			}
			continue
		}
		if c.adyaLevel(id) {
			ok := true
			for _, i := range eff {
				ok = ok && c.txns[i].intOK
			}
			if !ok {
				continue
			}
			if ok, err := c.adya(id, eff); ok || err != nil {
				return ok, err
			}
			continue
		}
		if c.satisfies(id, eff) {
			return true, nil
		}
	}
	return false, nil
}

// kv is one key and value: a read's result or a write's value. exact
// marks what a scan or iterator observed, which tells absence from a
// tombstone; a read's null agrees with both.
type kv struct {
	key   history.KeyID
	value history.Value
	exact bool
	// op is the position of the operation that made an external
	// observation in its transaction (program order).
	op int
}

// matches reports whether state (a value, absence or a tombstone) is what
// observation r saw.
func (r kv) matches(state history.Value) bool {
	if r.exact {
		return state == r.value
	}
	return sameRead(state, r.value)
}

// txn is what the oracle needs of one transaction, derived from its ops.
type txn struct {
	session int32
	begin   int64
	end     int64
	// intOK says the transaction is internally consistent: every read of a
	// key it wrote before returns its last preceding write of that key.
	intOK bool
	// ext are its external reads (not preceded by its own write of the
	// key), in program order.
	ext []kv
	// final holds, per key it writes, its last write of that key: the
	// version it installs.
	final []kv
	// writes holds every write op, intermediate ones included.
	writes []kv
	// appends holds, per key it appends to, the encoding of the elements
	// it appends, in program order (lists.go).
	appends []kv
	// extLists holds the elements of each external list read, in the
	// order of ext (lists.go).
	extLists [][]history.Value
}

// finalValue returns the value t installs at k, if it writes k.
func (t *txn) finalValue(k history.KeyID) (history.Value, bool) {
	for _, w := range t.final {
		if w.key == k {
			return w.value, true
		}
	}
	return history.Value{}, false
}

type checker struct {
	h    *history.History
	txns []txn
	// init is the value of each key before the first transaction.
	init []history.Value
	// general says some transaction deletes, scans or iterates: the
	// orders are then checked by running every operation (ops.go).
	general bool
	// ranges says some transaction scans or iterates.
	ranges bool
	// sorted lists the keys in key order, for range operations.
	sorted []history.KeyID
	// lists says some transaction appends or reads a list (lists.go), and
	// plain that some transaction reads, writes, deletes or ranges.
	lists, plain bool
}

func newChecker(h *history.History) (*checker, error) {
	c := &checker{h: h, txns: make([]txn, len(h.Txns)), init: make([]history.Value, len(h.Keys))}
	for k := range h.Keys {
		c.init[k] = h.InitialValue(history.KeyID(k))
	}
	for i := range h.Txns {
		ht := &h.Txns[i]
		t := &c.txns[i]
		t.session, t.begin, t.end, t.intOK = ht.Session, ht.Begin, ht.End, true
		if ht.Status == history.Unknown {
			// Its outcome came too late or never: if it committed, it may
			// have done so at any time after it began.
			t.end = math.MaxInt64
		}
		own := map[history.KeyID]int{} // key -> index into t.final
		ownList := map[history.KeyID][]history.Value{}
		for j, op := range ht.Ops {
			switch op.Kind {
			case history.Append, history.ReadList:
				c.lists = true
			case history.Read, history.Write:
				c.plain = true
			case history.Delete, history.Scan, history.Iter:
				c.general, c.plain = true, true
				if op.Kind.IsRange() {
					if err := c.checkRange(op.Range); err != nil {
						return nil, fmt.Errorf("reference: transaction %s, operation %d: %v", h.TxnName(history.TxnID(i)), j+1, err)
					}
					c.ranges = true
					c.observeRange(t, op, j, own)
					continue
				}
			default:
				return nil, fmt.Errorf("reference: transaction %s, operation %d: %q is not modelled (only reads, writes, deletes, scans, iterators, appends and list reads)", h.TxnName(history.TxnID(i)), j+1, op.Kind)
			}
			if op.Key < 0 || int(op.Key) >= len(h.Keys) {
				return nil, fmt.Errorf("reference: transaction %s, operation %d: key id %d out of range", h.TxnName(history.TxnID(i)), j+1, op.Key)
			}
			if op.Kind == history.Append || op.Kind == history.ReadList {
				c.listOp(t, op, j, ownList)
				continue
			}
			x := kv{key: op.Key, value: op.Value, op: j}
			if op.Kind == history.Delete {
				x.value = c.deleted()
			}
			if op.Kind != history.Read {
				t.writes = append(t.writes, x)
				if f, ok := own[op.Key]; ok {
					t.final[f].value = x.value
				} else {
					own[op.Key] = len(t.final)
					t.final = append(t.final, x)
				}
				continue
			}
			if f, ok := own[op.Key]; ok {
				if !sameRead(t.final[f].value, op.Value) {
					t.intOK = false
				}
				continue
			}
			t.ext = append(t.ext, x)
		}
	}
	if c.lists {
		for k := range c.init {
			c.init[k] = listEncoding(nil)
		}
	}
	return c, nil
}

// satisfies decides the level for one choice of effective transactions
// (indices into h.Txns, in file order).
func (c *checker) satisfies(id level.ID, eff []int) bool {
	for _, i := range eff {
		if !c.txns[i].intOK {
			return false
		}
	}
	switch id {
	case level.ReadUncommitted:
		if c.lists {
			return c.readUncommittedLists(eff)
		}
		return c.readUncommitted(eff)
	case level.ReadCommitted:
		if c.lists {
			return c.readCommittedLists(eff)
		}
		return c.readCommitted(eff)
	case level.SnapshotIsolation:
		return c.snapshotIsolation(eff, true)
	case level.GSI:
		return c.snapshotIsolation(eff, false)
	case level.PlainSerializable:
		return c.serializable(eff, false, false)
	case level.RepeatableRead:
		// Without predicate reads G2 is G2-item: PL-2.99 is PL-3, with no
		// session order.
		return c.serializable(eff, false, false)
	case level.Serializable:
		return c.serializable(eff, true, false)
	case level.StrictSerializable:
		return c.serializable(eff, true, true)
	}
	return false
}

// readUncommitted is Adya's PL-1 beyond Int: every external read of an
// effective transaction returns a value some other transaction (of any
// status, intermediate writes included) wrote to the key, or the initial
// value. A version order without write cycles (G0) always exists: order
// every key's writers by one total order of the transactions.
func (c *checker) readUncommitted(eff []int) bool {
	for _, i := range eff {
		for _, r := range c.txns[i].ext {
			if !c.someoneWrote(i, r) {
				return false // thin-air read
			}
		}
	}
	return true
}

// someoneWrote reports whether r's value is the initial value of its key or
// was written to it by some write op of a transaction other than reader.
func (c *checker) someoneWrote(reader int, r kv) bool {
	if r.matches(c.init[r.key]) {
		return true
	}
	for j := range c.txns {
		if j == reader {
			continue
		}
		for _, w := range c.txns[j].writes {
			if w.key == r.key && r.matches(w.value) {
				return true
			}
		}
	}
	return false
}

// readCommitted is Adya's PL-2 beyond Int. By definition it asks for an
// assignment of every external read to a write of its value (the initial
// state, or a write op of another transaction) and a version order per key
// such that no read is assigned to a non-effective writer (G1a) or to a
// write that is not the writer's last of the key (G1b), and WR ∪ WW over the
// effective transactions is acyclic (G0, G1c).
//
// Equivalently, there is a total order of the effective transactions in
// which every external read can be assigned to the initial state or to the
// final write of its key by an effective transaction placed earlier: given
// an acyclic WR ∪ WW, a topological order is such an order; given such an
// order, take the assignment it allows and each key's version order as the
// order restricted to the key's writers: every WR and WW edge points
// forward, so WR ∪ WW is acyclic.
//
// Placing a transaction only adds candidate writers for the others, so such
// an order exists iff greedily placing any placeable transaction, until none
// is left, places them all.
func (c *checker) readCommitted(eff []int) bool {
	placed := make([]bool, len(eff))
	explained := func(r kv) bool {
		if r.matches(c.init[r.key]) {
			return true
		}
		for q, j := range eff {
			if !placed[q] {
				continue
			}
			if v, ok := c.txns[j].finalValue(r.key); ok && r.matches(v) {
				return true
			}
		}
		return false
	}
	for left := len(eff); left > 0; {
		progress := false
		for q, i := range eff {
			if placed[q] {
				continue
			}
			ok := true
			for _, r := range c.txns[i].ext {
				if !explained(r) {
					ok = false
					break
				}
			}
			if ok {
				placed[q] = true
				left--
				progress = true
			}
		}
		if !progress {
			return false
		}
	}
	return true
}

// explainable reports whether every external read of every effective
// transaction returns the initial value of its key or the final write of it
// by another effective transaction. Snapshot isolation and serializability
// both need it (a read sees the state after some effective transactions
// other than the reader); it prunes hopeless choices before enumerating.
func (c *checker) explainable(eff []int) bool {
	if c.lists {
		return true // a list read is explained by an order, not a single write
	}
	for _, i := range eff {
	reads:
		for _, r := range c.txns[i].ext {
			if sameRead(c.init[r.key], r.value) {
				continue
			}
			for _, j := range eff {
				if j == i {
					continue
				}
				if v, ok := c.txns[j].finalValue(r.key); ok && sameRead(v, r.value) {
					continue reads
				}
			}
			return false
		}
	}
	return true
}

// readsMatch reports whether every external read of t returns the value its
// key holds in state.
func readsMatch(t *txn, state []history.Value) bool {
	for _, r := range t.ext {
		if !sameRead(state[r.key], r.value) {
			return false
		}
	}
	return true
}

// apply installs t's final writes and appends in state.
func apply(t *txn, state []history.Value) {
	for _, w := range t.final {
		state[w.key] = w.value
	}
	appendTo(t, state)
}

// mustPrecede returns, for each position q of eff, the positions of eff that
// must come before it: its session predecessors, and with realTime every
// transaction that ended before it began.
func (c *checker) mustPrecede(eff []int, session, realTime bool) [][]int {
	pre := make([][]int, len(eff))
	for q, i := range eff {
		for p, j := range eff {
			if p == q {
				continue
			}
			ti, tj := &c.txns[i], &c.txns[j]
			if (session && tj.session == ti.session && j < i) || (realTime && tj.end < ti.begin) {
				pre[q] = append(pre[q], p)
			}
		}
	}
	return pre
}

// serializable searches for a serial order of the effective transactions,
// consistent with session order when session is set (and real time when
// realTime is), in
// which every external read returns the value its key holds when the
// transaction runs. It builds the order one transaction at a time,
// rejecting a prefix as soon as a read fails. A failed search state (the set
// of placed transactions and the current value of every key, which are all
// that the rest of the search depends on) is remembered so that it is not
// explored twice.
func (c *checker) serializable(eff []int, session, realTime bool) bool {
	if !c.explainable(eff) {
		return false
	}
	pre := c.mustPrecede(eff, session, realTime)
	state := append([]history.Value(nil), c.init...)
	placed := make([]bool, len(eff))
	failed := map[string]bool{}
	var search func(n int) bool
	search = func(n int) bool {
		if n == len(eff) {
			return true
		}
		key := stateKey(placed, state)
		if failed[key] {
			return false
		}
	next:
		for q, i := range eff {
			if placed[q] {
				continue
			}
			for _, p := range pre[q] {
				if !placed[p] {
					continue next
				}
			}
			t := &c.txns[i]
			if !c.matches(i, state) {
				continue
			}
			saved := append([]history.Value(nil), state...)
			apply(t, state)
			placed[q] = true
			if search(n + 1) {
				return true
			}
			placed[q] = false
			copy(state, saved)
		}
		failed[key] = true
		return false
	}
	return search(0)
}

// stateKey encodes a search state for the failure memo.
func stateKey(placed []bool, state []history.Value) string {
	b := make([]byte, 0, len(placed)+16*len(state))
	for _, p := range placed {
		if p {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	for _, v := range state {
		b = append(b, byte(v.Kind))
		switch v.Kind {
		case history.Null:
			b = append(b, byte(v.N)) // tombstones differ from absence
		case history.Int:
			b = fmt.Appendf(b, "%d;", v.N)
		case history.String:
			b = fmt.Appendf(b, "%d:%s", len(v.S), v.S)
		}
	}
	return string(b)
}

// snapshotIsolation searches for a commit order of the effective
// transactions and, for each transaction T at position p, a snapshot point
// s <= p (T's snapshot is the first s transactions of the order) such that
//
//   - every external read of T returns the value of its key after the first
//     s transactions (the initial value if none of them writes it);
//   - T's session predecessors are among the first s (strong session SI;
//     not asked with session false: generalized SI);
//   - every transaction before T that writes a key T writes is among the
//     first s (no conflict).
//
// Every condition on T involves only T and transactions ordered before it,
// and T's snapshot point constrains no one else, so the search builds the
// order one transaction at a time and places T only if some snapshot point
// satisfies the conditions.
//
// Failed search states are remembered. With n transactions placed, what the
// rest of the search depends on is: the set of placed transactions, the
// state after them (every later state derives from it), and, for each
// unplaced T, whether some snapshot point s < n that the placed
// transactions allow T (s >= lowest, below) explains T's reads. Indeed,
// when T is later placed at position m >= n, transactions placed after now
// can only raise its lowest snapshot point to n+1 or more; below n+1 the
// allowed points are exactly [lowest, n], and point n is the current state.
func (c *checker) snapshotIsolation(eff []int, session bool) bool {
	if !c.explainable(eff) {
		return false
	}
	pre := c.mustPrecede(eff, session, false)
	// conflict[q][p]: the transactions at positions q and p of eff write a
	// common key.
	conflict := make([][]bool, len(eff))
	for q, i := range eff {
		conflict[q] = make([]bool, len(eff))
		for p, j := range eff {
			if p == q {
				continue
			}
			for _, w := range append(slices.Clip(c.txns[i].final), c.txns[i].appends...) {
				if c.txns[j].writesKey(w.key) {
					conflict[q][p] = true
				}
			}
		}
	}
	pos := make([]int, len(eff)) // position in the commit order, -1 if unplaced
	for q := range pos {
		pos[q] = -1
	}
	// lowest returns the smallest snapshot point that the placed
	// transactions allow the unplaced one at q: past its placed session
	// predecessors and conflicting writers. ready is false while a session
	// predecessor is unplaced (it must be in q's snapshot, so before q).
	lowest := func(q int) (lo int, ready bool) {
		ready = true
		for _, p := range pre[q] {
			if pos[p] < 0 {
				ready = false
			} else {
				lo = max(lo, pos[p]+1)
			}
		}
		for p := range eff {
			if pos[p] >= 0 && conflict[q][p] {
				lo = max(lo, pos[p]+1)
			}
		}
		return lo, ready
	}
	// states[s] is the state after the first s transactions of the order.
	states := [][]history.Value{append([]history.Value(nil), c.init...)}
	// explainedBefore reports whether a snapshot point in [lo, n) explains
	// the reads of t.
	explainedBefore := func(i, lo, n int) bool {
		for s := lo; s < n; s++ {
			if c.matches(i, states[s]) {
				return true
			}
		}
		return false
	}
	failed := map[string]bool{}
	var search func(n int) bool
	search = func(n int) bool {
		if n == len(eff) {
			return true
		}
		placed := make([]bool, len(eff))
		old := make([]bool, len(eff))
		for q, i := range eff {
			placed[q] = pos[q] >= 0
			if !placed[q] {
				lo, _ := lowest(q)
				old[q] = explainedBefore(i, lo, n)
			}
		}
		key := stateKey(append(placed, old...), states[n])
		if failed[key] {
			return false
		}
		for q, i := range eff {
			if pos[q] >= 0 {
				continue
			}
			lo, ready := lowest(q)
			if !ready {
				continue
			}
			t := &c.txns[i]
			if !explainedBefore(i, lo, n+1) {
				continue
			}
			after := append([]history.Value(nil), states[n]...)
			apply(t, after)
			pos[q] = n
			states = append(states, after)
			if search(n + 1) {
				return true
			}
			states = states[:n+1]
			pos[q] = -1
		}
		failed[key] = true
		return false
	}
	return search(0)
}
