package linear

import "math/bits"

// memo is a set of configurations, each a key of 64-bit words: porcupine's
// cache of (placed operations, value) pairs. Keys are kept whole in one
// arena (a hash alone could call two configurations the same), in an
// open-addressing table with linear probing.
type memo struct {
	slots   []int32 // entry index + 1; 0 is empty
	entries []memoEntry
	arena   []uint64
}

type memoEntry struct {
	hash uint64
	off  int
	n    int32
}

// bytes is what the memo holds.
func (m *memo) bytes() int64 {
	return int64(cap(m.slots))*4 + int64(cap(m.entries))*24 + int64(cap(m.arena))*8
}

// hashWords hashes a key.
func hashWords(key []uint64) uint64 {
	h := uint64(len(key)) * 0x9e3779b97f4a7c15
	for _, w := range key {
		hi, lo := bits.Mul64(h^w, 0xbf58476d1ce4e5b9)
		h = hi ^ lo
	}
	return h ^ h>>31
}

// add adds key to the set and reports whether it was not there.
func (m *memo) add(key []uint64) bool {
	if len(m.entries)*2 >= len(m.slots) {
		m.grow()
	}
	h := hashWords(key)
	mask := uint64(len(m.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := m.slots[i]
		if e == 0 {
			m.entries = append(m.entries, memoEntry{hash: h, off: len(m.arena), n: int32(len(key))})
			m.arena = append(m.arena, key...)
			m.slots[i] = int32(len(m.entries))
			return true
		}
		x := &m.entries[e-1]
		if x.hash == h && int(x.n) == len(key) && equalWords(m.arena[x.off:x.off+int(x.n)], key) {
			return false
		}
	}
}

func equalWords(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// grow doubles the table (or makes the first one).
func (m *memo) grow() {
	n := max(2*len(m.slots), 1024)
	m.slots = make([]int32, n)
	mask := uint64(n - 1)
	for j, e := range m.entries {
		i := e.hash & mask
		for m.slots[i] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = int32(j + 1)
	}
}
