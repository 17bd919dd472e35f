package online

import (
	"hash/maphash"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// goneBits is the size of the filter of dropped keys: 2^27 bits (16 MiB),
// a false positive in about a million lookups at a million keys dropped.
const goneBits = 1 << 27

// elemBytes and keyBytes are the estimate's cost of a settled element
// and of a key's state.
const (
	elemBytes = 150
	keyBytes  = 200
)

// dropped says whether key k's settled state was dropped (or, rarely, a
// key the filter mistakes for one).
func (s *state) dropped(k history.Value) bool {
	if s.gone == nil {
		return false
	}
	h := maphash.Comparable(s.goneSeed, k)
	a, b := h, h>>32|1
	for i := range uint64(4) {
		bit := (a + i*b) % goneBits
		if s.gone[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

func (s *state) markDropped(k history.Value) {
	if s.gone == nil {
		s.gone = make([]uint64, goneBits/64)
		s.goneSeed = maphash.MakeSeed()
	}
	h := maphash.Comparable(s.goneSeed, k)
	a, b := h, h>>32|1
	for i := range uint64(4) {
		bit := (a + i*b) % goneBits
		s.gone[bit/64] |= 1 << (bit % 64)
	}
}

// evict drops, under the memory bound, the settled state of the keys no
// held transaction touches, least recently touched first, from half the
// bound down to a quarter of it. A later transaction that touches a
// dropped key is not judged on it, and the verdict is then Undecided.
func (s *state) evict() {
	held := s.heldBytes()
	if s.cfg.MemoryBytes <= 0 || held+s.keysBytes() <= s.cfg.MemoryBytes/2 {
		return
	}
	busy := map[history.Value]bool{}
	for _, r := range s.held {
		for _, o := range r.ops {
			busy[o.key] = true
		}
	}
	for _, st := range s.stale {
		busy[st.key] = true
	}
	if s.fkey != nil {
		busy[*s.fkey] = true
	}
	type idle struct {
		k history.Value
		t uint64
	}
	var keys []idle
	for k, ks := range s.keys {
		if !busy[k] {
			keys = append(keys, idle{k, ks.touched})
		}
	}
	slices.SortFunc(keys, func(a, b idle) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	for _, x := range keys {
		if held+s.keysBytes() <= s.cfg.MemoryBytes/4 {
			break
		}
		ks := s.keys[x.k]
		s.keyElems -= len(ks.settled) + len(ks.ghosts) + len(ks.aborted)
		delete(s.keys, x.k)
		s.markDropped(x.k)
		s.droppedKeys++
	}
}
