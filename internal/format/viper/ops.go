package viper

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
)

// The arities of each operation: the fewest and the most elements.
var arity = map[string][2]int{
	"r":     {3, 4},
	"w":     {4, 4},
	"i":     {6, 8},
	"d":     {6, 7},
	"range": {5, 6},
}

// mop is one operation being read: its elements and where it is.
type mop struct {
	at    txnLine
	i     int
	name  string
	elems []json.RawMessage
}

func (m *mop) field(j int) string { return field(m.i, j) }

// field names element j of operation i.
func field(i, j int) string { return "value[" + strconv.Itoa(i) + "][" + strconv.Itoa(j) + "]" }

func (m *mop) errf(j int, f string, args ...any) error {
	fld := "value[" + strconv.Itoa(m.i) + "]"
	if j >= 0 {
		fld = m.field(j)
	}
	return m.at.errf(fld, f, args...)
}

// parsed is one operation as parsed, before it is applied to the
// history: what parse (which names what is malformed) and the fast path
// (fastLine) both give.
type parsed struct {
	name     string
	n        int // its number of elements
	key      history.Value
	v, readV history.Value
	succ     bool
	bound    [2]history.Value
	open     [2]bool
	rows     []prow
}

// prow is a row of a range result: its part (0 live, 1 dead) and place.
type prow struct {
	part, pos int
	id, val   history.Value
}

// parse parses operation i of a transaction line.
func parse(at txnLine, i int, raw json.RawMessage) (parsed, error) {
	m := &mop{at: at, i: i}
	var p parsed
	if err := json.Unmarshal(raw, &m.elems); err != nil || len(m.elems) == 0 {
		return p, m.errf(-1, "an operation must be a non-empty array [\"r\"|\"w\"|\"i\"|\"d\"|\"range\", …]")
	}
	if err := json.Unmarshal(m.elems[0], &m.name); err != nil {
		return p, m.errf(0, "the operation's name must be a string: \"r\", \"w\", \"i\", \"d\" or \"range\"")
	}
	p.name, p.n = m.name, len(m.elems)
	ar, ok := arity[m.name]
	if !ok {
		return p, m.errf(0, "unknown operation %q (want \"r\", \"w\", \"i\", \"d\" or \"range\")", m.name)
	}
	if n := len(m.elems); n < ar[0] || n > ar[1] {
		want := strconv.Itoa(ar[0])
		if ar[1] > ar[0] {
			want += " to " + strconv.Itoa(ar[1])
		}
		return p, m.errf(-1, "%q has %d elements, want %s: %s", m.name, n, want, shape(m.name))
	}
	var err error
	if m.name == "range" {
		return parseRange(m, p)
	}
	v, ok := scalar(m.elems[1])
	if !ok || v.IsNull() {
		return p, m.errf(1, "the key must be a 64-bit integer or a string, not %s", clip(m.elems[1]))
	}
	p.key = v
	if p.v, err = value(m, 2, m.name == "r"); err != nil {
		return p, err
	}
	switch m.name {
	case "r":
		if len(m.elems) == 4 {
			if _, err := flag(m, 3, "the is-dead flag"); err != nil {
				return p, err
			}
		}
		return p, nil
	case "w":
		p.succ, err = flag(m, 3, "the success flag")
		return p, err
	}
	if p.readV, err = value(m, 3, true); err != nil {
		return p, err
	}
	if _, err := flag(m, 4, "the is-dead flag"); err != nil {
		return p, err
	}
	if p.succ, err = flag(m, 5, "the success flag"); err != nil {
		return p, err
	}
	if m.name == "i" && len(m.elems) > 6 {
		if _, err := flag(m, 6, "the ready flag"); err != nil {
			return p, err
		}
	}
	return p, nil
}

// parseRange parses a range query's bounds and rows.
func parseRange(m *mop, p parsed) (parsed, error) {
	for b := range 2 {
		j := 1 + b
		v, ok := scalar(m.elems[j])
		switch {
		case !ok || v.IsNull():
			return p, m.errf(j, "a range bound must be a key or \"nil\" (no bound), not %s", clip(m.elems[j]))
		case v == nilBound:
			p.open[b] = true
		default:
			p.bound[b] = v
		}
	}
	for part := range 2 {
		j := 3 + part
		var rows []row
		if err := json.Unmarshal(m.elems[j], &rows); err != nil {
			return p, m.errf(j, "the %s rows must be an array of {\"id\": key, \"sk\": key, \"val\": value} objects", [2]string{"live", "dead"}[part])
		}
		for pos, rw := range rows {
			where := m.field(j) + "[" + strconv.Itoa(pos) + "]"
			if rw.ID == nil || rw.Val == nil {
				return p, m.at.errf(where, "a row must have an \"id\" and a \"val\"")
			}
			id, ok := scalar(rw.ID)
			if !ok || id.IsNull() {
				return p, m.at.errf(where+".id", "the key must be a 64-bit integer or a string, not %s", clip(rw.ID))
			}
			val, ok := scalar(rw.Val)
			if !ok || val.IsNull() {
				return p, m.at.errf(where+".val", "the value must be a 64-bit integer or a string, not %s", clip(rw.Val))
			}
			p.rows = append(p.rows, prow{part: part, pos: pos, id: id, val: val})
		}
	}
	if len(m.elems) == 6 {
		if _, err := flag(m, 5, "the final-query flag"); err != nil {
			return p, err
		}
	}
	return p, nil
}

// apply appends what operation i, parsed as p, means to ops, the
// operations so far of the transaction that will be r.h.Txns[ti].
func (r *reader) apply(at txnLine, ti int, ops []history.Op, i int, p *parsed) ([]history.Op, error) {
	if p.name == "range" {
		op, err := r.rangeOp(at, ti, len(ops), i, p)
		if err != nil {
			return ops, err
		}
		return append(ops, op), nil
	}
	if err := r.keyOfKind(at, func() string { return field(i, 1) }, p.key); err != nil {
		return ops, err
	}
	k := r.key(p.key)
	switch p.name {
	case "r":
		return append(ops, r.read(k, p.v, ti, len(ops))), nil
	case "w":
		if p.succ {
			ops = append(ops, r.write(k, p.v))
		}
		return ops, nil
	}
	// "i" and "d": read readV, then write v if it succeeded.
	ops = append(ops, r.read(k, p.readV, ti, len(ops)))
	if p.succ {
		ops = append(ops, r.write(k, p.v))
	}
	return ops, nil
}

// shape says what an operation holds.
func shape(name string) string {
	switch name {
	case "r":
		return "[\"r\", key, value, isDead]"
	case "w":
		return "[\"w\", key, value, succ]"
	case "i":
		return "[\"i\", key, value, readValue, isDead, succ] (perhaps with ready and the actual operation)"
	case "d":
		return "[\"d\", key, value, readValue, isDead, succ] (perhaps with ready)"
	}
	return "[\"range\", key1, key2, [live rows], [dead rows]] (perhaps with the final flag)"
}

func (r *reader) read(k history.KeyID, v history.Value, ti, oi int) history.Op {
	if v == zero {
		r.zeroOps = append(r.zeroOps, opRef{ti, oi})
	}
	return history.Op{Kind: history.Read, Key: k, Value: v}
}

func (r *reader) write(k history.KeyID, v history.Value) history.Op {
	r.markWritten(k, v)
	return history.Op{Kind: history.Write, Key: k, Value: v}
}

// zero is Viper's NULL_VALUE, the hash of nothing.
var zero = history.IntValue(0)

// flag reads element j, a boolean.
func flag(m *mop, j int, what string) (bool, error) {
	var b bool
	if err := json.Unmarshal(m.elems[j], &b); err != nil {
		return false, m.errf(j, "%s must be true or false, not %s", what, clip(m.elems[j]))
	}
	return b, nil
}

// clip renders a raw element for a message, cut short.
func clip(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// scalar reads raw as a JSON integer, string or null.
func scalar(raw json.RawMessage) (history.Value, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return history.NullValue, false
	}
	switch raw[0] {
	case 'n':
		return history.NullValue, string(raw) == "null"
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return history.NullValue, false
		}
		return history.StringValue(s), true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return history.NullValue, false
	}
	return history.IntValue(n), true
}

// value reads element j, a value: an integer or a string, or null where
// nullOK (a read).
func value(m *mop, j int, nullOK bool) (history.Value, error) {
	v, ok := scalar(m.elems[j])
	if !ok || v.IsNull() && !nullOK {
		return v, m.errf(j, "the value must be a 64-bit integer or a string, not %s", clip(m.elems[j]))
	}
	return v, nil
}

// keyOfKind checks that key v is of the history's kind of key.
// field names where v is, for the error.
func (r *reader) keyOfKind(at txnLine, field func() string, v history.Value) error {
	if r.keyKind == history.Null {
		r.keyKind = v.Kind
	} else if v.Kind != r.keyKind {
		return at.errf(field(), "the key %s is %s, and the history's keys before it are %ss (one kind of key per history)", v, article(v.Kind), r.keyKind)
	}
	return nil
}

func article(k history.ValueKind) string {
	if k == history.Int {
		return "an int"
	}
	return "a " + k.String()
}

// row is one row of a range result.
type row struct {
	ID  json.RawMessage `json:"id"`
	SK  json.RawMessage `json:"sk"`
	Val json.RawMessage `json:"val"`
}

// rowField names the key of a range result's row.
func rowField(i int, rw prow) string {
	return field(i, 3+rw.part) + "[" + strconv.Itoa(rw.pos) + "].id"
}

// rangeOp makes a range query a scan of k1 <= key <= k2.
func (r *reader) rangeOp(at txnLine, ti, oi, i int, p *parsed) (history.Op, error) {
	rg := &history.Range{}
	for b := range 2 {
		if !p.open[b] {
			if err := r.keyOfKind(at, func() string { return field(i, 1+b) }, p.bound[b]); err != nil {
				return history.Op{}, err
			}
		}
	}
	in := func(k history.Value) bool {
		return (p.open[0] || history.Compare(p.bound[0], k) <= 0) && (p.open[1] || history.Compare(k, p.bound[1]) <= 0)
	}
	rg.Pairs = make([]history.KV, 0, len(p.rows))
	for _, rw := range p.rows {
		if err := r.keyOfKind(at, func() string { return rowField(i, rw) }, rw.id); err != nil {
			return history.Op{}, err
		}
		if !in(rw.id) {
			return history.Op{}, at.errf(rowField(i, rw), "the key %s is outside the range [%s, %s]", rw.id, bound(p.bound[0], p.open[0]), bound(p.bound[1], p.open[1]))
		}
	}
	// In key order (and, for one key, input order), a key twice is two
	// rows side by side.
	slices.SortStableFunc(p.rows, func(a, b prow) int { return history.Compare(a.id, b.id) })
	for j, rw := range p.rows {
		if j > 0 && p.rows[j-1].id == rw.id {
			return history.Op{}, at.errf(rowField(i, rw), "the key %s is in the result twice", rw.id)
		}
		rg.Pairs = append(rg.Pairs, history.KV{Key: r.key(rw.id), Value: rw.val})
	}
	if !p.open[0] {
		rg.Lo = p.bound[0]
	} else {
		r.openLo = append(r.openLo, opRef{ti, oi})
	}
	switch {
	case p.open[1]:
		rg.HiOpen = true
	case p.bound[1].Kind == history.Int && p.bound[1].N == math.MaxInt64:
		rg.HiOpen = true
	case p.bound[1].Kind == history.Int:
		rg.Hi = history.IntValue(p.bound[1].N + 1)
	default:
		rg.Hi = history.StringValue(p.bound[1].S + "\x00")
	}
	return history.Op{Kind: history.Scan, Key: history.NoKey, Range: rg}, nil
}

func bound(v history.Value, open bool) string {
	if open {
		return "nil"
	}
	return v.String()
}

// initial reads the initial transaction's operations: one range query
// over everything, or successful writes (Viper's initial_state asserts
// both).
func (r *reader) initial(at txnLine, ps []parsed) error {
	r.init = map[history.KeyID]history.Value{}
	for i := range ps {
		p := &ps[i]
		one, err := r.apply(at, -1, nil, i, p)
		if err != nil {
			return err
		}
		m := &mop{at: at, i: i}
		switch {
		case len(one) == 1 && one[0].Kind == history.Scan && len(ps) == 1:
			if !p.open[0] || !p.open[1] {
				return m.errf(-1, "the initial transaction's range query must have no bounds (\"nil\", \"nil\"), as Viper requires")
			}
			for _, pr := range one[0].Range.Pairs {
				r.init[pr.Key] = pr.Value
				r.markWritten(pr.Key, pr.Value)
			}
		case len(one) == 1 && one[0].Kind == history.Write && p.name == "w":
			r.init[one[0].Key] = one[0].Value
		default:
			return m.errf(-1, "the initial transaction must be one range query over every key, or successful writes [\"w\", key, value, true], as Viper requires")
		}
	}
	// Pending places of the initial transaction (ti -1) are not kept: its
	// values are the initial state, not reads.
	r.zeroOps = slices.DeleteFunc(r.zeroOps, func(p opRef) bool { return p.txn < 0 })
	r.openLo = slices.DeleteFunc(r.openLo, func(p opRef) bool { return p.txn < 0 })
	return nil
}

// nilBound is the bound "nil": none.
var nilBound = history.StringValue("nil")
