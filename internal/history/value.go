package history

import (
	"strconv"
	"strings"
)

// ValueKind says which of the JSON scalar kinds a Value holds.
type ValueKind uint8

// The kinds of value a history can carry.
const (
	// Null is JSON null: for a read, the key was absent; for a delete, the
	// "value" the delete leaves behind.
	Null ValueKind = iota
	// Int is a JSON integer.
	Int
	// String is a JSON string.
	String
)

// String names the kind.
func (k ValueKind) String() string {
	switch k {
	case Null:
		return "null"
	case Int:
		return "int"
	case String:
		return "string"
	}
	return "ValueKind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a scalar of a history: a key, a written or read value, a list
// element, or a transaction or session label. Values are comparable with ==.
type Value struct {
	Kind ValueKind
	N    int64  // the integer, when Kind is Int
	S    string // the string, when Kind is String
}

// IntValue returns the integer value n.
func IntValue(n int64) Value { return Value{Kind: Int, N: n} }

// StringValue returns the string value s.
func StringValue(s string) Value { return Value{Kind: String, S: s} }

// NullValue is the JSON null.
var NullValue = Value{}

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.Kind == Null }

// String renders v for people: integers plainly, strings quoted only when
// they would otherwise be ambiguous, null as "null".
func (v Value) String() string {
	switch v.Kind {
	case Int:
		return strconv.FormatInt(v.N, 10)
	case String:
		if v.S == "" || v.S == "null" || strings.ContainsAny(v.S, " \t\n\"|,") || isNumeric(v.S) {
			return strconv.Quote(v.S)
		}
		return v.S
	}
	return "null"
}

// AppendJSON appends v as JSON to b.
func (v Value) AppendJSON(b []byte) []byte {
	switch v.Kind {
	case Int:
		return strconv.AppendInt(b, v.N, 10)
	case String:
		return appendJSONString(b, v.S)
	}
	return append(b, "null"...)
}

// Compare orders values: null first, then integers numerically, then strings
// bytewise. It is the key order of range operations.
func Compare(a, b Value) int {
	if a.Kind != b.Kind {
		if a.Kind < b.Kind {
			return -1
		}
		return 1
	}
	switch a.Kind {
	case Int:
		switch {
		case a.N < b.N:
			return -1
		case a.N > b.N:
			return 1
		}
		return 0
	case String:
		return strings.Compare(a.S, b.S)
	}
	return 0
}

func isNumeric(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// AppendJSONString appends s as a JSON string literal to b.
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }
