package format

import (
	"bytes"
	"compress/gzip"
	"io"
)

// detectors are the formats Detect knows, tried in order. Each looks at the
// first non-blank line of the (gunzipped) prefix, which may be cut short,
// and at the whole prefix.
var detectors = []struct {
	name  string
	match func(first, text []byte) bool
}{
	{"isoscope", isIsoscope},
}

// Detect names the format of a history from the first bytes of its input
// (gunzipping them when they start with the gzip magic bytes): "isoscope"
// for isoscope's JSON Lines format, or "" when it cannot tell. A longer
// prefix (64 KiB is plenty) makes a surer guess.
func Detect(prefix []byte) string {
	text := prefix
	if len(prefix) >= 2 && prefix[0] == 0x1f && prefix[1] == 0x8b {
		text = gunzipPrefix(prefix)
	}
	text = bytes.TrimPrefix(text, []byte("\xef\xbb\xbf"))
	first := firstLine(text)
	if first == nil {
		return ""
	}
	for _, d := range detectors {
		if d.match(first, text) {
			return d.name
		}
	}
	return ""
}

// gunzipPrefix decompresses as much of a gzip stream's prefix as it can.
func gunzipPrefix(prefix []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(prefix))
	if err != nil {
		return nil
	}
	out, _ := io.ReadAll(io.LimitReader(zr, 1<<20))
	return out
}

// firstLine returns the first line that is not blank, without its line
// end; nil if there is none.
func firstLine(text []byte) []byte {
	for len(text) > 0 {
		line, rest, _ := bytes.Cut(text, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line
		}
		text = rest
	}
	return nil
}

// isIsoscope reports whether the first line is a JSON object with a
// "format":"isoscope-history" field (a header) or an "ops" field (a
// transaction).
func isIsoscope(first, _ []byte) bool {
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
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return
		}
		end := stringEnd(b, i)
		if end < 0 {
			return
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = skipSpace(b, i+1)
		if !f(key, b[i:]) {
			return
		}
		if i = valueEnd(b, i); i < 0 {
			return
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at b[i], or
// -1 if it does not end in b.
func stringEnd(b []byte, i int) int {
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

// valueEnd returns the index just past the JSON value that starts at b[i],
// or -1 if it does not end in b.
func valueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			if i = stringEnd(b, i); i < 0 {
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
