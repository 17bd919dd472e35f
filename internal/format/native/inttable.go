package native

import (
	"math/bits"

	"github.com/isoscope/isoscope/internal/history"
)

// intTable maps integers (keys of a history) to ids. Small non-negative
// integers are found in a dense table (id+1 at the integer, 0 for none),
// grown as dense allows; the other integers of [0, 2^32) in an
// open-addressed hash table with linear probing whose slot is one word
// (the integer above id+1); the rest, rare, in a map. Every integer the
// dense table covers is in it: when it grows, the hash table's integers
// it now covers move to it. The dense and hash tables hold no pointer,
// so the collector has nothing to trace in them, and a lookup is an
// index or a short probe of one array instead of a Go map's hashing.
type intTable struct {
	dense []int32
	slots []uint64 // a power of two long, or empty
	n     int      // slots in use
	shift uint8    // 64 - log2(len(slots))
	wide  map[int64]int32
}

// hashInt spreads k over the table's slots (Fibonacci hashing: the top
// bits of k times 2^64/φ).
func (t *intTable) hashInt(k uint64) uint64 {
	return (k * 0x9e3779b97f4a7c15) >> t.shift
}

// get returns the id of k, if t has it.
func (t *intTable) get(k int64) (int32, bool) {
	if uint64(k) < uint64(len(t.dense)) {
		id := t.dense[k]
		return id - 1, id != 0
	}
	if uint64(k) >= 1<<32 {
		id, ok := t.wide[k]
		return id, ok
	}
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.hashInt(uint64(k)); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if s>>32 == uint64(k) {
			return int32(uint32(s)) - 1, true
		}
	}
}

// warm loads the dense entry or first hash slot of each integer of keys
// and returns a value made of them that means nothing: the loads do not
// depend on one another, so their cache misses overlap, where the lookups
// that follow, one key at a time, would wait for each in turn.
func (t *intTable) warm(keys []history.Value) uint64 {
	var sum uint64
	for _, k := range keys {
		switch {
		case k.Kind != history.Int || uint64(k.N) >= 1<<32:
		case uint64(k.N) < uint64(len(t.dense)):
			sum += uint64(t.dense[k.N])
		case t.n > 0:
			sum += t.slots[t.hashInt(uint64(k.N))]
		}
	}
	return sum
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
	if uint64(k) >= 1<<32 {
		if t.wide == nil {
			t.wide = make(map[int64]int32)
		}
		t.wide[k] = id
		return
	}
	if 4*(t.n+1) > 3*len(t.slots) {
		t.rehash(max(2*len(t.slots), 1024))
	}
	t.insert(uint64(k)<<32 | uint64(id+1))
}

// insert puts slot s (an integer and its id+1) in the hash table.
func (t *intTable) insert(s uint64) {
	mask := uint64(len(t.slots) - 1)
	i := t.hashInt(s >> 32)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	t.n++
}

// rehash makes the hash table size slots long (a power of two) and puts
// its entries back, those the dense table covers there.
func (t *intTable) rehash(size int) {
	old := t.slots
	t.slots = make([]uint64, size)
	t.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	t.n = 0
	for _, s := range old {
		if s == 0 {
			continue
		}
		if k := s >> 32; k < uint64(len(t.dense)) {
			t.dense[k] = int32(uint32(s))
			continue
		}
		t.insert(s)
	}
}

// reset empties t, keeping its memory.
func (t *intTable) reset() {
	clear(t.dense)
	if t.n > 0 {
		clear(t.slots)
		t.n = 0
	}
	clear(t.wide)
}
