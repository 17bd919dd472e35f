package native

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/isoscope/isoscope/internal/format"
)

// maxDepth bounds the nesting of skipped JSON values.
const maxDepth = 1000

// scanner is a small JSON lexer over one line. It never allocates on the
// good path: strings without escapes alias the line, strings with escapes
// are decoded into buf (valid until the next string).
type scanner struct {
	b   []byte
	i   int
	buf []byte
	// file, line and field say where the scanner is, for errors.
	file  string
	line  int
	field string
	op    int // the operation being scanned (-1: none): the field is "ops[op]"
}

func (s *scanner) reset(b []byte, line int) {
	s.b, s.i, s.line, s.field, s.op = b, 0, line, "", -1
}

// where names the field being scanned.
func (s *scanner) where() string {
	if s.op >= 0 {
		return opField(s.op)
	}
	return s.field
}

// errf returns a bad-input error at the current line.
func (s *scanner) errf(field, msg string) error {
	return &format.Error{File: s.file, Line: s.line, Field: field, Msg: msg}
}

// syntax returns a malformed-JSON error at the current byte.
func (s *scanner) syntax(want string) error {
	found := "the end of the line"
	if s.i < len(s.b) {
		c := s.b[s.i]
		if c >= 0x20 && c < 0x7f {
			found = strconv.QuoteRune(rune(c))
		} else {
			found = "byte " + strconv.Quote(string([]byte{c}))
		}
	}
	return s.errf(s.where(), "malformed JSON: want "+want+", found "+found+" at byte "+strconv.Itoa(s.i+1))
}

// ws skips whitespace and returns the next byte (0 at the end of the line).
func (s *scanner) ws() byte {
	b, i := s.b, s.i
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\r', '\n':
		default:
			s.i = i
			return c
		}
	}
	s.i = i
	return 0
}

// expect skips whitespace and consumes c.
func (s *scanner) expect(c byte, want string) error {
	if s.ws() != c {
		return s.syntax(want)
	}
	s.i++
	return nil
}

// more consumes the separator after a member of an object or array: it
// reports true after a ',' and false after the closing byte.
func (s *scanner) more(closing byte) (bool, error) {
	switch s.ws() {
	case ',':
		s.i++
		return true, nil
	case closing:
		s.i++
		return false, nil
	}
	return false, s.syntax("',' or '" + string(closing) + "'")
}

// str scans the string that starts at s.i (a '"') and returns its decoded
// bytes.
func (s *scanner) str() ([]byte, error) {
	b := s.b
	start := s.i + 1 // past the opening quote
	high := false
	for i := start; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			s.i = i + 1
			out := b[start:i]
			if high && !utf8.Valid(out) {
				for s.i = start; ; {
					r, n := utf8.DecodeRune(b[s.i:])
					if r == utf8.RuneError && n == 1 {
						return nil, s.syntax("valid UTF-8 in a string")
					}
					s.i += n
				}
			}
			return out, nil
		case c == '\\':
			s.i = i
			return s.escaped(start)
		case c < 0x20:
			s.i = i
			return nil, s.syntax("a string without raw control characters")
		case c >= 0x80:
			high = true
		}
	}
	s.i = len(b)
	return nil, s.syntax("the end of a string")
}

// escaped decodes a string with escapes into s.buf; s.i is at the first
// backslash and the string started at start.
func (s *scanner) escaped(start int) ([]byte, error) {
	s.buf = append(s.buf[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(s.buf) {
				return nil, s.errf(s.where(), "malformed JSON: invalid UTF-8 in the string that starts at byte "+strconv.Itoa(start))
			}
			return s.buf, nil
		case c < 0x20:
			return nil, s.syntax("a string without raw control characters")
		case c != '\\':
			s.buf = append(s.buf, c)
			s.i++
			continue
		}
		s.i++
		if s.i >= len(s.b) {
			return nil, s.syntax("an escape")
		}
		e := s.b[s.i]
		s.i++
		switch e {
		case '"', '\\', '/':
			s.buf = append(s.buf, e)
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.syntax("four hex digits after \\u")
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by a low one is one rune. A
				// lone surrogate is no character: encoding/json makes it
				// U+FFFD, which would make "\ud800" and "\udbff" one key
				// (or one value, or one session); it is bad input.
				at := s.i - 6
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					r2, ok := s.hex4()
					if !ok {
						return nil, s.syntax("four hex digits after \\u")
					}
					r = utf16.DecodeRune(r, r2)
				} else {
					r = utf8.RuneError
				}
				if r == utf8.RuneError {
					return nil, s.errf(s.where(), "malformed JSON: "+string(s.b[at:at+6])+" at byte "+strconv.Itoa(at+1)+
						" is a lone UTF-16 surrogate, not a character (strings must be valid Unicode text)")
				}
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			s.i--
			return nil, s.syntax("a valid escape")
		}
	}
	return nil, s.syntax("the end of a string")
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.i += 4
	return r, true
}

// literal consumes the word w (true, false or null) at s.i.
func (s *scanner) literal(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return s.syntax("a JSON value")
	}
	s.i += len(w)
	return nil
}

// skip consumes any JSON value, checking that it is well formed.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.errf(s.where(), "malformed JSON: nested deeper than "+strconv.Itoa(maxDepth)+" levels at byte "+strconv.Itoa(s.i+1))
	}
	switch c := s.ws(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || c-'0' <= 9:
		_, _, _, err := s.number()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '[':
		s.i++
		if s.ws() == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			if more, err := s.more(']'); !more {
				return err
			}
		}
	case c == '{':
		s.i++
		if s.ws() == '}' {
			s.i++
			return nil
		}
		for {
			if s.ws() != '"' {
				return s.syntax("a field name")
			}
			if _, err := s.str(); err != nil {
				return err
			}
			if err := s.expect(':', "':'"); err != nil {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			if more, err := s.more('}'); !more {
				return err
			}
		}
	}
	return s.syntax("a JSON value")
}

// describe names the JSON value that starts at s.i, for messages.
func (s *scanner) describe() string {
	switch c := s.ws(); {
	case c == '"':
		return "a string"
	case c == '-' || c-'0' <= 9:
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '[':
		return "an array"
	case c == '{':
		return "an object"
	}
	return ""
}

// wrongType reports a JSON value of the wrong type for field (what says
// what it must be), or malformed JSON if no well-formed value starts here.
func (s *scanner) wrongType(field, what string) error {
	d, at := s.describe(), s.i
	if d == "" {
		return s.syntax("a JSON value")
	}
	if err := s.skip(0); err != nil {
		return err
	}
	s.i = at
	return s.errf(field, what+", not "+d)
}
