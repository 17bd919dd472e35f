package history

// packedTable maps packed (key, integer value) words to write ids: an
// open-addressing hash table with linear probing, at most half full, each
// slot holding its word and id together (one cache line per probe). The
// index does millions of inserts and lookups on it; a Go map spends about
// four times as long on the same work.
type packedTable struct {
	slots []packedSlot
	mask  uint64
	shift uint // 64 - log2(len(slots))
	n     int
	// partShift makes a word's partition of the table from its first slot
	// (see partition).
	partShift uint
}

// partitionSlots is how many slots a partition of the table spans: 256
// KiB, well inside a core's cache.
const partitionSlots = 1 << 14

// packedSlot is one entry: word + 1 (0 marks an empty slot) and its id.
type packedSlot struct {
	w  uint64
	id int32
}

// newPackedTable returns a table sized for about n entries.
func newPackedTable(n int) *packedTable {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	t := &packedTable{}
	t.alloc(size)
	return t
}

// alloc gives the table size empty slots (a power of two).
func (t *packedTable) alloc(size int) {
	t.slots = make([]packedSlot, size)
	t.mask, t.n = uint64(size-1), 0
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.partShift = 0
	for s := size; s > partitionSlots; s >>= 1 {
		t.partShift++
	}
	t.partShift = 64 - t.partShift
}

// partitions returns how many partitions the table has: ranges of
// partitionSlots slots (1 for a small table). Inserting words grouped by
// partition keeps the probes of each group in one cache-sized range.
func (t *packedTable) partitions() int { return 1 << (64 - t.partShift) }

// partition returns the partition of word w's first slot, in [0,
// partitions()). It changes when the table grows.
func (t *packedTable) partition(w uint64) int {
	if t.partShift == 64 {
		return 0
	}
	return int(((w + 1) * 0x9E3779B97F4A7C15) >> t.partShift)
}

// slot is w's first slot: Fibonacci hashing, the top bits of the product
// (the only bits every bit of the word reaches: the key sits in the word's
// high bits, the value in its low ones).
func (t *packedTable) slot(w uint64) uint64 { return (w * 0x9E3779B97F4A7C15) >> t.shift }

// get returns the id stored for word w.
func (t *packedTable) get(w uint64) (int32, bool) {
	w++
	for i := t.slot(w); ; i = (i + 1) & t.mask {
		switch s := &t.slots[i]; s.w {
		case w:
			return s.id, true
		case 0:
			return 0, false
		}
	}
}

// putIfAbsent stores id for word w unless w has one, which it returns:
// one probe where get and put would take two.
func (t *packedTable) putIfAbsent(w uint64, id int32) (int32, bool) {
	t.reserve()
	w++
	for i := t.slot(w); ; i = (i + 1) & t.mask {
		switch s := &t.slots[i]; s.w {
		case w:
			return s.id, true
		case 0:
			s.w, s.id = w, id
			t.n++
			return 0, false
		}
	}
}

// putIfAbsentIn is putIfAbsent for a word whose first slot lies in slots
// lo to hi, without counting a new entry (the caller adds them to n):
// in is false, and nothing is stored, when the probe would leave the
// range. Goroutines may insert in disjoint ranges at once.
func (t *packedTable) putIfAbsentIn(w uint64, id int32, lo, hi uint64) (f int32, seen, in bool) {
	w++
	for i := max(t.slot(w), lo); i < hi; i++ {
		switch s := &t.slots[i]; s.w {
		case w:
			return s.id, true, true
		case 0:
			s.w, s.id = w, id
			return 0, false, true
		}
	}
	return 0, false, false
}

// reserve doubles the table when one more entry would fill it past half.
func (t *packedTable) reserve() {
	if 2*(t.n+1) <= len(t.slots) {
		return
	}
	old := t.slots
	t.alloc(2 * len(old))
	for _, s := range old {
		if s.w != 0 {
			t.put(s.w-1, s.id)
		}
	}
}

// put stores id for word w, replacing any id stored before.
func (t *packedTable) put(w uint64, id int32) {
	t.reserve()
	w++
	for i := t.slot(w); ; i = (i + 1) & t.mask {
		switch s := &t.slots[i]; s.w {
		case w:
			s.id = id
			return
		case 0:
			s.w, s.id = w, id
			t.n++
			return
		}
	}
}
