package history

import (
	"context"
	"runtime"
)

// OpRef names one operation: a transaction and the operation's position.
type OpRef struct {
	Txn TxnID
	Op  int32
}

// writeKey is a (key, value) pair of a write whose value is not an
// integer; intKey the common case, hashed without strings.
type writeKey struct {
	k KeyID
	v Value
}

type intKey struct {
	k KeyID
	n int64
}

// What ReadFrom answers besides a write id.
const (
	// NotExternal: the operation is not a plain read, or it follows the
	// transaction's own write of the key.
	NotExternal int32 = -1
	// FromNothing: no transaction wrote the value read (it may still be
	// the initial value; see WrittenInitially).
	FromNothing int32 = -2
)

// Index answers the questions every checker asks of a history: which write
// each read observed, which writes are final in their transaction, which
// transactions took effect. It resolves every read once, with one hash
// lookup. It indexes writes and deletes (a delete installs NullValue, or
// Tombstone with tombstone deletes) and resolves plain reads; Observations
// and Sources give every key that reads, scans and iterators observed with
// its candidate writes. Appends and list reads are left to the checkers that
// handle them.
type Index struct {
	h *History
	// ints and others map (key, value) to the first write in refs; next
	// chains further writes of the same pair.
	packed *packedTable // integer values that pack with their key
	ints   map[intKey]int32
	others map[writeKey]int32
	refs   []OpRef
	next   []int32
	// tail holds, while writes are indexed, the last write of the chain
	// each first write starts (by the first write's id), so that a write
	// joins its chain in constant time: walking the chain made indexing
	// quadratic in the writes of a repeated value.
	tail []int32
	// final marks writes that are the last write of their key in their
	// transaction, by write id.
	final []bool
	// opStart[t] is where transaction t's operations start in readFrom.
	opStart []int32
	// readFrom holds, per operation, the first write of the value an
	// external read returned, FromNothing or NotExternal.
	readFrom []int32
	// effective[t] says transaction t took effect: committed, or unknown
	// and observed by an effective reader.
	effective []bool
	unique    bool
	dup       writeKey
	dupID     int32 // the write that repeats dup
	dupRefs   [2]OpRef
	// own is the read-your-own-writes policy of Observations.
	own OwnReads
	// scratch is insertPartitioned's buffer, for resolveReads to reuse:
	// fresh memory costs a page fault per page.
	scratch []packedSlot
	// rangeKeys are, in key order, the keys a scan or iterator may find
	// present (written, deleted or initially present); nil when the
	// history has no range operation.
	rangeKeys []KeyID
}

// NewIndex indexes h's writes, resolves every read, and decides which
// unknown transactions took effect (an unknown transaction took effect
// exactly when a transaction that took effect read one of its writes,
// unambiguously).
func NewIndex(h *History) *Index { return NewIndexWith(h, MustReadOwn) }

// NewIndexWith is NewIndex under a read-your-own-writes policy.
func NewIndexWith(h *History, own OwnReads) *Index {
	ix, _ := NewIndexContext(context.Background(), h, own)
	return ix
}

// NewIndexContext is NewIndexWith, giving up with ctx's error (and no
// index) when ctx ends: it looks between its phases and, while it decides
// which unknown transactions took effect, every 1,024 transactions.
func NewIndexContext(ctx context.Context, h *History, own OwnReads) (*Index, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := len(h.Txns)
	parts := min(runtime.GOMAXPROCS(0), 8)
	if n < parallelReads || parts < 2 {
		parts = 1
	}
	// The transactions fall in parts (one for a small history), each
	// indexed on its own processor where the work allows.
	counts := make([]partCounts, parts)
	parallel(parts, func(p int) {
		c := &counts[p]
		c.lo, c.hi = n*p/parts, n*(p+1)/parts
		for i := c.lo; i < c.hi; i++ {
			c.ops += len(h.Txns[i].Ops)
			for _, op := range h.Txns[i].Ops {
				if op.Kind == Write || op.Kind == Delete {
					c.writes++
				}
				c.ranges = c.ranges || op.Kind.IsRange()
			}
		}
	})
	nw, nops, ranges := 0, 0, false
	for p := range counts {
		counts[p].firstWrite = nw
		nw, nops, ranges = nw+counts[p].writes, nops+counts[p].ops, ranges || counts[p].ranges
	}
	ix := &Index{
		h:         h,
		packed:    newPackedTable(nw),
		refs:      make([]OpRef, nw),
		next:      make([]int32, nw),
		final:     make([]bool, nw),
		opStart:   make([]int32, len(h.Txns)+1),
		readFrom:  make([]int32, nops),
		effective: make([]bool, len(h.Txns)),
		unique:    true,
		own:       own,
	}
	ix.tail = make([]int32, nw)
	ix.indexWrites(counts)
	ix.tail = nil
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ix.resolveReads()
	if ranges {
		ix.indexRangeKeys()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ix.resolveEffective(ctx); err != nil {
		return nil, err
	}
	return ix, nil
}

// ReadFrom returns, for operation j of transaction t, the first write of the
// value it read (a write id), FromNothing when no transaction wrote it, or
// NotExternal when it is not a read that observes other transactions.
// Further writes of the same value follow through NextWrite.
func (ix *Index) ReadFrom(t TxnID, j int) int32 {
	return ix.readFrom[ix.opStart[t]+int32(j)]
}

// NextWrite returns the next write of the same value to the same key as
// write id, or -1.
func (ix *Index) NextWrite(id int32) int32 { return ix.next[id] }

// ExternalReads calls f for each plain read of t that is not preceded in t
// by t's own write of the key: the reads that observe another transaction.
func (ix *Index) ExternalReads(t TxnID, f func(op int, o Op)) {
	ops := ix.h.Txns[t].Ops
	base := ix.opStart[t]
	for j, op := range ops {
		if ix.readFrom[base+int32(j)] != NotExternal {
			f(j, op)
		}
	}
}

// Writers calls f for every write of v to k, in file order (the initial
// transaction is not included; see WrittenInitially).
func (ix *Index) Writers(k KeyID, v Value, f func(w OpRef, final bool)) {
	p, ok := ix.lookup(k, v)
	if !ok {
		return
	}
	for ; p >= 0; p = ix.next[p] {
		f(ix.refs[p], ix.final[p])
	}
}

// SoleWriter returns the one write of v to k when there is exactly one and
// the initial state does not hold v at k.
func (ix *Index) SoleWriter(k KeyID, v Value) (OpRef, bool) {
	p, ok := ix.lookup(k, v)
	if !ok || ix.next[p] >= 0 || ix.WrittenInitially(k, v) {
		return OpRef{}, false
	}
	return ix.refs[p], true
}

// WrittenInitially reports whether the initial state holds v at k (null for
// keys the initial state does not name).
func (ix *Index) WrittenInitially(k KeyID, v Value) bool {
	if len(ix.h.Header.Initial.Values) == 0 {
		return v.Kind == Null
	}
	return ix.h.InitialValue(k) == v
}

// Effective reports whether t took effect: committed, or unknown and
// observed.
func (ix *Index) Effective(t TxnID) bool {
	return t == Init || ix.effective[t]
}

// Unique reports whether no two writes (counting the initial state's named
// values) put the same value at the same key.
func (ix *Index) Unique() bool { return ix.unique }

// Duplicate returns the first duplicate write found when Unique is false:
// the key, the value and two writes of it (the first may be Init).
func (ix *Index) Duplicate() (KeyID, Value, [2]OpRef) { return ix.dup.k, ix.dup.v, ix.dupRefs }

// NumWrites returns how many writes and deletes the history has; write ids
// run from 0 to NumWrites()-1 in file order.
func (ix *Index) NumWrites() int { return len(ix.refs) }

// FirstWrite returns the id of the first write of v to k (in a history
// with unique values, the only one).
func (ix *Index) FirstWrite(k KeyID, v Value) (int32, bool) { return ix.lookup(k, v) }

// WriteRef returns the operation of write id.
func (ix *Index) WriteRef(id int32) OpRef { return ix.refs[id] }

// WriteIsFinal reports whether write id is the last write or delete of its
// key in its transaction.
func (ix *Index) WriteIsFinal(id int32) bool { return ix.final[id] }

// History returns the indexed history.
func (ix *Index) History() *History { return ix.h }

// Warm loads, for every read of t, the write it names and whether that
// write's transaction took effect, and returns a value made of them that
// means nothing. A caller about to look those up one read at a time calls
// it first: its loads do not depend on one another, so their cache misses
// overlap (a large history's writes lie far apart in memory), where the
// lookups, each behind the work on the read before, would wait for them
// one after the other.
func (ix *Index) Warm(t TxnID) uint32 {
	lo, hi := ix.opStart[t], ix.opStart[t+1]
	var sum uint32
	for _, p := range ix.readFrom[lo:hi] {
		if p >= 0 {
			sum += uint32(ix.refs[p].Txn)
			if ix.final[p] {
				sum++
			}
		}
	}
	for _, p := range ix.readFrom[lo:hi] {
		if p >= 0 && ix.effective[ix.refs[p].Txn] {
			sum++
		}
	}
	return sum
}
