package aion

import (
	"github.com/isoscope/isoscope/internal/history"
)

// The writes remembered by (key, value): those of the transactions set
// aside (aborted, or of unknown outcome), so that a read no committed
// writer explains is named, and, in the same bounded map (recent),
// committed transactions' intermediate writes.

// maxAside bounds the set-aside writes a checker remembers.
const maxAside = 1 << 20

// asideKey is a key (the checker's id) and a value written to it.
type asideKey struct {
	key int32
	val history.Value
}

// asideWrite is the transaction set aside that wrote an asideKey.
type asideWrite struct {
	id     history.Value
	status history.Status
	op     int32
}

// setAside remembers the writes of t, a transaction that did not commit
// (or whose outcome is unknown), of history src.
func (c *Checker) setAside(src *history.History, t *history.Txn) {
	for j, o := range t.Ops {
		if !o.Kind.IsWrite() || o.Key < 0 || int(o.Key) >= len(src.Keys) {
			continue
		}
		v := o.Value
		if o.Kind == history.Delete {
			v = history.NullValue
		}
		c.mem += c.aside.add(asideKey{c.srcKey(src, o.Key), v}, asideWrite{t.ID, t.Status, int32(j)})
	}
}

// recent maps (key, value) pairs to what was remembered of their first
// writer, for the last maxAside pairs: older ones are forgotten.
type recent[V any] struct {
	m     map[asideKey]V
	order []asideKey
	head  int
}

// get returns what is remembered of k.
func (r *recent[V]) get(k asideKey) (V, bool) {
	v, ok := r.m[k]
	return v, ok
}

// recentBytes estimates a pair's memory in a recent map.
const recentBytes = 112

// add remembers v for k unless k is remembered, forgetting the oldest
// pair past maxAside, and returns the bytes the map grew by (estimated).
func (r *recent[V]) add(k asideKey, v V) int64 {
	if _, ok := r.m[k]; ok {
		return 0
	}
	if r.m == nil {
		r.m = map[asideKey]V{}
	}
	r.m[k] = v
	r.order = append(r.order, k)
	if len(r.order)-r.head > maxAside {
		delete(r.m, r.order[r.head])
		r.head++
		if r.head > maxAside {
			r.order = append(r.order[:0], r.order[r.head:]...)
			r.head = 0
		}
		return 0
	}
	return recentBytes
}
