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

// listOp records one append or list read of transaction t, its operation
// at position pos; own holds the elements t appended so far, per key.
func (c *checker) listOp(t *txn, op history.Op, pos int, own map[history.KeyID][]history.Value) {
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
	t.ext = append(t.ext, kv{key: k, value: listEncoding(list[:len(list)-len(mine)]), op: pos})
	t.extLists = append(t.extLists, list[:len(list)-len(mine)])
}

// listLevel checks that the oracle models lists at level id, and that the
// history's operations are all appends and list reads.
func (c *checker) listLevel(id level.ID) error {
	switch id {
	case level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation, level.GSI, level.Serializable, level.PlainSerializable,
		level.StrictSerializable, level.RCSession, level.ReadAtomic, level.Causal, level.Prefix,
		level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead:
	default:
		return fmt.Errorf("reference: lists are not modelled at %v", id)
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

// axiomaticLists decides an axiomatic level (see axiomatic) for lists, for
// one choice of effective transactions, with the commit order co as the
// order in which appends are applied: for every strict total order co of
// the effective transactions that extends session order, each key's
// versions are the initial empty list and, after each of its appenders in
// co order, the list so far followed by that appender's elements. Every
// external list read must return exactly one of those versions — it reads
// from (wr) the initial state or the appender that installed it, which co
// puts before the reader — and the axiom must hold of every read: every
// other appender t2 of the key whose premise holds of t2 and the reader
// precedes the read's source in co (and the source is not the initial
// state). The level holds iff some order passes. Unlike axiomatic, which
// assigns each read a writer first, here the order decides the versions,
// so every order is tried (at most MaxTxns transactions: 9! orders).
func (c *checker) axiomaticLists(ax level.Axiom, eff []int) (bool, error) {
	n := len(eff)
	if ok, err := c.enumerable(eff); !ok || err != nil {
		return false, err
	}
	type read struct {
		reader, key, op int
		value           string
	}
	var reads []read
	appends := make([]map[int]string, n) // appends[q][key]: the elements q appends
	for q, i := range eff {
		appends[q] = map[int]string{}
		for _, a := range c.txns[i].appends {
			appends[q][int(a.key)] = a.value.S
		}
		for _, r := range c.txns[i].ext {
			reads = append(reads, read{reader: q, key: int(r.key), op: r.op, value: r.value.S})
		}
	}
	var so [MaxTxns]uint32
	for p, i := range eff {
		for q, j := range eff {
			if p < q && c.txns[i].session == c.txns[j].session {
				so[p] |= 1 << q
			}
		}
	}
	order := make([]int, 0, n)
	pos := make([]int, n)
	source := make([]int, len(reads))
	// passes checks the complete order.
	passes := func() bool {
		for q, p := range order {
			pos[p] = q
		}
		// Every version of every key, by the appender that installed it.
		version := make([]map[int]string, n)
		state := map[int]string{}
		for _, p := range order {
			version[p] = map[int]string{}
			for k, els := range appends[p] {
				state[k] += els
				version[p][k] = state[k]
			}
		}
		var wr [MaxTxns]uint32
		for x, r := range reads {
			source[x] = -2
			if r.value == "" {
				source[x] = -1
			}
			for p := range n {
				if v, ok := version[p][r.key]; ok && v == r.value && p != r.reader {
					source[x] = p
				}
			}
			switch {
			case source[x] == -2:
				return false // no version of the key is what it read
			case source[x] >= 0:
				if pos[source[x]] > pos[r.reader] {
					return false // co extends wr
				}
				wr[source[x]] |= 1 << r.reader
			}
		}
		var step [MaxTxns]uint32
		for p := range n {
			step[p] = so[p] | wr[p]
		}
		hb := closure(step[:n])
		premise := func(t2 int, x int) bool {
			t3 := reads[x].reader
			switch ax {
			case level.AxiomRC:
				for y, r := range reads {
					if r.reader == t3 && r.op < reads[x].op && source[y] == t2 {
						return true
					}
				}
				return false
			case level.AxiomRA:
				return step[t2]&(1<<t3) != 0
			case level.AxiomCC:
				return hb[t2]&(1<<t3) != 0
			}
			for t4 := range n { // AxiomPrefix
				if (t4 == t2 || pos[t2] < pos[t4]) && step[t4]&(1<<t3) != 0 {
					return true
				}
			}
			return false
		}
		for x, r := range reads {
			t1 := source[x]
			for t2 := range n {
				if _, writes := appends[t2][r.key]; t2 == t1 || !writes || !premise(t2, x) {
					continue
				}
				if t1 < 0 || pos[t2] > pos[t1] {
					return false
				}
			}
		}
		return true
	}
	var search func(placed uint32) bool
	search = func(placed uint32) bool {
		if len(order) == n {
			return passes()
		}
		for q := range n {
			if placed&(1<<q) != 0 {
				continue
			}
			ready := true
			for p := range n {
				if so[p]&(1<<q) != 0 && placed&(1<<p) == 0 {
					ready = false
				}
			}
			if !ready {
				continue
			}
			order = append(order, q)
			ok := search(placed | 1<<q)
			order = order[:len(order)-1]
			if ok {
				return true
			}
		}
		return false
	}
	return search(0), nil
}

// readUncommittedLists is Adya's PL-1 for lists, beyond Int: each key's
// list grows by appends only, so there is one sequence of all the
// elements appended to the key (by transactions of any status, aborted
// and intermediate appends included) of which every external list read
// of an effective transaction is a prefix, holding only elements other
// transactions appended; and the version order it gives the effective
// transactions' appends — the sequence without the other elements — has
// no write cycle (G0): some total order of the effective transactions
// puts, along each key's sequence, the appenders of its effective
// elements in non-decreasing position. Every order of the effective
// transactions is tried. Given one, a key's sequence starts with its
// longest external read (every read is a prefix of the sequence), and
// the elements no read holds may follow in any order: putting the
// effective ones by their appender's position (program order within one
// transaction) and the others last is the best choice, so only that
// sequence is checked.
func (c *checker) readUncommittedLists(eff []int) bool {
	h := c.h
	type elem struct {
		t   int // the appender, an index into h.Txns
		seq int // its position among the transaction's appends
	}
	appended := map[history.KeyID]map[history.Value]elem{}
	for i := range h.Txns {
		for j, op := range h.Txns[i].Ops {
			if op.Kind == history.Append {
				if appended[op.Key] == nil {
					appended[op.Key] = map[history.Value]elem{}
				}
				appended[op.Key][op.Value] = elem{i, j}
			}
		}
	}
	// The reads' own conditions, and each key's longest read.
	longest := map[history.KeyID][]history.Value{}
	for _, i := range eff {
		for x, r := range c.txns[i].ext {
			list := c.txns[i].extLists[x]
			seen := map[history.Value]bool{}
			for _, e := range list {
				w, ok := appended[r.key][e]
				if !ok || w.t == i || seen[e] {
					return false // thin air, the reader's own later append, or a duplicate
				}
				seen[e] = true
			}
			if len(list) > len(longest[r.key]) {
				longest[r.key] = list
			}
		}
	}
	isEff := make([]bool, len(h.Txns))
	for _, i := range eff {
		isEff[i] = true
	}
	pos := make([]int, len(h.Txns))
	order := make([]int, 0, len(eff))
	used := make([]bool, len(eff))
	passes := func() bool {
		for p, i := range order {
			pos[i] = p
		}
		for k, els := range appended {
			seq := slices.Clone(longest[k])
			in := map[history.Value]bool{}
			for _, e := range seq {
				in[e] = true
			}
			var rest, others []history.Value
			for e, w := range els {
				switch {
				case in[e]:
				case isEff[w.t]:
					rest = append(rest, e)
				default:
					others = append(others, e)
				}
			}
			slices.SortFunc(rest, func(a, b history.Value) int {
				wa, wb := els[a], els[b]
				if pos[wa.t] != pos[wb.t] {
					return pos[wa.t] - pos[wb.t]
				}
				return wa.seq - wb.seq
			})
			seq = append(append(seq, rest...), others...)
			for _, i := range eff {
				for x, r := range c.txns[i].ext {
					if r.key == k && !slices.Equal(seq[:min(len(seq), len(c.txns[i].extLists[x]))], c.txns[i].extLists[x]) {
						return false
					}
				}
			}
			last := -1
			for _, e := range seq {
				if w := els[e]; isEff[w.t] {
					if pos[w.t] < last {
						return false // a write cycle
					}
					last = pos[w.t]
				}
			}
		}
		return true
	}
	var search func() bool
	search = func() bool {
		if len(order) == len(eff) {
			return passes()
		}
		for q, i := range eff {
			if used[q] {
				continue
			}
			used[q], order = true, append(order, i)
			ok := search()
			used[q], order = false, order[:len(order)-1]
			if ok {
				return true
			}
		}
		return false
	}
	return search()
}
