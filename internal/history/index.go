package history

import (
	"context"
	"runtime"
	"sync"
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

// partCounts describes a part of the transactions, lo to hi: how many
// operations and writes (writes and deletes) it has, whether it has a
// range operation, and the id of its first write.
type partCounts struct {
	lo, hi     int
	ops        int
	writes     int
	ranges     bool
	firstWrite int
}

// pack packs key k and integer n into one word when k < 2^24 - 1 and
// 0 <= n < 2^40, the common case, so that the table hashes one word (never
// all ones: packedTable stores words plus one).
func pack(k KeyID, n int64) (uint64, bool) {
	if k < 0 || k >= 1<<24-1 || n < 0 || n >= 1<<40 {
		return 0, false
	}
	return uint64(k)<<40 | uint64(n), true
}

func (ix *Index) lookup(k KeyID, v Value) (int32, bool) {
	if v.Kind == Int {
		if w, ok := pack(k, v.N); ok {
			return ix.packed.get(w)
		}
		p, ok := ix.ints[intKey{k, v.N}]
		return p, ok
	}
	p, ok := ix.others[writeKey{k, v}]
	return p, ok
}

// lookupOrInsert returns the id stored for (k, v), or stores id and
// reports false.
func (ix *Index) lookupOrInsert(k KeyID, v Value, id int32) (int32, bool) {
	if v.Kind == Int {
		if w, ok := pack(k, v.N); ok {
			return ix.packed.putIfAbsent(w, id)
		}
	}
	if f, ok := ix.lookup(k, v); ok {
		return f, true
	}
	ix.insert(k, v, id)
	return 0, false
}

// insert stores id for (k, v), a pair that does not pack (lookupOrInsert
// takes those to the packed table).
func (ix *Index) insert(k KeyID, v Value, id int32) {
	if v.Kind == Int {
		if ix.ints == nil {
			ix.ints = make(map[intKey]int32)
		}
		ix.ints[intKey{k, v.N}] = id
		return
	}
	if ix.others == nil {
		ix.others = make(map[writeKey]int32)
	}
	ix.others[writeKey{k, v}] = id
}

func (ix *Index) indexWrites(parts []partCounts) {
	h := ix.h
	// With a table too big for the caches, writes of packed words are
	// only collected here (words[id] is the word plus one, 0 for other
	// writes) and inserted afterwards by partition; other writes, in
	// slow, are indexed in file order after the parts.
	var words []uint64
	partitions := ix.packed.partitions()
	if partitions > 1 {
		words = make([]uint64, len(ix.refs))
	}
	counts := make([][]int32, len(parts))
	slow := make([][]int32, len(parts))
	parallel(len(parts), func(p int) {
		part := &parts[p]
		if words != nil {
			counts[p] = make([]int32, partitions)
		}
		var last []KeyID // keys written so far in the transaction, by write
		var lastID []int32
		id := int32(part.firstWrite)
		pos := ix.opStartOf(parts, p)
		for i := part.lo; i < part.hi; i++ {
			t := &h.Txns[i]
			ix.opStart[i] = pos
			pos += int32(len(t.Ops))
			last, lastID = last[:0], lastID[:0]
			for j, op := range t.Ops {
				if op.Kind != Write && op.Kind != Delete {
					continue
				}
				ix.refs[id] = OpRef{Txn: TxnID(i), Op: int32(j)}
				ix.next[id] = -1
				ix.final[id] = true
				for n, k := range last {
					if k == op.Key && ix.final[lastID[n]] {
						ix.final[lastID[n]] = false
					}
				}
				last, lastID = append(last, op.Key), append(lastID, id)
				if v := h.Installed(op); words != nil && v.Kind == Int {
					if w, ok := pack(op.Key, v.N); ok {
						words[id] = w + 1
						counts[p][ix.packed.partition(w)]++
						id++
						continue
					}
				}
				slow[p] = append(slow[p], id)
				id++
			}
		}
	})
	ix.opStart[len(h.Txns)] = int32(len(ix.readFrom))
	var d dupNote
	for _, ids := range slow {
		for _, id := range ids {
			r := ix.refs[id]
			op := h.Txns[r.Txn].Ops[r.Op]
			v := h.Installed(op)
			f, seen := ix.lookupOrInsert(op.Key, v, id)
			ix.chain(&d, id, f, seen, op.Key, v)
		}
	}
	ix.noteDup(&d)
	if words != nil {
		ix.insertPartitioned(words, parts, counts)
	}
}

// opStartOf returns where part p's operations start in readFrom.
func (ix *Index) opStartOf(parts []partCounts, p int) int32 {
	pos := 0
	for _, q := range parts[:p] {
		pos += q.ops
	}
	return int32(pos)
}

// chain records write id of v to k after its table lookup: f is the first
// write of the pair when seen. It appends id to the pair's chain of writes
// and notes a duplicate in d.
func (ix *Index) chain(d *dupNote, id, f int32, seen bool, k KeyID, v Value) {
	if !seen {
		ix.tail[id] = id
		if !v.IsNull() && ix.WrittenInitially(k, v) {
			d.note(id, writeKey{k, v}, OpRef{Txn: Init, Op: -1})
		}
		return
	}
	// Deletes and writes of null repeat absence, not a value.
	if !v.IsNull() {
		d.note(id, writeKey{k, v}, ix.refs[f])
	}
	ix.next[ix.tail[f]] = id
	ix.tail[f] = id
}

// dupNote is the first duplicate write found (in file order) by one
// indexer of writes.
type dupNote struct {
	found bool
	id    int32    // the write that repeats wk
	wk    writeKey // the key and value
	first OpRef    // its first write (or Init)
}

// note records that write id repeats the pair wk first written by first,
// unless a duplicate at an earlier write is known.
func (d *dupNote) note(id int32, wk writeKey, first OpRef) {
	if !d.found || id < d.id {
		*d = dupNote{found: true, id: id, wk: wk, first: first}
	}
}

// noteDup takes the duplicate of d unless one at an earlier write is known:
// Duplicate names the first in file order, whatever order the writes are
// indexed in.
func (ix *Index) noteDup(d *dupNote) {
	if d.found && (ix.unique || d.id < ix.dupID) {
		ix.unique, ix.dup, ix.dupID, ix.dupRefs = false, d.wk, d.id, [2]OpRef{d.first, ix.refs[d.id]}
	}
}

// insertPartitioned inserts the packed writes collected by indexWrites
// (words[id] is write id's word plus one, or 0; counts[p][q] of part p's
// writes fall in partition q) partition by partition: a partition is a
// range of the table small enough for the caches, where one write at a
// time in file order would miss them at almost every insert. Within a
// partition the writes go in file order, so every pair keeps its first
// write and its chain in file order. The processors take a range of
// partitions each; a write whose probe would leave its processor's range
// waits for the end, inserted then in file order (all the writes of its
// pair wait too: their probes follow the same path).
func (ix *Index) insertPartitioned(words []uint64, parts []partCounts, counts [][]int32) {
	tab := ix.packed
	np := tab.partitions()
	// at[p][q] is where part p's writes of partition q go in buf; start[q]
	// where partition q starts.
	at := make([][]int32, len(parts))
	start := make([]int32, np+1)
	total := int32(0)
	for q := range np {
		start[q] = total
		for p := range parts {
			if q == 0 {
				at[p] = make([]int32, np)
			}
			at[p][q] = total
			total += counts[p][q]
		}
	}
	start[np] = total
	buf := make([]packedSlot, total)
	parallel(len(parts), func(p int) {
		first := parts[p].firstWrite
		for i, w := range words[first : first+parts[p].writes] {
			if w != 0 {
				q := tab.partition(w - 1)
				buf[at[p][q]] = packedSlot{w: w - 1, id: int32(first + i)}
				at[p][q]++
			}
		}
	})
	workers := len(parts)
	notes := make([]dupNote, workers)
	waiting := make([][]packedSlot, workers)
	added := make([]int, workers)
	parallel(workers, func(p int) {
		q0, q1 := np*p/workers, np*(p+1)/workers
		lo, hi := uint64(q0)*partitionSlots, uint64(q1)*partitionSlots
		// The table is fresh memory: written first, each page faults in
		// once; read first (by a probe), it faults twice.
		clear(tab.slots[lo:hi])
		for _, e := range buf[start[q0]:start[q1]] {
			f, seen, in := tab.putIfAbsentIn(e.w, e.id, lo, hi)
			if !in {
				waiting[p] = append(waiting[p], e)
				continue
			}
			if !seen {
				added[p]++
			}
			ix.chain(&notes[p], e.id, f, seen, KeyID(e.w>>40), IntValue(int64(e.w&(1<<40-1))))
		}
	})
	var d dupNote
	for p := range workers {
		tab.n += added[p]
		for _, e := range waiting[p] {
			f, seen := tab.putIfAbsent(e.w, e.id)
			ix.chain(&d, e.id, f, seen, KeyID(e.w>>40), IntValue(int64(e.w&(1<<40-1))))
		}
		ix.noteDup(&notes[p])
	}
	ix.noteDup(&d)
	ix.scratch = buf
}

// parallelReads is how many transactions make resolveReads split its work
// across the processors: each part only looks the writes up and fills its
// own transactions' entries.
const parallelReads = 1 << 16

// resolveReads finds, for every read not preceded by its transaction's own
// write of the key, the first write of the value it returned.
func (ix *Index) resolveReads() {
	n := len(ix.h.Txns)
	parts := min(runtime.GOMAXPROCS(0), 8)
	if n < parallelReads || parts < 2 {
		parts = 1
	}
	if ix.packed.partitions() == 1 {
		parallel(parts, func(p int) { ix.resolveReadsOf(n*p/parts, n*(p+1)/parts, nil) })
		return
	}
	// With a table too big for the caches, the reads of packed words are
	// collected, grouped by partition of the table and looked up a
	// partition at a time (see insertPartitioned).
	found := make([]readsFound, parts)
	parallel(parts, func(p int) {
		lo, hi := n*p/parts, n*(p+1)/parts
		// At most one read per operation: the part of the capacity not
		// used is never touched.
		found[p].reads = make([]packedSlot, 0, ix.opStart[hi]-ix.opStart[lo])
		found[p].counts = make([]int32, ix.packed.partitions())
		ix.resolveReadsOf(lo, hi, &found[p])
	})
	// at[p][q] is where part p's reads of partition q go in buf.
	at := make([][]int32, parts)
	total := int32(0)
	for q := range ix.packed.partitions() {
		for p := range found {
			if q == 0 {
				at[p] = make([]int32, ix.packed.partitions())
			}
			at[p][q] = total
			total += found[p].counts[q]
		}
	}
	buf := ix.scratch[:0]
	ix.scratch = nil
	if cap(buf) < int(total) {
		buf = make([]packedSlot, total)
	}
	buf = buf[:total]
	parallel(parts, func(p int) {
		for _, e := range found[p].reads {
			q := ix.packed.partition(e.w)
			buf[at[p][q]] = e
			at[p][q]++
		}
		found[p].reads = nil
	})
	parallel(parts, func(p int) {
		for _, e := range buf[len(buf)*p/parts : len(buf)*(p+1)/parts] {
			if w, ok := ix.packed.get(e.w); ok {
				ix.readFrom[e.id] = w
			} else {
				ix.readFrom[e.id] = FromNothing
			}
		}
	})
}

// readsFound collects the reads of packed words that resolveReadsOf leaves
// to a lookup by partition: each read's word and its position in
// readFrom, and how many fall in each partition of the table.
type readsFound struct {
	reads  []packedSlot
	counts []int32
}

// parallel runs f(0), …, f(parts-1), on as many goroutines when parts > 1.
func parallel(parts int, f func(p int)) {
	if parts == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { f(p) })
	}
	wg.Wait()
}

// resolveReadsOf is resolveReads for transactions lo to hi. With found, the
// reads of packed words are left to the caller, collected in found.
func (ix *Index) resolveReadsOf(lo, hi int, found *readsFound) {
	h := ix.h
	var written map[KeyID]bool
	for i := lo; i < hi; i++ {
		ops := h.Txns[i].Ops
		base := ix.opStart[i]
		big := len(ops) > 16
		if big {
			if written == nil {
				written = make(map[KeyID]bool)
			}
			clear(written)
		}
		for j, op := range ops {
			ix.readFrom[base+int32(j)] = NotExternal
			if op.Kind.IsWrite() {
				if big {
					written[op.Key] = true
				}
				continue
			}
			if op.Kind != Read {
				continue
			}
			if big && written[op.Key] || !big && ownWriteBefore(ops[:j], op.Key) {
				continue
			}
			if found != nil && op.Value.Kind == Int {
				if w, ok := pack(op.Key, op.Value.N); ok {
					found.reads = append(found.reads, packedSlot{w: w, id: base + int32(j)})
					found.counts[ix.packed.partition(w)]++
					continue
				}
			}
			if p, ok := ix.lookup(op.Key, op.Value); ok {
				ix.readFrom[base+int32(j)] = p
			} else {
				ix.readFrom[base+int32(j)] = FromNothing
			}
		}
	}
}

func ownWriteBefore(ops []Op, k KeyID) bool {
	for _, p := range ops {
		if p.Kind.IsWrite() && p.Key == k {
			return true
		}
	}
	return false
}

// resolveEffective marks committed transactions, then unknown ones that an
// effective transaction observed, to a fixpoint. It stops with ctx's
// error when ctx ends.
func (ix *Index) resolveEffective(ctx context.Context) error {
	h := ix.h
	unknown := false
	for i := range h.Txns {
		switch h.Txns[i].Status {
		case Committed:
			ix.effective[i] = true
		case Unknown:
			unknown = true
		}
	}
	if !unknown {
		return nil // only an unknown transaction can take effect by being observed
	}
	var work []TxnID
	for i := range h.Txns {
		if h.Txns[i].Status == Committed {
			work = append(work, TxnID(i))
		}
	}
	for n := 0; len(work) > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		t := work[len(work)-1]
		work = work[:len(work)-1]
		ix.Observations(t, func(o Observation) {
			w, ok := ix.soleSource(t, o)
			if !ok || w.Txn == t || ix.effective[w.Txn] || h.Txns[w.Txn].Status != Unknown {
				return
			}
			ix.effective[w.Txn] = true
			work = append(work, w.Txn)
		})
	}
	return nil
}

// soleSource returns the write that external observation o of t saw when
// exactly one write (and not the initial state) can have served it.
func (ix *Index) soleSource(t TxnID, o Observation) (OpRef, bool) {
	if o.Own >= 0 || ix.InitiallySeen(o) {
		return OpRef{}, false
	}
	var sole OpRef
	n := 0
	ix.Sources(o, func(id int32) bool {
		n++
		sole = ix.refs[id]
		return n < 2
	})
	return sole, n == 1
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
