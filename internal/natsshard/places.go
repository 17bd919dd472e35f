package natsshard

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// places keeps, by stream, the places in their transactions of the
// operations of the pieces that are not their transaction's first
// operations. A key worker gets a piece of nearly every transaction, and
// keeps these for good: they are held in flat arrays without pointers
// (which the garbage collector does not scan), and taking a piece's
// allocates nothing once the arrays have grown.
type places struct {
	streams map[string]*placeTable
}

// placeTable is one stream's places: for each transaction, where its
// places start (a loc: ops[loc] is their number, the places follow). Its
// arrays grow by chunks, never copied when they grow: a key worker's
// places only grow, and copying them (and the page faults of each new
// copy) was most of what keeping them cost.
type placeTable struct {
	// sorted holds the integer ids that came in increasing order (as a
	// producer numbering its transactions sends them), for a binary
	// search, in chunks of sortedChunk; ints the other integer ids, strs
	// the string ids (as JSON).
	sorted [][]placeEntry
	ints   map[int64]loc
	strs   map[string]loc
	// ops is the chunk of places being filled; full the earlier ones.
	ops  []int32
	full [][]int32
}

// loc is where a transaction's places start: the chunk (the number of
// full chunks before it) in the high 32 bits, the index in it in the low.
// Later places have greater locs.
type loc uint64

// The chunks' sizes: of places (1 MiB) and of sorted ids (64 KiB).
const (
	opsChunk    = 1 << 18
	sortedChunk = 1 << 12
)

// placeEntry is an integer id and where its places start.
type placeEntry struct {
	id  int64
	loc loc
}

// table returns stream's table, making it.
func (p *places) table(stream string) *placeTable {
	t := p.streams[stream]
	if t == nil {
		if p.streams == nil {
			p.streams = map[string]*placeTable{}
		}
		t = &placeTable{ints: map[int64]loc{}, strs: map[string]loc{}}
		p.streams[stream] = t
	}
	return t
}

// room starts a new chunk of places unless the current one has room for
// need more (a chunk may be larger than opsChunk, for one large piece).
func (t *placeTable) room(need int) {
	if len(t.ops)+need <= cap(t.ops) {
		return
	}
	if len(t.ops) > 0 {
		t.full = append(t.full, t.ops)
	}
	t.ops = make([]int32, 0, max(opsChunk, need))
}

// here is the loc of the next place appended to the current chunk.
func (t *placeTable) here() loc { return loc(len(t.full))<<32 | loc(len(t.ops)) }

// begin starts the places of a transaction: append them to the returned
// slice and hand it to end.
func (t *placeTable) begin() []int32 {
	t.room(64) // a piece with more places grows the chunk (copying it)
	return append(t.ops, 0)
}

// end keeps the places appended to ops since begin for the transaction
// whose id is idJSON (as its line writes it); with none, it forgets them.
func (t *placeTable) end(idJSON []byte, ops []int32) {
	start := len(t.ops)
	n := len(ops) - start - 1
	if n <= 0 {
		t.ops = ops[:start] // keeping what the slice grew by
		return
	}
	at := t.here()
	ops[start] = int32(n)
	t.ops = ops
	if id, ok := canonicalInt(idJSON); ok {
		t.putInt(id, at)
		return
	}
	t.strs[string(idJSON)] = at
}

// putInt keeps the places at for the transaction with integer id.
func (t *placeTable) putInt(id int64, at loc) {
	k := len(t.sorted)
	if k == 0 || t.sorted[k-1][len(t.sorted[k-1])-1].id < id {
		if k == 0 || len(t.sorted[k-1]) == cap(t.sorted[k-1]) {
			t.sorted = append(t.sorted, make([]placeEntry, 0, sortedChunk))
			k++
		}
		t.sorted[k-1] = append(t.sorted[k-1], placeEntry{id, at})
	} else {
		t.ints[id] = at
	}
}

// put keeps places for the transaction with id (a piece in the binary
// form, which carries them).
func (t *placeTable) put(id history.Value, places []int32) {
	t.room(1 + len(places))
	at := t.here()
	t.ops = append(append(t.ops, int32(len(places))), places...)
	if id.Kind == history.Int {
		t.putInt(id.N, at)
		return
	}
	t.strs[string(id.AppendJSON(nil))] = at
}

// findSorted returns where the places of integer id start among the ids
// that came in increasing order.
func (t *placeTable) findSorted(id int64) (loc, bool) {
	c, _ := slices.BinarySearchFunc(t.sorted, id, func(e []placeEntry, n int64) int { return cmp.Compare(e[len(e)-1].id, n) })
	if c == len(t.sorted) {
		return 0, false
	}
	i, found := slices.BinarySearchFunc(t.sorted[c], id, func(e placeEntry, n int64) int { return cmp.Compare(e.id, n) })
	if !found {
		return 0, false
	}
	return t.sorted[c][i].loc, true
}

// get returns the places kept for the transaction with id in stream, or
// nil.
func (p *places) get(stream string, id history.Value) []int32 {
	t := p.streams[stream]
	if t == nil {
		return nil
	}
	var at loc
	var ok bool
	if id.Kind == history.Int {
		// A later piece of an id replaces an earlier one, as in a map.
		at, ok = t.ints[id.N]
		if s, found := t.findSorted(id.N); found && (!ok || s > at) {
			at, ok = s, true
		}
	} else {
		at, ok = t.strs[string(id.AppendJSON(nil))]
	}
	if !ok {
		return nil
	}
	chunk := t.ops
	if c := int(at >> 32); c < len(t.full) {
		chunk = t.full[c]
	}
	i := uint32(at)
	n := uint32(chunk[i])
	return chunk[i+1 : i+1+n]
}

// canonicalInt reads an integer written as strconv writes it (no sign but
// a minus, no leading zero), which is how an integer id's JSON reads.
func canonicalInt(b []byte) (int64, bool) {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(b) {
		n = -n
	}
	return n, true
}

// lineID returns the id, as JSON, of a line that starts {"id":…,"session":.
func lineID(line []byte) ([]byte, bool) {
	const open, next = `{"id":`, `,"session":`
	if !bytes.HasPrefix(line, []byte(open)) {
		return nil, false
	}
	// An integer id ends at the first comma.
	if i := bytes.IndexByte(line[len(open):], ','); i >= 0 && bytes.HasPrefix(line[len(open)+i:], []byte(next)) {
		return line[len(open) : len(open)+i], true
	}
	i := bytes.Index(line, []byte(next))
	if i < 0 {
		return nil, false
	}
	return line[len(open):i], true
}
