package native

import "github.com/isoscope/isoscope/internal/history"

// The format reads a list as ["r", k, [e1, …]], "null or [] if
// absent/empty", and a register as ["r", k, v], null if absent: a read of
// null says by itself only that k was absent, and the rest of the history
// tells which kind of key k is. In a history with appends or list reads,
// a null read of a key that no operation uses as a register (a write, a
// delete, a read of a value, a scan's or iterator's result, an initial
// value in the header) is a read of the empty list: the key is a list,
// or a key of no kind that nothing ever wrote, whose reads of nothing
// mean the same either way. Read resolves null reads so
// (resolveListNulls); the Reader's Next, which cannot see the
// transactions to come, hands them out as they are written (a plain read
// of null), for the online checker, which types keys as they arrive.
//
// A key used as a register and as a list keeps its null reads as they
// are: such a key is bad input for every checker, which says so.

// Kinds of key, as resolveListNulls sees them.
const (
	listKey = 1 << iota
	registerKey
)

// resolveListNulls turns the null reads of h's keys that are not
// registers into reads of the empty list. It costs nothing when the
// history has no appends or list reads (lists false: the parsers set it
// when they meet one).
func resolveListNulls(h *history.History, lists bool) {
	if !lists {
		return
	}
	kinds := make([]uint8, len(h.Keys))
	for k := range h.Header.Initial.Values {
		kinds[k] |= registerKey
	}
	nulls := false
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			switch op.Kind {
			case history.Append, history.ReadList:
				kinds[op.Key] |= listKey
			case history.Read:
				if op.Value.IsNull() {
					nulls = true
				} else {
					kinds[op.Key] |= registerKey
				}
			case history.Write, history.Delete:
				kinds[op.Key] |= registerKey
			case history.Scan, history.Iter:
				for _, p := range op.Range.Pairs {
					kinds[p.Key] |= registerKey
				}
			}
		}
	}
	if !nulls {
		return
	}
	for i := range h.Txns {
		ops := h.Txns[i].Ops
		for j := range ops {
			if op := &ops[j]; op.Kind == history.Read && op.Value.IsNull() && kinds[op.Key]&registerKey == 0 {
				op.Kind, op.List = history.ReadList, nil
			}
		}
	}
}
