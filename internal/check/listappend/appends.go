package listappend

import "github.com/isoscope/isoscope/internal/history"

// appendIndex finds the append of each element of each key. A key whose
// elements are integers spread over a range at most about twice their
// count (Elle's: 1, 2, 3, … per key) keeps them in a flat table indexed
// by the element, 12 bytes an append and no hashing; other elements (and
// every element of a key whose integers are sparse) go to a map under
// the key id and the whole value. At millions of appends the index is a
// large part of the check's memory and, as a map, of its time.
type appendIndex struct {
	keys   []denseKey
	slots  []appendSlot
	others map[elemKey]appendRef
	n      int
}

// denseKey is the flat table of one key's integer elements: element
// base+i is at slots[off+i], for i < n.
type denseKey struct {
	base int64
	off  int64
	n    int32
}

// appendSlot is one slot of a flat table: an append, when ok; seen is
// scratch for collect (an element of the order it is looking at).
type appendSlot struct {
	r    appendRef
	ok   bool
	seen bool
}

// denseSlack is how many slots beyond twice its appends a key's table
// may have: a key of a few appends spread over a short range stays flat.
const denseSlack = 16

// newAppendIndex returns an empty index for the appends of h: a flat
// table for each key whose integer elements are dense enough (and, when
// flat is false, none: every element in the map, as the tests compare).
func newAppendIndex(h *history.History, flat bool) appendIndex {
	nk := len(h.Keys)
	lo := make([]int64, nk)
	hi := make([]int64, nk)
	count := make([]int32, nk)
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			if op.Kind != history.Append || op.Value.Kind != history.Int || op.Key < 0 || int(op.Key) >= nk {
				continue
			}
			k, e := op.Key, op.Value.N
			if count[k] == 0 || e < lo[k] {
				lo[k] = e
			}
			if count[k] == 0 || e > hi[k] {
				hi[k] = e
			}
			count[k]++
		}
	}
	x := appendIndex{keys: make([]denseKey, nk), others: map[elemKey]appendRef{}}
	var total int64
	for k := range nk {
		if count[k] == 0 || !flat {
			continue
		}
		// The span, computed so that it cannot overflow: a sparse key
		// (span above twice the count plus the slack) keeps a map.
		if span := uint64(hi[k]) - uint64(lo[k]) + 1; span != 0 && span <= 2*uint64(count[k])+denseSlack {
			x.keys[k] = denseKey{base: lo[k], off: total, n: int32(span)}
			total += int64(span)
		}
	}
	x.slots = make([]appendSlot, total)
	return x
}

// slot returns the flat slot of element e of key k, or nil when the
// element belongs in the map.
func (x *appendIndex) slot(k history.KeyID, e history.Value) *appendSlot {
	if e.Kind != history.Int || k < 0 || int(k) >= len(x.keys) {
		return nil
	}
	d := &x.keys[k]
	if d.n == 0 {
		return nil
	}
	// Unsigned, so that an element below base is past the end too.
	if i := uint64(e.N) - uint64(d.base); i < uint64(d.n) {
		return &x.slots[d.off+int64(i)]
	}
	return nil
}

// get returns the append of element e of key k.
func (x *appendIndex) get(k history.KeyID, e history.Value) (appendRef, bool) {
	if s := x.slot(k, e); s != nil {
		return s.r, s.ok
	}
	if len(x.others) == 0 {
		return appendRef{}, false
	}
	r, ok := x.others[elemKey{k, e}]
	return r, ok
}

// put records r as the append of element e of key k.
func (x *appendIndex) put(k history.KeyID, e history.Value, r appendRef) {
	if s := x.slot(k, e); s != nil {
		if !s.ok {
			x.n++
		}
		*s = appendSlot{r: r, ok: true}
		return
	}
	if _, in := x.others[elemKey{k, e}]; !in {
		x.n++
	}
	x.others[elemKey{k, e}] = r
}

// len returns how many elements the index holds.
func (x *appendIndex) len() int { return x.n }

// hasNull reports whether some element is null.
func (x *appendIndex) hasNull() bool {
	for ek := range x.others {
		if ek.e.IsNull() {
			return true
		}
	}
	return false
}

// at returns the append of element e of key k (the zero appendRef when
// there is none).
func (x *appendIndex) at(k history.KeyID, e history.Value) appendRef {
	r, _ := x.get(k, e)
	return r
}
