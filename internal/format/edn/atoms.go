package edn

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/isoscope/isoscope/internal/format"
)

// The atoms: symbols, keywords, numbers and the other bare words,
// characters, and strings with their escapes.

// word reads a bare word up to a delimiter.
func (d *Decoder) word() string {
	d.buf = d.buf[:0]
	for {
		c, ok, _ := d.peek()
		if !ok || d.isDelimiter(c) {
			return string(d.buf)
		}
		d.buf = append(d.buf, d.next())
		if d.tooLong() {
			return string(d.buf)
		}
	}
}

// tooLong reports whether the token in d.buf is over maxToken, and then
// sets the sticky error.
func (d *Decoder) tooLong() bool {
	if len(d.buf) <= maxToken {
		return false
	}
	d.long = format.LimitErr(d.name, d.line, "token", maxToken)
	return true
}

// bare turns a bare word into nil, a boolean, a number or a symbol.
func (d *Decoder) bare(w string, line int) (Value, error) {
	switch w {
	case "nil", "null":
		return Value{Kind: Nil, Line: line}, nil
	case "true", "false":
		return Value{Kind: Bool, Text: w, Line: line}, nil
	}
	c := w[0]
	if c == '+' || c == '-' {
		if len(w) == 1 || w[1] < '0' || w[1] > '9' {
			return Value{Kind: Symbol, Text: w, Line: line}, nil
		}
	} else if c < '0' || c > '9' {
		if !utf8.ValidString(w) {
			return Value{}, d.errf(line, "a symbol that is not valid UTF-8")
		}
		return Value{Kind: Symbol, Text: w, Line: line}, nil
	}
	digits := strings.TrimSuffix(w, "N")
	if n, err := strconv.ParseInt(strings.TrimPrefix(digits, "+"), 10, 64); err == nil {
		return Value{Kind: Int, N: n, Text: w, Line: line}, nil
	}
	if !utf8.ValidString(w) {
		return Value{}, d.errf(line, "a number that is not valid UTF-8")
	}
	for _, r := range w {
		if !strings.ContainsRune("0123456789+-.eENM/", r) {
			return Value{}, d.errf(line, "%q is not a number", w)
		}
	}
	return Value{Kind: Number, Text: w, Line: line}, nil
}

// char reads an EDN character after its backslash.
func (d *Decoder) char(line int) (Value, error) {
	c, ok, err := d.peek()
	if err != nil {
		return Value{}, err
	}
	if !ok || d.isSpace(c) {
		return Value{}, d.errf(line, "a backslash without a character")
	}
	w := d.word()
	if w == "" { // a delimiter itself: \( \" \;
		w = string(d.next())
	}
	switch w {
	case "newline":
		w = "\n"
	case "space":
		w = " "
	case "tab":
		w = "\t"
	case "return":
		w = "\r"
	case "backspace":
		w = "\b"
	case "formfeed":
		w = "\f"
	default:
		if len(w) == 5 && w[0] == 'u' {
			if n, err := strconv.ParseUint(w[1:], 16, 32); err == nil {
				if utf16.IsSurrogate(rune(n)) {
					return Value{}, d.errf(line, `\%s is a UTF-16 surrogate, not a character`, w)
				}
				w = string(rune(n))
			}
		}
		if utf8.RuneCountInString(w) != 1 || !utf8.ValidString(w) {
			return Value{}, d.errf(line, `\%s is not a character`, w)
		}
	}
	return Value{Kind: Char, Text: w, Line: line}, nil
}

// str reads a string after its opening quote.
func (d *Decoder) str(line int) (string, error) {
	d.buf = d.buf[:0]
	for {
		c, ok, err := d.peek()
		if err != nil {
			return "", err
		}
		if !ok {
			return "", d.errf(line, "the input ends inside a string")
		}
		d.next()
		switch c {
		case '"':
			if !utf8.Valid(d.buf) {
				return "", d.errf(line, "a string that is not valid UTF-8")
			}
			return string(d.buf), nil
		case '\\':
			if err := d.escape(line); err != nil {
				return "", err
			}
		default:
			d.buf = append(d.buf, c)
			if d.tooLong() {
				return "", d.long
			}
		}
	}
}

// simpleEscapes pairs each one-letter escape of a string with the byte it
// stands for.
const simpleEscapes = "\"\"\\\\//''n\nt\tr\rb\bf\f"

// escape reads the escape after a backslash in a string.
func (d *Decoder) escape(line int) error {
	c, ok, err := d.peek()
	if err != nil {
		return err
	}
	if !ok {
		return d.errf(line, "the input ends inside a string")
	}
	d.next()
	if i := strings.IndexByte(simpleEscapes, c); i >= 0 && i%2 == 0 {
		d.buf = append(d.buf, simpleEscapes[i+1])
		return nil
	}
	switch c {
	case 'u':
		r, err := d.hex4(line)
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			// A surrogate pair: \uD83D\uDE00. A lone surrogate is no
			// character; made U+FFFD it would make "\ud800" and "\udbff"
			// one key.
			hi := r
			r = utf8.RuneError
			if b, _ := d.r.Peek(2); len(b) == 2 && b[0] == '\\' && b[1] == 'u' {
				d.next()
				d.next()
				lo, err := d.hex4(line)
				if err != nil {
					return err
				}
				r = utf16.DecodeRune(hi, lo)
			}
			if r == utf8.RuneError {
				return d.errf(line, `\u%04x in a string is a lone UTF-16 surrogate, not a character (strings must be valid Unicode text)`, hi)
			}
		}
		d.buf = utf8.AppendRune(d.buf, r)
	default:
		return d.errf(line, `unknown escape \%c in a string`, c)
	}
	return nil
}

// hex4 reads the four hex digits of a \u escape.
func (d *Decoder) hex4(line int) (rune, error) {
	var r rune
	for range 4 {
		c, ok, err := d.peek()
		if err != nil {
			return 0, err
		}
		var x byte
		switch {
		case ok && c >= '0' && c <= '9':
			x = c - '0'
		case ok && c >= 'a' && c <= 'f':
			x = c - 'a' + 10
		case ok && c >= 'A' && c <= 'F':
			x = c - 'A' + 10
		default:
			return 0, d.errf(line, `\u in a string wants four hex digits`)
		}
		d.next()
		r = r<<4 | rune(x)
	}
	return r, nil
}
