package reference

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Lists. In a list-append history (only appends and list reads) the state
// of a key is a list, empty at first; an append adds its element at the
// end of the list its transaction's position gives it, and a list read
// returns the whole list. A read of a key the transaction appended to
// before returns the list it would otherwise see followed by its own
// appends of the key, in program order (internal consistency); the part
// before them is an external read like any other.
//
// A list state is held as a string Value: the concatenation of its
// elements' encodings (listEncoding), so the empty list is the empty
// string, an append is a concatenation, and two states are equal iff
// their lists are.

// listEncoding returns list's state: each element as "i<n>;", "s<len>:<s>"
// or "n;" (null), concatenated. The encoding is prefix-free per element,
// so it is injective on lists.
func listEncoding(list []history.Value) history.Value {
	var b []byte
	for _, e := range list {
		b = appendElement(b, e)
	}
	return history.StringValue(string(b))
}

func appendElement(b []byte, e history.Value) []byte {
	switch e.Kind {
	case history.Int:
		b = append(b, 'i')
		b = strconv.AppendInt(b, e.N, 10)
		return append(b, ';')
	case history.String:
		b = append(b, 's')
		b = strconv.AppendInt(b, int64(len(e.S)), 10)
		b = append(b, ':')
		return append(b, e.S...)
	}
	return append(b, 'n', ';')
}

// listOp records one append or list read of transaction t; own holds the
// elements t appended so far, per key.
func (c *checker) listOp(t *txn, op history.Op, own map[history.KeyID][]history.Value) {
	k := op.Key
	if op.Kind == history.Append {
		own[k] = append(own[k], op.Value)
		for i := range t.appends {
			if t.appends[i].key == k {
				t.appends[i].value = history.StringValue(string(appendElement([]byte(t.appends[i].value.S), op.Value)))
				return
			}
		}
		t.appends = append(t.appends, kv{key: k, value: history.StringValue(string(appendElement(nil, op.Value)))})
		return
	}
	mine, list := own[k], op.List
	if len(list) < len(mine) || !slices.Equal(list[len(list)-len(mine):], mine) {
		t.intOK = false
		return
	}
	t.ext = append(t.ext, kv{key: k, value: listEncoding(list[:len(list)-len(mine)])})
}

// listLevel checks that the oracle models lists at level id, and that the
// history's operations are all appends and list reads.
func (c *checker) listLevel(id level.ID) error {
	switch id {
	case level.ReadCommitted, level.SnapshotIsolation, level.GSI, level.Serializable, level.PlainSerializable, level.StrictSerializable:
	default:
		return fmt.Errorf("reference: lists are modelled at read committed, snapshot isolation, serializability (with session order or without) and strict serializability, not %v", id)
	}
	if c.plain {
		return fmt.Errorf("reference: a history that mixes lists with reads, writes, deletes or ranges is not modelled")
	}
	if len(c.h.Header.Initial.Values) > 0 {
		return fmt.Errorf("reference: lists start empty; initial values are not modelled")
	}
	return nil
}

// appendTo installs t's appends in state.
func appendTo(t *txn, state []history.Value) {
	for _, a := range t.appends {
		state[a.key] = history.StringValue(state[a.key].S + a.value.S)
	}
}

// writesKey reports whether t writes or appends to k.
func (t *txn) writesKey(k history.KeyID) bool {
	if _, ok := t.finalValue(k); ok {
		return true
	}
	for _, a := range t.appends {
		if a.key == k {
			return true
		}
	}
	return false
}

// readCommittedLists is Adya's PL-2 for lists. As for registers
// (readCommitted), PL-2 holds iff there is a total order of the effective
// transactions in which every external read returns a version of its key
// installed by a transaction placed earlier (or the initial, empty list):
// each key's version order is the order restricted to its appenders, and
// a version's list is the initial list followed by the appends of every
// appender up to it in that order. Unlike registers, placing a
// transaction changes what later appenders install, so orders are
// searched, not built greedily; a failed state (the placed transactions
// and every key's installed versions) is remembered.
func (c *checker) readCommittedLists(eff []int) bool {
	versions := make([][]history.Value, len(c.init))
	for k := range versions {
		versions[k] = []history.Value{c.init[k]}
	}
	installed := func(r kv) bool {
		return slices.Contains(versions[r.key], r.value)
	}
	placed := make([]bool, len(eff))
	failed := map[string]bool{}
	var search func(n int) bool
	search = func(n int) bool {
		if n == len(eff) {
			return true
		}
		var flat []history.Value
		for _, vs := range versions {
			flat = append(append(flat, vs...), history.Value{})
		}
		key := stateKey(placed, flat)
		if failed[key] {
			return false
		}
	next:
		for q, i := range eff {
			if placed[q] {
				continue
			}
			t := &c.txns[i]
			for _, r := range t.ext {
				if !installed(r) {
					continue next
				}
			}
			saved := make([]int, len(versions))
			for k, vs := range versions {
				saved[k] = len(vs)
			}
			for _, a := range t.appends {
				vs := versions[a.key]
				versions[a.key] = append(vs, history.StringValue(vs[len(vs)-1].S+a.value.S))
			}
			placed[q] = true
			if search(n + 1) {
				return true
			}
			placed[q] = false
			for k := range versions {
				versions[k] = versions[k][:saved[k]]
			}
		}
		failed[key] = true
		return false
	}
	return search(0)
}
