// Package edn reads the values of Jepsen-style histories: EDN (Clojure's
// data notation) and its JSON form, one value after another, each knowing
// the line it started on, so that a format reader can name the line of
// whatever is wrong.
//
// It reads the whole of EDN that histories use: nil, booleans, integers
// (with an N suffix) and other numbers (kept as text), strings, characters,
// keywords, symbols, lists, vectors, maps and sets; commas are whitespace,
// ";" starts a comment, "#_" discards the next value and a tag ("#inst",
// "#jepsen.history.Op") is dropped in favour of the value it tags. When the
// first map of the input opens with a string key ({"type": …}), the input
// is read as JSON: ":" separates a key from its value and null is nil.
// Nesting deeper than MaxDepth (counting each tag, and each set twice) is
// an error, not a stack overflow.
package edn

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/isoscope/isoscope/internal/format"
)

// MaxDepth is how deeply collections may nest.
const MaxDepth = 512

// Decoder reads values one after another from a stream.
type Decoder struct {
	r    *bufio.Reader
	name string
	line int
	// json is set once the first map shows the input to be JSON; decided
	// says whether that has been seen.
	json, decided bool
	depth         int
	buf           []byte
	// long is the error of a token longer than maxToken, or of a value
	// of more than maxValues: sticky, it ends the decoding.
	long error
	// values counts the values of the top-level value being decoded.
	values int
}

// maxValues is how many values one top-level value (an operation of a
// history) may hold: 1 Mi, a bound on the memory one takes (about 64
// bytes a value).
const maxValues = 1 << 20

// maxToken is the longest string, number or symbol the decoder takes:
// 16 MiB, far above any history's, and a bound on the memory a token
// takes.
const maxToken = 16 << 20

// NewDecoder returns a decoder of r; name names the input in errors.
func NewDecoder(r io.Reader, name string) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, 64<<10), name: name, line: 1}
}

// Line is the line the decoder has reached.
func (d *Decoder) Line() int { return d.line }

func (d *Decoder) errf(line int, msg string, a ...any) error {
	return &format.Error{File: d.name, Line: line, Msg: fmt.Sprintf(msg, a...)}
}

// peek returns the next byte without consuming it; ok is false at the end
// of the input. A read error other than the end is returned.
func (d *Decoder) peek() (byte, bool, error) {
	if d.long != nil {
		return 0, false, d.long
	}
	b, err := d.r.Peek(1)
	if len(b) == 1 {
		return b[0], true, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return 0, false, nil
	}
	return 0, false, &format.Error{File: d.name, Line: d.line, Msg: err.Error()}
}

// next consumes one byte, counting lines.
func (d *Decoder) next() byte {
	c, _ := d.r.ReadByte()
	if c == '\n' {
		d.line++
	}
	return c
}

// isSpace reports whether c separates values: whitespace and commas, and
// in JSON the colon between a key and its value.
func (d *Decoder) isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '\f', ',':
		return true
	case ':':
		return d.json
	}
	return false
}

// isDelimiter reports whether c ends a bare word (a number, a symbol, a
// keyword).
func (d *Decoder) isDelimiter(c byte) bool {
	switch c {
	case '(', ')', '[', ']', '{', '}', '"', ';':
		return true
	}
	return d.isSpace(c)
}

// skip skips whitespace and comments and returns the next byte, not
// consumed; ok is false at the end of the input.
func (d *Decoder) skip() (byte, bool, error) {
	for {
		c, ok, err := d.peek()
		if !ok || err != nil {
			return 0, false, err
		}
		switch {
		case d.isSpace(c):
			d.next()
		case c == ';':
			for {
				c, ok, err := d.peek()
				if err != nil {
					return 0, false, err
				}
				if !ok || c == '\n' {
					break
				}
				d.next()
			}
		default:
			return c, true, nil
		}
	}
}

// Decode reads the next value. At the end of the input it returns io.EOF;
// bad input is a *format.Error naming the line.
func (d *Decoder) Decode() (Value, error) {
	d.values = 0
	v, err := d.decode()
	if err != nil && d.long != nil {
		return Value{}, d.long
	}
	return v, err
}

func (d *Decoder) decode() (Value, error) {
	c, ok, err := d.skip()
	if err != nil {
		return Value{}, err
	}
	if !ok {
		return Value{}, io.EOF
	}
	switch c {
	case ')', ']', '}':
		line := d.line
		d.next()
		return Value{}, d.errf(line, "unexpected %q", string(c))
	}
	v, err := d.value()
	if err == nil && v.Kind == discarded {
		return d.Decode()
	}
	return v, err
}

// value reads the value that starts at the next byte, which is not
// whitespace.
func (d *Decoder) value() (Value, error) {
	line := d.line
	if d.values++; d.values > maxValues && d.long == nil {
		d.long = format.LimitErr(d.name, line, "values", maxValues)
	}
	c, _, _ := d.peek()
	switch {
	case c == '(' || c == '[':
		d.next()
		end := byte(']')
		if c == '(' {
			end = ')'
		}
		return d.collection(Vector, end, line)
	case c == '{':
		d.next()
		if !d.decided {
			d.decided = true
			if n, ok, err := d.skip(); err != nil {
				return Value{}, err
			} else if ok && n == '"' {
				d.json = true
			}
		}
		v, err := d.collection(Map, '}', line)
		if err == nil && len(v.Items)%2 != 0 {
			return Value{}, d.errf(line, "a map with %d items: a key without a value", len(v.Items))
		}
		return v, err
	case c == '"':
		d.next()
		s, err := d.str(line)
		return Value{Kind: String, Text: s, Line: line}, err
	case c == '#':
		return d.dispatch(line)
	case c == '\\':
		d.next()
		return d.char(line)
	case c == ':':
		d.next()
		w := d.word()
		if w == "" {
			return Value{}, d.errf(line, "a colon without a keyword name")
		}
		if !utf8.ValidString(w) {
			return Value{}, d.errf(line, "a keyword that is not valid UTF-8")
		}
		return Value{Kind: Keyword, Text: w, Line: line}, nil
	}
	w := d.word()
	if w == "" {
		d.next()
		return Value{}, d.errf(line, "unexpected %q", string(c))
	}
	return d.bare(w, line)
}

// collection reads the items of a vector, list, map or set up to end.
func (d *Decoder) collection(k Kind, end byte, line int) (Value, error) {
	if d.depth >= MaxDepth {
		return Value{}, d.errf(line, "values nested more than %d deep", MaxDepth)
	}
	d.depth++
	defer func() { d.depth-- }()
	v := Value{Kind: k, Line: line}
	for {
		c, ok, err := d.skip()
		if err != nil {
			return Value{}, err
		}
		if !ok {
			return Value{}, d.errf(d.line, "the input ends inside the %s opened on line %d", k.noun(), line)
		}
		switch c {
		case end:
			d.next()
			return v, nil
		case ')', ']', '}':
			l := d.line
			d.next()
			return Value{}, d.errf(l, "%q closes the %s opened on line %d, which wants %q", string(c), k.noun(), line, string(end))
		}
		x, err := d.value()
		if err != nil {
			return Value{}, err
		}
		if x.Kind == discarded {
			continue
		}
		v.Items = append(v.Items, x)
	}
}

// discarded marks what #_ discards; collections drop it.
const discarded Kind = 255

// dispatch reads what follows '#': a set, a discard or a tagged value.
func (d *Decoder) dispatch(line int) (Value, error) {
	if d.depth >= MaxDepth {
		return Value{}, d.errf(line, "values nested more than %d deep", MaxDepth)
	}
	d.depth++
	defer func() { d.depth-- }()
	d.next()
	c, ok, err := d.peek()
	if err != nil {
		return Value{}, err
	}
	switch {
	case ok && c == '{':
		d.next()
		return d.collection(Set, '}', line)
	case ok && c == '_':
		d.next()
		if _, ok, err := d.skip(); err != nil || !ok {
			if err == nil {
				err = d.errf(line, "#_ at the end of the input discards nothing")
			}
			return Value{}, err
		}
		if _, err := d.value(); err != nil {
			return Value{}, err
		}
		return Value{Kind: discarded, Line: line}, nil
	case ok && c == '#':
		d.next()
		w := d.word()
		return Value{Kind: Number, Text: "##" + w, Line: line}, nil
	}
	if d.word() == "" {
		return Value{}, d.errf(line, "# followed by neither {, _ nor a tag")
	}
	if _, ok, err := d.skip(); err != nil || !ok {
		if err == nil {
			err = d.errf(line, "a tag at the end of the input tags nothing")
		}
		return Value{}, err
	}
	return d.value()
}

// Each calls f with each top-level value of the input, or, when the input
// is one vector (or list), with each of its elements: the two shapes of a
// history of operations. It stops at the first error f returns.
func (d *Decoder) Each(f func(Value) error) error {
	if err := d.each(f); err != nil {
		if d.long != nil {
			return d.long
		}
		return err
	}
	return nil
}

func (d *Decoder) each(f func(Value) error) error {
	c, ok, err := d.skip()
	if err != nil || !ok {
		return err
	}
	if c != '[' && c != '(' {
		for {
			v, err := d.Decode()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := f(v); err != nil {
				return err
			}
		}
	}
	line := d.line
	end := byte(']')
	if d.next() == '(' {
		end = ')'
	}
	for {
		c, ok, err := d.skip()
		if err != nil {
			return err
		}
		if !ok {
			return d.errf(d.line, "the input ends inside the top-level vector opened on line %d", line)
		}
		if c == end {
			line = d.line
			d.next()
			break
		}
		if c == ')' || c == ']' || c == '}' {
			return d.errf(d.line, "%q closes the top-level vector opened on line %d, which wants %q", string(c), line, string(end))
		}
		d.values = 0
		v, err := d.value()
		if err != nil {
			return err
		}
		if v.Kind == discarded {
			continue
		}
		if err := f(v); err != nil {
			return err
		}
	}
	if _, ok, err := d.skip(); err != nil || ok {
		if err == nil {
			err = d.errf(d.line, "more input after the top-level vector that ends on line %d", line)
		}
		return err
	}
	return nil
}
