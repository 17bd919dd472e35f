package native

import (
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

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
	if intsUnique(h, history.Append) {
		return nil
	}
	// Some element is not an integer, or one repeats: the map below
	// names the first repeat in file order.
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

// parallelUnique is how many transactions make writesUnique split its work
// across the processors.
const parallelUnique = 1 << 16

// writesUnique reports whether no two writes put the same value at the same
// key and no write puts a key's named, non-null initial value: what
// history.Index.Unique decides, faster. Integer values are grouped by key
// (a counting sort) and each group sorted, on every processor for a large
// history whose values are all integers; other values go to a map.
func writesUnique(h *history.History) bool {
	if len(h.Txns) < parallelUnique || min(runtime.GOMAXPROCS(0), 8) < 2 {
		return writesUniqueOf(h)
	}
	return intsUnique(h, history.Write) || writesUniqueOf(h)
}

// intsUnique reports whether the operations of kind (writes or appends)
// put integers only, no two the same at the same key, and, for writes, no
// key's named, non-null initial value: grouped by key (a counting sort)
// and each group sorted, on every processor. False says only that the
// question needs the slower look: some value is not an integer, or one
// repeats.
func intsUnique(h *history.History, kind history.OpKind) bool {
	parts := max(min(runtime.GOMAXPROCS(0), 8), 1)
	if len(h.Txns) < parallelUnique {
		parts = 1
	}
	init := h.Header.Initial.Values
	if kind != history.Write {
		init = nil
	}
	nk := len(h.Keys)
	// counts[p][k] counts part p's writes to key k.
	counts := make([][]int32, parts)
	var other, dup atomic.Bool
	parallel(parts, func(p int) {
		c := make([]int32, nk)
		counts[p] = c
		for i := len(h.Txns) * p / parts; i < len(h.Txns)*(p+1)/parts; i++ {
			for j := range h.Txns[i].Ops {
				op := &h.Txns[i].Ops[j]
				if op.Kind != kind || op.Key < 0 || int(op.Key) >= nk {
					continue
				}
				if init != nil {
					if v, ok := init[op.Key]; ok && v == op.Value && !v.IsNull() {
						dup.Store(true)
						return
					}
				}
				if op.Value.Kind != history.Int {
					other.Store(true)
					return
				}
				c[op.Key]++
			}
		}
	})
	if dup.Load() || other.Load() {
		return false
	}
	// Part p's values of key k go to vals[at[p][k]:], after those of the
	// earlier keys and of the earlier parts.
	start := make([]int, nk+1)
	for k := range nk {
		start[k+1] = start[k]
		for p := range parts {
			n := int(counts[p][k])
			counts[p][k] = int32(start[k+1])
			start[k+1] += n
		}
	}
	vals := make([]int64, start[nk])
	parallel(parts, func(p int) {
		at := counts[p]
		for i := len(h.Txns) * p / parts; i < len(h.Txns)*(p+1)/parts; i++ {
			for j := range h.Txns[i].Ops {
				op := &h.Txns[i].Ops[j]
				if op.Kind == kind && op.Key >= 0 && int(op.Key) < nk {
					vals[at[op.Key]] = op.Value.N
					at[op.Key]++
				}
			}
		}
	})
	parallel(parts, func(p int) {
		for k := nk * p / parts; k < nk*(p+1)/parts; k++ {
			g := vals[start[k]:start[k+1]]
			slices.Sort(g)
			for j := 1; j < len(g); j++ {
				if g[j] == g[j-1] {
					dup.Store(true)
					return
				}
			}
		}
	})
	return !dup.Load()
}

// parallel runs f(0), …, f(parts-1) on as many goroutines.
func parallel(parts int, f func(p int)) {
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { f(p) })
	}
	wg.Wait()
}

// writesUniqueOf is writesUnique on one processor.
func writesUniqueOf(h *history.History) bool {
	count := make([]int32, len(h.Keys)+1)
	type write struct {
		k history.KeyID
		v history.Value
	}
	var others map[write]struct{}
	init := h.Header.Initial.Values
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			if op.Kind != history.Write || op.Key < 0 || int(op.Key) >= len(h.Keys) {
				continue
			}
			if init != nil {
				if v, ok := init[op.Key]; ok && v == op.Value && !v.IsNull() {
					return false
				}
			}
			if op.Value.Kind == history.Int {
				count[op.Key+1]++
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
	for k := 1; k < len(count); k++ {
		count[k] += count[k-1]
	}
	vals := make([]int64, count[len(count)-1])
	next := count[: len(count)-1 : len(count)-1]
	next = append([]int32(nil), next...)
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			if op.Kind == history.Write && op.Value.Kind == history.Int && op.Key >= 0 && int(op.Key) < len(h.Keys) {
				vals[next[op.Key]] = op.Value.N
				next[op.Key]++
			}
		}
	}
	for k := 0; k+1 < len(count); k++ {
		g := vals[count[k]:count[k+1]]
		slices.Sort(g)
		for j := 1; j < len(g); j++ {
			if g[j] == g[j-1] {
				return false
			}
		}
	}
	return true
}
