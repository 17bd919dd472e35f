package edn

import (
	"strconv"
	"strings"
)

// Kind says what a Value is.
type Kind uint8

// The kinds of value.
const (
	// Nil is nil (EDN) or null (JSON).
	Nil Kind = iota
	// Bool is true or false; Text holds which.
	Bool
	// Int is an integer that fits 64 bits; N holds it.
	Int
	// Number is any other number (a float, a ratio, a big integer); Text
	// holds it as written.
	Number
	// String is a string; Text holds it.
	String
	// Char is an EDN character (\a, \newline); Text holds it.
	Char
	// Keyword is :name; Text holds the name without the colon.
	Keyword
	// Symbol is any other bare word; Text holds it.
	Symbol
	// Vector is a vector or a list; Items holds its elements.
	Vector
	// Map is a map; Items holds its keys and values, alternating.
	Map
	// Set is a set; Items holds its elements.
	Set
)

// String names the kind for messages.
func (k Kind) String() string {
	switch k {
	case Nil:
		return "nil"
	case Bool:
		return "a boolean"
	case Int:
		return "an integer"
	case Number:
		return "a number"
	case String:
		return "a string"
	case Char:
		return "a character"
	case Keyword:
		return "a keyword"
	case Symbol:
		return "a symbol"
	case Vector:
		return "a vector"
	case Map:
		return "a map"
	case Set:
		return "a set"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// noun names a collection kind without an article.
func (k Kind) noun() string {
	switch k {
	case Map:
		return "map"
	case Set:
		return "set"
	}
	return "vector"
}

// Value is one EDN or JSON value.
type Value struct {
	Kind  Kind
	Text  string
	N     int64
	Items []Value
	// Line is the 1-based line the value starts on.
	Line int
}

// Name returns the text of a keyword or a string (":type" and "type" are
// both "type"), and whether v is one.
func (v Value) Name() (string, bool) {
	if v.Kind == Keyword || v.Kind == String {
		return v.Text, true
	}
	return "", false
}

// Get returns the value of the map v under the key named name (a keyword
// or a string), and whether it has one.
func (v Value) Get(name string) (Value, bool) {
	for i := 0; i+1 < len(v.Items); i += 2 {
		if n, ok := v.Items[i].Name(); ok && n == name {
			return v.Items[i+1], true
		}
	}
	return Value{}, false
}

// String renders v briefly for messages.
func (v Value) String() string {
	switch v.Kind {
	case Nil:
		return "nil"
	case Int:
		return strconv.FormatInt(v.N, 10)
	case String:
		return strconv.Quote(v.Text)
	case Keyword:
		return ":" + v.Text
	case Char:
		return `\` + v.Text
	case Vector, Map, Set:
		open, end := "[", "]"
		switch v.Kind {
		case Map:
			open, end = "{", "}"
		case Set:
			open, end = "#{", "}"
		}
		parts := make([]string, 0, min(len(v.Items), 8))
		for i, x := range v.Items {
			if i == 7 {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, x.String())
		}
		return open + strings.Join(parts, " ") + end
	}
	return v.Text
}
