package history

// The write table: every write and delete of the history by (key, value),
// built over parts of the transactions in parallel, and the first
// duplicate write a unique-value history must not have.

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
