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

func (m *mop) field(j int) string { return "value[" + strconv.Itoa(m.i) + "][" + strconv.Itoa(j) + "]" }

func (m *mop) errf(j int, f string, args ...any) error {
	field := "value[" + strconv.Itoa(m.i) + "]"
	if j >= 0 {
		field = m.field(j)
	}
	return m.at.errf(field, f, args...)
}

// op reads operation i of the transaction that will be r.h.Txns[ti] and
// appends what it means to ops.
func (r *reader) op(at txnLine, ti int, ops []history.Op, i int, raw json.RawMessage) ([]history.Op, error) {
	m := &mop{at: at, i: i}
	if err := json.Unmarshal(raw, &m.elems); err != nil || len(m.elems) == 0 {
		return ops, m.errf(-1, "an operation must be a non-empty array [\"r\"|\"w\"|\"i\"|\"d\"|\"range\", …]")
	}
	if err := json.Unmarshal(m.elems[0], &m.name); err != nil {
		return ops, m.errf(0, "the operation's name must be a string: \"r\", \"w\", \"i\", \"d\" or \"range\"")
	}
	ar, ok := arity[m.name]
	if !ok {
		return ops, m.errf(0, "unknown operation %q (want \"r\", \"w\", \"i\", \"d\" or \"range\")", m.name)
	}
	if n := len(m.elems); n < ar[0] || n > ar[1] {
		want := strconv.Itoa(ar[0])
		if ar[1] > ar[0] {
			want += " to " + strconv.Itoa(ar[1])
		}
		return ops, m.errf(-1, "%q has %d elements, want %s: %s", m.name, n, want, shape(m.name))
	}
	if m.name == "range" {
		op, err := r.rangeOp(m, ti, len(ops))
		if err != nil {
			return ops, err
		}
		return append(ops, op), nil
	}
	k, err := r.key(m, 1)
	if err != nil {
		return ops, err
	}
	v, err := value(m, 2, m.name == "r")
	if err != nil {
		return ops, err
	}
	switch m.name {
	case "r":
		if len(m.elems) == 4 {
			if _, err := flag(m, 3, "the is-dead flag"); err != nil {
				return ops, err
			}
		}
		return append(ops, r.read(k, v, ti, len(ops))), nil
	case "w":
		succ, err := flag(m, 3, "the success flag")
		if err != nil {
			return ops, err
		}
		if succ {
			ops = append(ops, r.write(k, v))
		}
		return ops, nil
	}
	// "i" and "d": read readV, then write v if it succeeded.
	readV, err := value(m, 3, true)
	if err != nil {
		return ops, err
	}
	if _, err := flag(m, 4, "the is-dead flag"); err != nil {
		return ops, err
	}
	succ, err := flag(m, 5, "the success flag")
	if err != nil {
		return ops, err
	}
	if m.name == "i" && len(m.elems) > 6 {
		if _, err := flag(m, 6, "the ready flag"); err != nil {
			return ops, err
		}
	}
	ops = append(ops, r.read(k, readV, ti, len(ops)))
	if succ {
		ops = append(ops, r.write(k, v))
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
	r.written[kv{k, v}] = true
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

// key reads element j, a key.
func (r *reader) key(m *mop, j int) (history.KeyID, error) {
	v, ok := scalar(m.elems[j])
	if !ok || v.IsNull() {
		return 0, m.errf(j, "the key must be a 64-bit integer or a string, not %s", clip(m.elems[j]))
	}
	if err := r.keyOfKind(m.at, m.field(j), v); err != nil {
		return 0, err
	}
	return r.h.Key(v), nil
}

// keyOfKind checks that key v is of the history's kind of key.
func (r *reader) keyOfKind(at txnLine, field string, v history.Value) error {
	if r.keyKind == history.Null {
		r.keyKind = v.Kind
	} else if v.Kind != r.keyKind {
		return at.errf(field, "the key %s is %s, and the history's keys before it are %ss (one kind of key per history)", v, article(v.Kind), r.keyKind)
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

// rangeOp reads a range query: a scan of k1 <= key <= k2.
func (r *reader) rangeOp(m *mop, ti, oi int) (history.Op, error) {
	rg := &history.Range{}
	var bounds [2]history.Value
	var open [2]bool
	for b := range 2 {
		j := 1 + b
		v, ok := scalar(m.elems[j])
		switch {
		case !ok || v.IsNull():
			return history.Op{}, m.errf(j, "a range bound must be a key or \"nil\" (no bound), not %s", clip(m.elems[j]))
		case v == nilBound:
			open[b] = true
		default:
			if err := r.keyOfKind(m.at, m.field(j), v); err != nil {
				return history.Op{}, err
			}
			bounds[b] = v
		}
	}
	if len(m.elems) == 6 {
		if _, err := flag(m, 5, "the final-query flag"); err != nil {
			return history.Op{}, err
		}
	}
	in := func(k history.Value) bool {
		return (open[0] || history.Compare(bounds[0], k) <= 0) && (open[1] || history.Compare(k, bounds[1]) <= 0)
	}
	seen := map[history.KeyID]bool{}
	for part := range 2 {
		j := 3 + part
		var rows []row
		if err := json.Unmarshal(m.elems[j], &rows); err != nil {
			return history.Op{}, m.errf(j, "the %s rows must be an array of {\"id\": key, \"sk\": key, \"val\": value} objects", [2]string{"live", "dead"}[part])
		}
		for p, rw := range rows {
			where := m.field(j) + "[" + strconv.Itoa(p) + "]"
			if rw.ID == nil || rw.Val == nil {
				return history.Op{}, m.at.errf(where, "a row must have an \"id\" and a \"val\"")
			}
			kv, ok := scalar(rw.ID)
			if !ok || kv.IsNull() {
				return history.Op{}, m.at.errf(where+".id", "the key must be a 64-bit integer or a string, not %s", clip(rw.ID))
			}
			if err := r.keyOfKind(m.at, where+".id", kv); err != nil {
				return history.Op{}, err
			}
			if !in(kv) {
				return history.Op{}, m.at.errf(where+".id", "the key %s is outside the range [%s, %s]", kv, bound(bounds[0], open[0]), bound(bounds[1], open[1]))
			}
			val, ok := scalar(rw.Val)
			if !ok || val.IsNull() {
				return history.Op{}, m.at.errf(where+".val", "the value must be a 64-bit integer or a string, not %s", clip(rw.Val))
			}
			k := r.h.Key(kv)
			if seen[k] {
				return history.Op{}, m.at.errf(where+".id", "the key %s is in the result twice", kv)
			}
			seen[k] = true
			rg.Pairs = append(rg.Pairs, history.KV{Key: k, Value: val})
		}
	}
	slices.SortFunc(rg.Pairs, func(a, b history.KV) int { return history.Compare(r.h.Keys[a.Key], r.h.Keys[b.Key]) })
	if !open[0] {
		rg.Lo = bounds[0]
	} else {
		r.openLo = append(r.openLo, opRef{ti, oi})
	}
	switch {
	case open[1]:
		rg.HiOpen = true
	case bounds[1].Kind == history.Int && bounds[1].N == math.MaxInt64:
		rg.HiOpen = true
	case bounds[1].Kind == history.Int:
		rg.Hi = history.IntValue(bounds[1].N + 1)
	default:
		rg.Hi = history.StringValue(bounds[1].S + "\x00")
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
func (r *reader) initial(at txnLine, raws []json.RawMessage) error {
	r.init = map[history.KeyID]history.Value{}
	for i, raw := range raws {
		one, err := r.op(at, -1, nil, i, raw)
		if err != nil {
			return err
		}
		m := &mop{at: at, i: i}
		switch {
		case len(one) == 1 && one[0].Kind == history.Scan && len(raws) == 1:
			var elems []json.RawMessage
			_ = json.Unmarshal(raw, &elems) // it parsed as a range query
			lo, _ := scalar(elems[1])
			hi, _ := scalar(elems[2])
			if lo != nilBound || hi != nilBound {
				return m.errf(-1, "the initial transaction's range query must have no bounds (\"nil\", \"nil\"), as Viper requires")
			}
			for _, p := range one[0].Range.Pairs {
				r.init[p.Key] = p.Value
				r.written[kv{p.Key, p.Value}] = true
			}
		case len(one) == 1 && one[0].Kind == history.Write:
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
