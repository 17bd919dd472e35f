package listappend

import "github.com/isoscope/isoscope/internal/history"

// appendIndex finds the append of each element of each key. Integer
// elements, the usual ones, are held under a 16-byte key (the key id and
// the integer) rather than the 40 bytes of a key id and a whole value: at
// millions of appends the index is a large part of the check's memory.
type appendIndex struct {
	ints   map[intElem]appendRef
	others map[elemKey]appendRef
}

// intElem is an integer element of a key.
type intElem struct {
	k history.KeyID
	n int64
}

// newAppendIndex returns an empty index sized for about n appends.
func newAppendIndex(n int) appendIndex {
	return appendIndex{ints: make(map[intElem]appendRef, n), others: map[elemKey]appendRef{}}
}

// get returns the append of element e of key k.
func (x appendIndex) get(k history.KeyID, e history.Value) (appendRef, bool) {
	if e.Kind == history.Int {
		r, ok := x.ints[intElem{k, e.N}]
		return r, ok
	}
	r, ok := x.others[elemKey{k, e}]
	return r, ok
}

// put records r as the append of element e of key k.
func (x appendIndex) put(k history.KeyID, e history.Value, r appendRef) {
	if e.Kind == history.Int {
		x.ints[intElem{k, e.N}] = r
		return
	}
	x.others[elemKey{k, e}] = r
}

// len returns how many elements the index holds.
func (x appendIndex) len() int { return len(x.ints) + len(x.others) }

// hasNull reports whether some element is null.
func (x appendIndex) hasNull() bool {
	for ek := range x.others {
		if ek.e.IsNull() {
			return true
		}
	}
	return false
}

// at returns the append of element e of key k (the zero appendRef when
// there is none).
func (x appendIndex) at(k history.KeyID, e history.Value) appendRef {
	r, _ := x.get(k, e)
	return r
}
