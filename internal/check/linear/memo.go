package linear

import "math/bits"

// memo is the set of configurations visited: porcupine's cache of
// (operations placed, value) pairs, with subsumption for the optional
// operations. A configuration is a key of 64-bit words (the value, the
// required operations placed) and a vector of counts (how many of each
// class of optional operations are placed, two 32-bit counts a word). A
// configuration is subsumed by a visited one with the same key and no
// larger count anywhere: having left more optional operations unplaced
// never hurts (they may always stay unplaced, and of a class the ones
// left are interchangeable), so whatever completes it completes the
// visited one. Keys are kept whole (a hash alone could call two
// configurations the same) in an open-addressing table with linear
// probing; each key has its list of count vectors, none subsuming
// another.
type memo struct {
	width   int     // words of a count vector
	slots   []int32 // entry index + 1; 0 is empty
	entries []memoEntry
	arena   []uint64 // the keys
	vecs    []uint64 // the count vectors, width words each
	next    []int32  // the next vector of the same key, or -1
}

type memoEntry struct {
	hash uint64
	off  int
	n    int32
	head int32 // the key's first count vector
}

// bytes is what the memo holds.
func (m *memo) bytes() int64 {
	return int64(cap(m.slots))*4 + int64(cap(m.entries))*32 + int64(cap(m.arena))*8 + int64(cap(m.vecs))*8 + int64(cap(m.next))*4
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

// add adds the configuration (key, vec) and reports whether it was new:
// not subsumed by one already there. vec has m.width words.
func (m *memo) add(key, vec []uint64) bool {
	if len(m.entries)*2 >= len(m.slots) {
		m.grow()
	}
	h := hashWords(key)
	mask := uint64(len(m.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := m.slots[i]
		if e == 0 {
			m.entries = append(m.entries, memoEntry{hash: h, off: len(m.arena), n: int32(len(key)), head: m.push(vec, -1)})
			m.arena = append(m.arena, key...)
			m.slots[i] = int32(len(m.entries))
			return true
		}
		x := &m.entries[e-1]
		if x.hash != h || int(x.n) != len(key) || !equalWords(m.arena[x.off:x.off+int(x.n)], key) {
			continue
		}
		for v := x.head; v >= 0; v = m.next[v] {
			if atMost(m.vecs[int(v)*m.width:int(v+1)*m.width], vec) {
				return false
			}
		}
		x.head = m.push(vec, x.head)
		return true
	}
}

// push stores a count vector in front of the list next and returns its
// index.
func (m *memo) push(vec []uint64, next int32) int32 {
	m.vecs = append(m.vecs, vec...)
	m.next = append(m.next, next)
	return int32(len(m.next) - 1)
}

func equalWords(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// atMost reports whether every count of a is at most b's (two 32-bit
// counts a word).
func atMost(a, b []uint64) bool {
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if uint32(a[i]) > uint32(b[i]) || a[i]>>32 > b[i]>>32 {
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
