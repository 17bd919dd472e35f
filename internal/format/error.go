package format

import "strconv"

// Error is bad input: what a format reader reports when the input breaks
// its format. It names where the problem is as precisely as the reader
// knows; empty parts are left out of the message.
type Error struct {
	// File is the name of the input (a file name, or "-" for standard
	// input).
	File string
	// Line is the 1-based line of the input; 0 when the problem is not on
	// one line.
	Line int
	// Field is the field (or operation, as "ops[2]") that is wrong.
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error renders the error as "file:line: field: msg", leaving out the
// parts that are empty.
func (e *Error) Error() string {
	b := make([]byte, 0, len(e.File)+len(e.Field)+len(e.Msg)+16)
	if e.File != "" {
		b = append(b, e.File...)
	}
	if e.Line > 0 {
		if len(b) > 0 {
			b = append(b, ':')
		} else {
			b = append(b, "line "...)
		}
		b = strconv.AppendInt(b, int64(e.Line), 10)
	}
	if e.Field != "" {
		if len(b) > 0 {
			b = append(b, ": "...)
		}
		b = append(b, e.Field...)
	}
	if e.Msg != "" {
		if len(b) > 0 {
			b = append(b, ": "...)
		}
		b = append(b, e.Msg...)
	}
	return string(b)
}
