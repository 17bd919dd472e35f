package online

import (
	"hash/maphash"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/isoscope/isoscope/internal/history"
)

// Dropped integer keys are remembered exactly, in a compressed bitmap
// (keys a workload retires one after another take a few bytes each
// run of them). Other keys go into a Bloom filter that takes an eighth
// of the memory bound, from minGoneBytes to maxGoneBytes: at a million
// string keys dropped, a false positive comes in about a million lookups
// at 16 MiB (2^27 bits), in about 6,000 at 4 MiB (a key the filter
// mistakes for a dropped one is not judged, and the verdict is then
// Undecided, as for a dropped key).
const (
	minGoneBytes = 1 << 20
	maxGoneBytes = 16 << 20
)

// goneWords is the size of the filter of dropped keys for a memory bound
// of bound bytes, in 64-bit words.
func goneWords(bound int64) int {
	return int(min(max(bound/8, minGoneBytes), maxGoneBytes) / 8)
}

// setBound sets the bound the estimate is kept under (see
// Checker.SetBound) and drops idle keys' settled state at once to meet
// it.
func (s *state) setBound(b int64) {
	if s.cfg.MemoryBytes <= 0 {
		return
	}
	s.bound = min(max(b, 1), s.cfg.MemoryBytes)
	s.evict()
}

// elemBytes and keyBytes are the estimate's cost of a settled element
// and of a key's state.
const (
	elemBytes = 150
	keyBytes  = 200
)

// dropped says whether key k's settled state was dropped (or, rarely, a
// string key the filter mistakes for one).
func (s *state) dropped(k history.Value) bool {
	if k.Kind == history.Int {
		return s.goneInts != nil && s.goneInts.Contains(uint64(k.N))
	}
	if s.gone == nil {
		return false
	}
	h := maphash.Comparable(s.goneSeed, k)
	a, b := h, h>>32|1
	n := uint64(len(s.gone)) * 64
	for i := range uint64(4) {
		bit := (a + i*b) % n
		if s.gone[bit/64]&(1<<(bit%64)) == 0 {
			return false
		}
	}
	return true
}

// markDropped remembers that key k's settled state was dropped.
func (s *state) markDropped(k history.Value) {
	if k.Kind == history.Int {
		if s.goneInts == nil {
			s.goneInts = roaring64.New()
		}
		s.goneInts.Add(uint64(k.N))
		return
	}
	if s.gone == nil {
		s.gone = make([]uint64, goneWords(s.cfg.MemoryBytes))
		s.goneSeed = maphash.MakeSeed()
	}
	h := maphash.Comparable(s.goneSeed, k)
	a, b := h, h>>32|1
	n := uint64(len(s.gone)) * 64
	for i := range uint64(4) {
		bit := (a + i*b) % n
		s.gone[bit/64] |= 1 << (bit % 64)
	}
}

// recentKeep is how many of the last transactions to arrive keep the
// keys they touched from being dropped, for a window of held
// transactions: twice the window (keys retire long after the window
// moves past them, and a key in use is touched again within a few
// windows).
func recentKeep(held int) uint64 { return 2 * uint64(held) }

// evict drops, under the memory bound (s.bound: Config.MemoryBytes, or
// lower when SetBound lowered it), the settled state of the keys no held
// transaction touches and none of the last recentKeep transactions
// touched, least recently touched first, from half the bound
// (less the filter of dropped keys) down to a quarter of it. A later
// transaction that touches a dropped key is not judged on it, and the
// verdict is then Undecided.
func (s *state) evict() {
	// What remembers the dropped keys is a cost that dropping does not
	// lower: the half and the quarter are of the bound less it.
	held, room := s.heldBytes(), s.bound-s.goneBytes()
	if s.bound <= 0 || held+s.keysBytes() <= room/2 {
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
	// A key touched by one of the last recentKeep(len(held)) transactions
	// to arrive is in use, not retired: dropping it would leave the next
	// transactions on it unjudged (and the verdict undecided) to save
	// little, so it is kept even when the bound is not met (the warning
	// says so when the configured bound is passed).
	recent := recentKeep(len(s.held))
	for _, x := range keys {
		if held+s.keysBytes() <= room/4 || x.t+recent > s.arrived {
			break
		}
		ks := s.keys[x.k]
		s.keyElems -= len(ks.settled) + len(ks.ghosts) + len(ks.aborted)
		delete(s.keys, x.k)
		s.markDropped(x.k)
		s.droppedKeys++
	}
	if s.goneInts != nil {
		s.goneInts.RunOptimize()
		s.goneIntsB = int64(s.goneInts.GetSizeInBytes())
	}
}
