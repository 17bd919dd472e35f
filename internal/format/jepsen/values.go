package jepsen

import (
	"fmt"
	"strings"

	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/history"
)

// Values turns the EDN values of a history (keys, values written and
// read, list elements) into history values, equal exactly when the EDN
// values are equal (as Elle and Knossos compare them, with Clojure's =):
// an integer is an integer (6 and "6" differ), a string or a keyword is
// the string of its text, and any other value (a vector such as [:anti 1],
// a boolean, a float, a set, a map) the string of its canonical EDN text
// (edn.Value.Canonical). A keyword and a string of the same text, or a
// string that spells another value's canonical text, would so become one
// value: Values refuses the second of them in a role (key or value)
// rather than take two values as one. The zero Values is ready for use.
type Values struct {
	seen map[valueUse]valueFirst
}

// valueUse is a history string and whether it was a key.
type valueUse struct {
	text string
	key  bool
}

// valueFirst is the first use of a history string: which kind of EDN
// value made it (String, Keyword, or Vector for every other kind), and
// on which line.
type valueFirst struct {
	kind edn.Kind
	line int
	v    edn.Value
}

// Convert returns the history value of v, a key when key is set, read on
// line; nil is null. The error says which earlier value it would be
// taken for; the caller names where.
func (vs *Values) Convert(v edn.Value, key bool, line int) (history.Value, error) {
	var text string
	kind := v.Kind
	switch v.Kind {
	case edn.Nil:
		return history.NullValue, nil
	case edn.Int:
		return history.IntValue(v.N), nil
	case edn.String, edn.Keyword:
		text = v.Text
	case edn.Map, edn.Set:
		return history.Value{}, fmt.Errorf("%s is %s: isoscope compares keys and values that are scalars or vectors of them (a bank's or a set's reads are no register's)", v, v.Kind)
	default:
		if bad, ok := collection(v); ok {
			return history.Value{}, fmt.Errorf("%s holds %s: isoscope compares keys and values that are scalars or vectors of them", v, bad.Kind)
		}
		text, kind = v.Canonical(), edn.Vector
	}
	u := valueUse{text, key}
	first, ok := vs.seen[u]
	switch {
	case !ok:
		if vs.seen == nil {
			vs.seen = map[valueUse]valueFirst{}
		}
		vs.seen[u] = valueFirst{kind, line, v}
	case first.kind != kind:
		role := "value"
		if key {
			role = "key"
		}
		return history.Value{}, fmt.Errorf("the %s %s is %s, but the %s %s (line %d) is %s: isoscope reads both as the string %q and cannot tell them apart",
			role, v, v.Kind, role, first.v, first.line, first.v.Kind, text)
	}
	return history.StringValue(text), nil
}

// collection returns a map or a set v holds, at any depth.
func collection(v edn.Value) (edn.Value, bool) {
	for _, x := range v.Items {
		if x.Kind == edn.Map || x.Kind == edn.Set {
			return x, true
		}
		if bad, ok := collection(x); ok {
			return bad, true
		}
	}
	return edn.Value{}, false
}

// ParseValue reads text, one EDN value, as a history value (Values'
// conversion): 0 is an integer, "0" a string, :a the string a.
func ParseValue(text string) (history.Value, error) {
	d := edn.NewDecoder(strings.NewReader(text), "")
	v, err := d.Decode()
	if err != nil {
		return history.Value{}, fmt.Errorf("%q is not an EDN value", text)
	}
	if _, err := d.Decode(); err == nil {
		return history.Value{}, fmt.Errorf("%q is more than one EDN value", text)
	}
	var vs Values
	return vs.Convert(v, false, 1)
}
