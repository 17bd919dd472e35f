package native

import (
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// checkUnique verifies the header's unique_values promise: no two writes of
// a value to a key (nor a write of a key's named initial value), and no
// append of an element already appended to the key.
func checkUnique(h *history.History) error {
	// history.Index is the judge of duplicate writes, but building one is
	// slow: a quick pass with compact keys looks first, and only a history
	// with a duplicate pays for the Index that names it.
	if !writesUnique(h) {
		ix := history.NewIndex(h)
		if !ix.Unique() {
			k, v, refs := ix.Duplicate()
			second := refs[1]
			first := "by the initial state"
			if refs[0].Txn != history.Init {
				first = "by transaction " + h.TxnName(refs[0].Txn) + " (line " + strconv.Itoa(h.Txns[refs[0].Txn].Line) + ")"
			}
			return &format.Error{File: h.Name, Line: h.Txns[second.Txn].Line, Field: opField(int(second.Op)),
				Msg: "unique_values is promised, but " + h.KeyName(k) + "=" + v.String() + " was already written " + first}
		}
	}
	type elem struct {
		k history.KeyID
		v history.Value
	}
	var seen map[elem]history.TxnID
	for i := range h.Txns {
		for j, op := range h.Txns[i].Ops {
			if op.Kind != history.Append {
				continue
			}
			if seen == nil {
				seen = make(map[elem]history.TxnID)
			}
			e := elem{op.Key, op.Value}
			if t, dup := seen[e]; dup {
				return &format.Error{File: h.Name, Line: h.Txns[i].Line, Field: opField(j),
					Msg: "unique_values is promised, but " + op.Value.String() + " was already appended to " + h.KeyName(op.Key) +
						" by transaction " + h.TxnName(t) + " (line " + strconv.Itoa(h.Txns[t].Line) + ")"}
			}
			seen[e] = history.TxnID(i)
		}
	}
	return nil
}

// writesUnique reports whether no two writes put the same value at the same
// key and no write puts a key's named, non-null initial value: what
// history.Index.Unique decides, faster.
func writesUnique(h *history.History) bool {
	type intWrite struct {
		k history.KeyID
		n int64
	}
	type write struct {
		k history.KeyID
		v history.Value
	}
	n := 0
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			if h.Txns[i].Ops[j].Kind == history.Write {
				n++
			}
		}
	}
	ints := make(map[intWrite]struct{}, n)
	var others map[write]struct{}
	init := h.Header.Initial.Values
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			if op.Kind != history.Write {
				continue
			}
			if v, ok := init[op.Key]; ok && v == op.Value && !v.IsNull() {
				return false
			}
			if op.Value.Kind == history.Int {
				w := intWrite{op.Key, op.Value.N}
				if _, dup := ints[w]; dup {
					return false
				}
				ints[w] = struct{}{}
				continue
			}
			if others == nil {
				others = make(map[write]struct{})
			}
			w := write{op.Key, op.Value}
			if _, dup := others[w]; dup {
				return false
			}
			others[w] = struct{}{}
		}
	}
	return true
}
