package reference

import (
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// A key's state is its value, or null when absent. With tombstone deletes
// a deleted key holds a tombstone: null to reads, but present, as
// [k, null], to scans and iterators. A tombstone is a null Value with N
// set, so it differs from absence under ==.
var tombstone = history.Value{Kind: history.Null, N: 1}

// deleted is the state a delete leaves.
func (c *checker) deleted() history.Value {
	if c.h.Header.Deletes == history.TombstoneDeletes {
		return tombstone
	}
	return history.Value{}
}

// sameRead reports whether a read that returned got agrees with state:
// null reads agree with absence and with tombstones.
func sameRead(state, got history.Value) bool {
	if got.IsNull() {
		return state.IsNull()
	}
	return state == got
}

// present reports whether a key in state v is returned by range operations.
func present(v history.Value) bool { return !v.IsNull() || v == tombstone }

// checkRange validates a range operation's result: keys known to the
// history, in increasing key order.
func (c *checker) checkRange(r *history.Range) error {
	if r == nil {
		return fmt.Errorf("range operation without bounds")
	}
	for i, p := range r.Pairs {
		if p.Key < 0 || int(p.Key) >= len(c.h.Keys) {
			return fmt.Errorf("range result key id %d out of range", p.Key)
		}
		if i > 0 && history.Compare(c.h.Keys[r.Pairs[i-1].Key], c.h.Keys[p.Key]) >= 0 {
			return fmt.Errorf("range result not in increasing key order")
		}
	}
	return nil
}

// observeRange records what a scan or iterator of t observed: for every
// key of its range up to what it claims (an iterator: its last returned
// key), the value returned, a tombstone ([k, null]) or absence. A key t
// wrote before is checked against t's own last write (intOK); the others
// are external observations, exact ones (absence is not a tombstone).
// own maps a key to its index in t.final.
func (c *checker) observeRange(t *txn, o history.Op, pos int, own map[history.KeyID]int) {
	op, r := pos, o.Range
	if o.Kind == history.Iter && len(r.Pairs) == 0 {
		return // an iterator never advanced claims nothing
	}
	got := map[history.KeyID]history.Value{}
	for _, p := range r.Pairs {
		got[p.Key] = p.Value
		if p.Value.IsNull() {
			got[p.Key] = tombstone
		}
	}
	for _, k := range c.keysInOrder() {
		key := c.h.Keys[k]
		if history.Compare(key, r.Lo) < 0 || (!r.HiOpen && history.Compare(key, r.Hi) >= 0) {
			continue
		}
		if o.Kind == history.Iter && history.Compare(key, c.h.Keys[r.Pairs[len(r.Pairs)-1].Key]) > 0 {
			break
		}
		want, returned := got[k]
		if f, ok := own[k]; ok {
			state := t.final[f].value
			if returned && state != want || !returned && present(state) {
				t.intOK = false
			}
			continue
		}
		t.ext = append(t.ext, kv{key: k, value: want, exact: true, op: op}) // absence: the zero Value
	}
}

// keysInOrder returns every key of the history in key order.
func (c *checker) keysInOrder() []history.KeyID {
	if c.sorted == nil {
		c.sorted = make([]history.KeyID, len(c.h.Keys))
		for k := range c.sorted {
			c.sorted[k] = history.KeyID(k)
		}
		slices.SortFunc(c.sorted, func(a, b history.KeyID) int { return history.Compare(c.h.Keys[a], c.h.Keys[b]) })
	}
	return c.sorted
}

// matches reports whether transaction i, run on top of state (its
// snapshot, or the state before it in a serial order), sees what it saw.
func (c *checker) matches(i int, state []history.Value) bool {
	if !c.general {
		return readsMatch(&c.txns[i], state)
	}
	return c.run(i, state)
}

// run executes transaction i's operations on a private copy of state —
// its own writes and deletes visible to its later operations — and reports
// whether every read, scan and iterator returned what that state holds.
// A scan returns every present key of its range; an iterator the first
// len(result) of them.
func (c *checker) run(i int, state []history.Value) bool {
	own := map[history.KeyID]history.Value{}
	at := func(k history.KeyID) history.Value {
		if v, ok := own[k]; ok {
			return v
		}
		return state[k]
	}
	for _, op := range c.h.Txns[i].Ops {
		switch op.Kind {
		case history.Write:
			own[op.Key] = op.Value
		case history.Delete:
			own[op.Key] = c.deleted()
		case history.Read:
			if !sameRead(at(op.Key), op.Value) {
				return false
			}
		case history.Scan, history.Iter:
			r := op.Range
			n := 0
			for _, k := range c.keysInOrder() {
				key := c.h.Keys[k]
				if history.Compare(key, r.Lo) < 0 || (!r.HiOpen && history.Compare(key, r.Hi) >= 0) {
					continue
				}
				v := at(k)
				if !present(v) {
					continue
				}
				if n == len(r.Pairs) {
					if op.Kind == history.Iter {
						break // nothing is claimed after an iterator's last key
					}
					return false // a present key the scan did not return
				}
				if p := r.Pairs[n]; p.Key != k || !sameRead(v, p.Value) {
					return false
				}
				n++
			}
			if n < len(r.Pairs) {
				return false // a key returned that the state does not hold
			}
		}
	}
	return true
}
