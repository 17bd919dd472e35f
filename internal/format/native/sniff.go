package native

import (
	"bytes"

	"github.com/isoscope/isoscope/internal/format"
)

// Sniff reports whether the first bytes of an input (plain, not
// gzip-compressed; they may be cut short) look like isoscope's JSON Lines
// format: its first line that is not blank, after a byte order mark, is a
// JSON object with a "format":"isoscope-history" field (a header) or an
// "ops" field that is a list (a transaction). The registry's detection
// calls it on the decompressed prefix of a gzip stream.
func Sniff(prefix []byte) bool {
	text := bytes.TrimPrefix(prefix, []byte("\xef\xbb\xbf"))
	first := format.FirstLine(text)
	if first == nil {
		return false
	}
	return isHeaderOrTxn(first)
}

// isHeaderOrTxn reports whether the first line is a JSON object with a
// "format":"isoscope-history" field (a header) or an "ops" field (a
// transaction).
func isHeaderOrTxn(first []byte) bool {
	found := false
	topLevelFields(first, func(key, value []byte) bool {
		switch string(key) {
		case "format":
			found = bytes.HasPrefix(value, []byte(`"isoscope-history"`))
			return false
		case "ops":
			found = len(value) > 0 && (value[0] == '[')
			return !found
		}
		return true
	})
	return found
}

// topLevelFields calls f with the raw name and the start of the value of
// each top-level field of the JSON object in b, while f returns true. It is
// tolerant: it stops quietly at anything malformed or at the end of b.
func topLevelFields(b []byte, f func(key, value []byte) bool) {
	i := sniffSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for {
		i = sniffSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return
		}
		end := sniffStringEnd(b, i)
		if end < 0 {
			return
		}
		key := b[i+1 : end-1]
		i = sniffSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = sniffSpace(b, i+1)
		if !f(key, b[i:]) {
			return
		}
		if i = sniffValueEnd(b, i); i < 0 {
			return
		}
		i = sniffSpace(b, i)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i++
	}
}

// sniffSpace returns the index of the first byte at or after i that is not
// JSON white space.
func sniffSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// sniffStringEnd returns the index just past the string that starts at
// b[i], or -1 if it does not end in b.
func sniffStringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// sniffValueEnd returns the index just past the JSON value that starts at
// b[i], or -1 if it does not end in b.
func sniffValueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			if i = sniffStringEnd(b, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			continue
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth < 0 {
				return i
			}
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return -1
}
