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
// places start in ops (ops[start] is their number, the places follow).
type placeTable struct {
	// sorted holds the integer ids that came in increasing order (as a
	// producer numbering its transactions sends them), for a binary
	// search; ints the other integer ids, strs the string ids (as JSON).
	sorted []placeEntry
	ints   map[int64]uint32
	strs   map[string]uint32
	ops    []int32
}

// placeEntry is an integer id and where its places start.
type placeEntry struct {
	id    int64
	start uint32
}

// table returns stream's table, making it.
func (p *places) table(stream string) *placeTable {
	t := p.streams[stream]
	if t == nil {
		if p.streams == nil {
			p.streams = map[string]*placeTable{}
		}
		t = &placeTable{ints: map[int64]uint32{}, strs: map[string]uint32{}}
		p.streams[stream] = t
	}
	return t
}

// begin starts the places of a transaction: append them to the returned
// slice and hand it to end.
func (t *placeTable) begin() []int32 { return append(t.ops, 0) }

// end keeps the places appended to ops since begin for the transaction
// whose id is idJSON (as its line writes it); with none, it forgets them.
func (t *placeTable) end(idJSON []byte, ops []int32) {
	start := len(t.ops)
	n := len(ops) - start - 1
	if n <= 0 {
		t.ops = ops[:start] // keeping what the slice grew by
		return
	}
	ops[start] = int32(n)
	t.ops = ops
	if id, ok := canonicalInt(idJSON); ok {
		t.putInt(id, start)
		return
	}
	t.strs[string(idJSON)] = uint32(start)
}

// putInt keeps the places at start for the transaction with integer id.
func (t *placeTable) putInt(id int64, start int) {
	if k := len(t.sorted); k == 0 || t.sorted[k-1].id < id {
		t.sorted = append(t.sorted, placeEntry{id, uint32(start)})
	} else {
		t.ints[id] = uint32(start)
	}
}

// put keeps places for the transaction with id (a piece in the binary
// form, which carries them).
func (t *placeTable) put(id history.Value, places []int32) {
	start := len(t.ops)
	t.ops = append(append(t.ops, int32(len(places))), places...)
	if id.Kind == history.Int {
		t.putInt(id.N, start)
		return
	}
	t.strs[string(id.AppendJSON(nil))] = uint32(start)
}

// get returns the places kept for the transaction with id in stream, or
// nil.
func (p *places) get(stream string, id history.Value) []int32 {
	t := p.streams[stream]
	if t == nil {
		return nil
	}
	start, ok := uint32(0), false
	if id.Kind == history.Int {
		// A later piece of an id replaces an earlier one, as in a map.
		start, ok = t.ints[id.N]
		if i, found := slices.BinarySearchFunc(t.sorted, id.N, func(e placeEntry, n int64) int { return cmp.Compare(e.id, n) }); found &&
			(!ok || t.sorted[i].start > start) {
			start, ok = t.sorted[i].start, true
		}
	} else {
		start, ok = t.strs[string(id.AppendJSON(nil))]
	}
	if !ok {
		return nil
	}
	n := t.ops[start]
	return t.ops[start+1 : start+1+uint32(n)]
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
