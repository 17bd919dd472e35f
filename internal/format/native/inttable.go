package native

// intTable maps integers (keys of a history) to ids. Small non-negative
// integers are found in a dense table (id+1 at the integer, 0 for none),
// grown as dense allows; the others in an open-addressed hash table with
// linear probing. Every integer the dense table covers is in it: when it
// grows, the hash table's integers it now covers move to it. Neither holds a pointer, so the collector has nothing
// to trace in them, and a lookup is an index or a short probe of one
// array instead of a Go map's hashing.
type intTable struct {
	dense []int32
	slots []intSlot // a power of two long, or empty
	n     int       // slots in use
	shift uint8     // 64 - log2(len(slots))
}

// intSlot is a slot of the hash table: key k has id id-1; id 0 is empty.
type intSlot struct {
	k  int64
	id int32
}

// hashInt spreads k over the table's slots (Fibonacci hashing: the top
// bits of k times 2^64/φ).
func (t *intTable) hashInt(k int64) uint64 {
	return (uint64(k) * 0x9e3779b97f4a7c15) >> t.shift
}

// get returns the id of k, if t has it.
func (t *intTable) get(k int64) (int32, bool) {
	if uint64(k) < uint64(len(t.dense)) {
		id := t.dense[k]
		return id - 1, id != 0
	}
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.hashInt(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.k == k {
			return s.id - 1, true
		}
	}
}

// put records that k, which t does not have, has id id; the dense table
// may grow to 2*bound+65536 integers (see dense).
func (t *intTable) put(k int64, id int32, bound int) {
	covered := len(t.dense)
	if slot := dense(&t.dense, k, bound); slot != nil {
		*slot = id + 1
		if len(t.dense) > covered && t.n > 0 {
			t.rehash(len(t.slots))
		}
		return
	}
	if 4*(t.n+1) > 3*len(t.slots) {
		t.rehash(max(2*len(t.slots), 1024))
	}
	mask := uint64(len(t.slots) - 1)
	i := t.hashInt(k)
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = intSlot{k: k, id: id + 1}
	t.n++
}

// rehash makes the hash table size slots long (a power of two) and puts
// its entries back, those the dense table covers there.
func (t *intTable) rehash(size int) {
	old := t.slots
	t.slots = make([]intSlot, size)
	t.shift = uint8(64 - log2(size))
	t.n = 0
	mask := uint64(size - 1)
	for _, s := range old {
		if s.id == 0 {
			continue
		}
		if uint64(s.k) < uint64(len(t.dense)) {
			t.dense[s.k] = s.id
			continue
		}
		t.n++
		i := t.hashInt(s.k)
		for t.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// reset empties t, keeping its memory.
func (t *intTable) reset() {
	clear(t.dense)
	if t.n > 0 {
		clear(t.slots)
		t.n = 0
	}
}

// log2 is the base-2 logarithm of n, a power of two.
func log2(n int) int {
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}
