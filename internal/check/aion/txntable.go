package aion

import "github.com/isoscope/isoscope/internal/history"

// txnTable finds the transactions in memory by id. Integer ids, the common
// case, live in an open-addressing table of their own (linear probing, at
// most half full, deletion by shifting back the entries after): a lookup
// is one cache line where a Go map takes several. String ids live in a Go
// map.
//
// Before that table comes a run: the transactions of integer ids that
// arrive growing with small gaps (a producer numbering its transactions,
// as a key shard sees them, missing those with no operation on its keys)
// sit in a slice by id, run[id-base] — a put is an append, a get an index,
// where the table, which places blocks of ids apart, cost a piece of a
// shard a quarter of a microsecond. An id beyond the run by more than
// maxGap, or before it, or one that would leave the run less than a
// quarter full (a shard of very many), goes to the table.
type txnTable struct {
	run  []*txn
	base int64
	runN int

	slots []txnSlot
	mask  uint64
	shift uint // 64 - log2(len(slots))
	n     int
	// maxID is the largest integer id ever put (when anyID): a larger id
	// is not held, which needs no probe — ids mostly arrive growing.
	maxID int64
	anyID bool
	strs  map[string]*txn
}

// txnSlot is one entry; t is nil in an empty slot.
type txnSlot struct {
	id int64
	t  *txn
}

func newTxnTable() txnTable {
	var tt txnTable
	tt.alloc(1024)
	tt.strs = map[string]*txn{}
	return tt
}

// alloc gives the table size empty slots (a power of two).
func (tt *txnTable) alloc(size int) {
	tt.slots = make([]txnSlot, size)
	tt.mask, tt.n, tt.shift = uint64(size-1), 0, 64
	for s := size; s > 1; s >>= 1 {
		tt.shift--
	}
}

// home is id's first slot. The ids of a block of 64 consecutive ones have
// consecutive slots, from a slot the block's number picks by Fibonacci
// hashing: ids that arrive mostly growing — a producer numbering its
// transactions — go to neighbouring slots, in cache lines the last ones
// brought, where a hash of the whole id sends each to a line of its own
// (a cache miss each, most of the cost of a put in a table of millions).
func (tt *txnTable) home(id int64) uint64 {
	return ((uint64(id>>6)*0x9E3779B97F4A7C15)>>tt.shift + uint64(id&63)) & tt.mask
}

// maxGap is the largest gap between the ids of a run.
const maxGap = 64

// inRun returns id's index in the run, and whether the run covers it.
func (tt *txnTable) inRun(id int64) (int, bool) {
	off := uint64(id) - uint64(tt.base)
	return int(off), off < uint64(len(tt.run))
}

// get returns the transaction with id, or nil.
func (tt *txnTable) get(id history.Value) *txn {
	if id.Kind == history.String {
		return tt.strs[id.S]
	}
	if i, ok := tt.inRun(id.N); ok && tt.run[i] != nil {
		return tt.run[i]
	}
	if tt.n == 0 || !tt.anyID || id.N > tt.maxID {
		return nil
	}
	for i := tt.home(id.N); ; i = (i + 1) & tt.mask {
		s := &tt.slots[i]
		if s.t == nil || s.id == id.N {
			return s.t
		}
	}
}

// put adds t, replacing a transaction with its id.
func (tt *txnTable) put(t *txn) {
	if t.id.Kind == history.String {
		tt.strs[t.id.S] = t
		return
	}
	if tt.putRun(t) {
		return
	}
	tt.putTable(t)
}

// putRun puts t in the run when its id is in it or extends it.
func (tt *txnTable) putRun(t *txn) bool {
	id := t.id.N
	if len(tt.run) == 0 {
		tt.base = id
	}
	i, ok := tt.inRun(id)
	switch {
	case ok:
	case id >= tt.base && i-len(tt.run) < maxGap && i < 4*(tt.runN+16): // at least a quarter of the run's slots held
		for len(tt.run) < i {
			tt.run = append(tt.run, nil)
		}
		tt.run = append(tt.run, nil)
	default:
		return false
	}
	if tt.run[i] == nil {
		tt.runN++
		if tt.n > 0 {
			tt.removeTable(id) // put there before the run reached it
		}
	}
	tt.run[i] = t
	return true
}

// putTable puts t in the open-addressing table.
func (tt *txnTable) putTable(t *txn) {
	if !tt.anyID || t.id.N > tt.maxID {
		tt.maxID, tt.anyID = t.id.N, true
	}
	if 2*(tt.n+1) > len(tt.slots) {
		old := tt.slots
		tt.alloc(2 * len(old))
		for _, s := range old {
			if s.t != nil {
				tt.putTable(s.t)
			}
		}
	}
	for i := tt.home(t.id.N); ; i = (i + 1) & tt.mask {
		s := &tt.slots[i]
		if s.t == nil {
			s.id, s.t = t.id.N, t
			tt.n++
			return
		}
		if s.id == t.id.N {
			s.t = t
			return
		}
	}
}

// remove drops the transaction with id.
func (tt *txnTable) remove(id history.Value) {
	if id.Kind == history.String {
		delete(tt.strs, id.S)
		return
	}
	if i, ok := tt.inRun(id.N); ok && tt.run[i] != nil {
		tt.run[i] = nil
		tt.runN--
		// Drop the run's empty head (spilling removes the oldest first).
		for len(tt.run) > 0 && tt.run[0] == nil {
			tt.run = tt.run[1:]
			tt.base++
		}
		return
	}
	tt.removeTable(id.N)
}

// removeTable drops the transaction with id from the open-addressing
// table.
func (tt *txnTable) removeTable(id int64) {
	i := tt.home(id)
	for ; tt.slots[i].t != nil && tt.slots[i].id != id; i = (i + 1) & tt.mask {
	}
	if tt.slots[i].t == nil {
		return
	}
	// Shift back every later entry of the probe run that may sit at i:
	// one whose home is not cyclically in (i, j].
	for j := i; ; {
		tt.slots[i] = txnSlot{}
		for {
			j = (j + 1) & tt.mask
			if tt.slots[j].t == nil {
				tt.n--
				return
			}
			h := tt.home(tt.slots[j].id)
			if i <= j && (h <= i || h > j) || i > j && h <= i && h > j {
				break
			}
		}
		tt.slots[i] = tt.slots[j]
		i = j
	}
}

// len is the number of transactions held.
func (tt *txnTable) len() int { return tt.runN + tt.n + len(tt.strs) }
