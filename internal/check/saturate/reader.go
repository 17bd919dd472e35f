package saturate

import (
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// reader is the inferences' scratch for one reader at a time: its
// distinct read keys in the order first read, each read's key as a
// position among them, and small hash tables from a key to its position
// and from a transaction read from to the first read from it. Sized by
// the reader's reads, they stay in the processor's caches, where tables
// by key or by transaction of a history of millions miss them at nearly
// every look.
type reader struct {
	keys []history.KeyID // distinct read keys, in the order first read
	at   []int32         // per read (from rFirst[t]): its key's position in keys
	key  smallTable      // key -> position in keys
	src  smallTable      // transaction read from -> the first read from it
}

// load starts reader t: its keys and positions, and no source yet.
func (s *state) load(rd *reader, t history.TxnID) {
	lo, hi := s.rFirst[t], s.rFirst[t+1]
	rd.keys, rd.at = rd.keys[:0], rd.at[:0]
	rd.key.reset(int(hi - lo))
	rd.src.reset(int(hi - lo))
	for r := lo; r < hi; r++ {
		k := s.rKey[r]
		i, ok := rd.key.get(int32(k))
		if !ok {
			i = int32(len(rd.keys))
			rd.keys = append(rd.keys, k)
			rd.key.put(int32(k), i)
		}
		rd.at = append(rd.at, i)
	}
}

// common returns, in out, the positions in rd.keys of every key source
// writes that the reader reads, walking the smaller of the two sets: in
// source's (sorted) order when its writes are fewer, else in the order
// the reader first read them.
func (s *state) common(rd *reader, source history.TxnID, out []int32) []int32 {
	out = out[:0]
	ws := s.writes(source)
	if len(ws) <= len(rd.keys) {
		for _, k := range ws {
			if i, ok := rd.key.get(int32(k)); ok {
				out = append(out, i)
			}
		}
		return out
	}
	for i, k := range rd.keys {
		if _, ok := slices.BinarySearch(ws, k); ok {
			out = append(out, int32(i))
		}
	}
	return out
}

// smallTable maps int32s to int32s for one reader: open addressing with
// linear probing, at most half full.
type smallTable struct {
	slots []smallSlot // a power of two long
	shift uint8       // 32 - log2(len(slots))
}

// smallSlot holds key k with value v-1; v 0 is empty.
type smallSlot struct{ k, v int32 }

// reset empties t for up to n entries.
func (t *smallTable) reset(n int) {
	size, bits := 16, uint8(4)
	for size < 2*n {
		size, bits = 2*size, bits+1
	}
	if cap(t.slots) >= size {
		t.slots = t.slots[:size]
		clear(t.slots)
	} else {
		t.slots = make([]smallSlot, size)
	}
	t.shift = 32 - bits
}

func (t *smallTable) slot(k int32) uint32 { return (uint32(k) * 0x9e3779b1) >> t.shift }

// get returns k's value, if t has k.
func (t *smallTable) get(k int32) (int32, bool) {
	mask := uint32(len(t.slots) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.v == 0 {
			return 0, false
		}
		if s.k == k {
			return s.v - 1, true
		}
	}
}

// put gives k, which t does not have, the value v.
func (t *smallTable) put(k, v int32) {
	mask := uint32(len(t.slots) - 1)
	i := t.slot(k)
	for t.slots[i].v != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = smallSlot{k, v + 1}
}
