package native

import "encoding/binary"

// Kinds of number.
const (
	numInt   = iota // an integer: mag and neg hold it
	numFloat        // a fraction or an exponent
	numBig          // an integer beyond 64 bits
)

// number scans a JSON number at s.i and returns its magnitude, sign and
// kind.
func (s *scanner) number() (mag uint64, neg bool, kind int, err error) {
	b, i := s.b, s.i
	if b[i] == '-' {
		neg = true
		i++
	}
	start := i
	// Eight digits at a time while they surely fit in 64 bits.
	for i+8 <= len(b) && i-start <= 11 {
		v, ok := eightDigits(binary.LittleEndian.Uint64(b[i:]))
		if !ok {
			break
		}
		mag = mag*1e8 + v
		i += 8
	}
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		// Nineteen digits always fit in 64 bits; the twentieth may not.
		if i-start >= 19 && (i-start > 19 || mag > (1<<64-1-uint64(c))/10) {
			kind = numBig
		}
		mag = mag*10 + uint64(c)
	}
	s.i = i
	if i < len(b) && kind == numInt && i-start > 0 && (b[start] != '0' || i-start == 1) {
		// The common case: an integer followed by ',', ']' or '}'.
		if c := b[i]; c != '.' && c != 'e' && c != 'E' {
			return mag, neg, numInt, nil
		}
	}
	switch n := s.i - start; {
	case n == 0:
		return 0, false, 0, s.syntax("a digit")
	case n > 1 && s.b[start] == '0':
		s.i = start + 1
		return 0, false, 0, s.syntax("no leading zero")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if err := s.digits(); err != nil {
			return 0, false, 0, err
		}
		kind = numFloat
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if err := s.digits(); err != nil {
			return 0, false, 0, err
		}
		kind = numFloat
	}
	return mag, neg, kind, nil
}

// eightDigits converts eight ASCII digits, loaded little-endian, to their
// value; ok is false if any byte is not a digit (the SWAR method of
// simdjson).
func eightDigits(x uint64) (v uint64, ok bool) {
	if (x&0xF0F0F0F0F0F0F0F0)|((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0)>>4 != 0x3333333333333333 {
		return 0, false
	}
	x = (x & 0x0F0F0F0F0F0F0F0F) * 2561 >> 8
	x = (x & 0x00FF00FF00FF00FF) * 6553601 >> 16
	return uint64(uint32((x & 0x0000FFFF0000FFFF) * 42949672960001 >> 32)), true
}

func (s *scanner) digits() error {
	start := s.i
	for s.i < len(s.b) && s.b[s.i]-'0' <= 9 {
		s.i++
	}
	if s.i == start {
		return s.syntax("a digit")
	}
	return nil
}

// scalar is an integer, a string or null.
type scalar struct {
	kind uint8 // sNull, sInt or sString
	n    int64
	s    []byte
}

// Kinds of scalar (the same numbering as history.ValueKind).
const (
	sNull = iota
	sInt
	sString
)

// scalar scans an integer, a string or null; anything else is an error
// that names what (for example "id must be an integer or a string, not a
// boolean").
func (s *scanner) scalar(what string) (scalar, error) {
	switch c := s.ws(); {
	case c == '"':
		b, err := s.str()
		return scalar{kind: sString, s: b}, err
	case c == '-' || c-'0' <= 9:
		mag, neg, kind, err := s.number()
		if err != nil {
			return scalar{}, err
		}
		switch {
		case kind == numFloat:
			return scalar{}, s.errf(s.where(), what+", not a non-integer number")
		case kind == numBig || (!neg && mag > 1<<63-1) || (neg && mag > 1<<63):
			return scalar{}, s.errf(s.where(), what+": integer out of the 64-bit range")
		case neg:
			return scalar{kind: sInt, n: int64(-mag)}, nil
		}
		return scalar{kind: sInt, n: int64(mag)}, nil
	case c == 'n':
		return scalar{}, s.literal("null")
	}
	return scalar{}, s.wrongType(s.where(), what)
}

// boolean scans true or false (null counts as false when nullOK).
func (s *scanner) boolean(field string, nullOK bool) (bool, error) {
	switch s.ws() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	case 'n':
		if nullOK {
			return false, s.literal("null")
		}
	}
	return false, s.wrongType(field, "must be true or false")
}
