// Package smalltab is a hash table from int32 to int32 for the few
// entries of one transaction (its keys, the transactions it read from):
// open addressing with linear probing in one small array, emptied and
// sized again for each transaction. A checker that would otherwise mark
// a table by key or by transaction of a whole history — millions of
// entries, a cache miss at nearly every look — keeps what it needs of one
// transaction in the processor's caches.
package smalltab

// Table maps int32s to int32s. The zero Table is empty, ready for use.
type Table struct {
	slots []slot // a power of two long
	shift uint8  // 32 - log2(len(slots))
	n     int    // entries
}

// slot holds key k with value v-1; v 0 is empty.
type slot struct{ k, v int32 }

// Reset empties t, sized for n entries: it grows past them, staying at
// most half full.
func (t *Table) Reset(n int) {
	size, bits := 16, uint8(4)
	for size < 2*n {
		size, bits = 2*size, bits+1
	}
	if cap(t.slots) >= size {
		t.slots = t.slots[:size]
		clear(t.slots)
	} else {
		t.slots = make([]slot, size)
	}
	t.shift, t.n = 32-bits, 0
}

// at is where k's probe starts (Fibonacci hashing).
func (t *Table) at(k int32) uint32 { return (uint32(k) * 0x9e3779b1) >> t.shift }

// Get returns k's value, if t has k.
func (t *Table) Get(k int32) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint32(len(t.slots) - 1)
	for i := t.at(k); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.v == 0 {
			return 0, false
		}
		if s.k == k {
			return s.v - 1, true
		}
	}
}

// Put gives k, which t does not have, the value v (v < MaxInt32).
func (t *Table) Put(k, v int32) {
	if len(t.slots) == 0 {
		t.Reset(0)
	}
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots, t.shift = make([]slot, 2*len(old)), t.shift-1
		t.n = 0
		for _, s := range old {
			if s.v != 0 {
				t.put(s)
			}
		}
	}
	t.put(slot{k, v + 1})
}

// put places s in its probe sequence's first empty slot.
func (t *Table) put(s slot) {
	mask := uint32(len(t.slots) - 1)
	i := t.at(s.k)
	for t.slots[i].v != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	t.n++
}
