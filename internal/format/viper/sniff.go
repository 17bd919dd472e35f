package viper

import (
	"bytes"
	"io"
	"os"

	"github.com/isoscope/isoscope/internal/format"
)

// The top-level fields of a transaction line.
var lineFields = map[string]bool{
	"value": true, "isInitial": true, "isFinal": true,
	"preBeginTS": true, "postBeginTS": true, "preCommitTS": true, "postCommitTS": true,
}

// Sniff reports whether prefix, the first bytes of a file, looks like a
// Viper log: its first line that is not blank is a JSON object whose
// fields, up to the end of the prefix, are a transaction line's (a
// "value" and perhaps "isInitial", "isFinal" and the four timestamps;
// never a Jepsen operation's "type" or "f"), and whose "value" starts
// with an empty list or an operation named "r", "w", "i", "d" or
// "range". The rest of the lines are the reader's to judge.
func Sniff(prefix []byte) bool {
	b := format.FirstLine(bytes.TrimPrefix(prefix, []byte("\xef\xbb\xbf")))
	i := space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i++
	sawValue := false
	for {
		i = space(b, i)
		if i >= len(b) {
			return sawValue
		}
		if b[i] == '}' {
			return sawValue
		}
		if b[i] == ',' {
			i = space(b, i+1)
		}
		key, j, ok := str(b, i)
		if !ok {
			return sawValue && j >= len(b)
		}
		if !lineFields[string(key)] {
			return false
		}
		i = space(b, j)
		if i >= len(b) {
			return sawValue
		}
		if b[i] != ':' {
			return false
		}
		i = space(b, i+1)
		if string(key) == "value" {
			if sawValue || !firstOp(b, i) {
				return false
			}
			sawValue = true
			if i = skipArray(b, i); i >= len(b) {
				return true // cut short by the prefix
			}
			continue
		}
		if i = skip(b, i); i < 0 {
			return false
		}
	}
}

// firstOp reports whether b[i:] starts a list of operations: [] or
// [["r", …, or a name cut short by the end of b.
func firstOp(b []byte, i int) bool {
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = space(b, i+1)
	if i >= len(b) {
		return true
	}
	if b[i] == ']' {
		return true
	}
	if b[i] != '[' {
		return false
	}
	i = space(b, i+1)
	name, j, ok := str(b, i)
	if !ok {
		return j >= len(b) && len(b)-i < 8
	}
	if _, known := arity[string(name)]; !known {
		return false
	}
	j = space(b, j)
	return j >= len(b) || b[j] == ','
}

func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// str reads a JSON string without escapes at b[i:]: its content and the
// index after it; ok is false when there is none (j is len(b) when the
// end of b cut it short).
func str(b []byte, i int) (s []byte, j int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j = i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return b[i+1 : j], j + 1, true
		case '\\':
			return nil, j, false
		}
	}
	return nil, len(b), false
}

// skipArray skips the array at b[i:] (which firstOp found to start
// one); len(b) when the end of b cuts it short.
func skipArray(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		}
	}
	return len(b)
}

// skip skips the scalar (a number, true, false, null or a string without
// escapes) at b[i:]; -1 when there is none.
func skip(b []byte, i int) int {
	if i < len(b) && b[i] == '"' {
		_, j, ok := str(b, i)
		if !ok {
			return -1
		}
		return j
	}
	j := i
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] >= 'a' && b[j] <= 'z') {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// SniffDir reports whether path is a directory that looks like a Viper
// history: it (or its json/ folder) holds logs (J<thread>.log), and the
// first 64 KiB of the first one that is not empty look like a Viper log
// (Sniff).
func SniffDir(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	_, logs, err := historyDir(path)
	if err != nil {
		return false
	}
	for _, l := range logs {
		f, err := os.Open(l.path)
		if err != nil {
			return false
		}
		buf := make([]byte, 64<<10)
		n, _ := io.ReadFull(f, buf)
		f.Close()
		if len(bytes.TrimSpace(buf[:n])) == 0 {
			continue
		}
		return Sniff(buf[:n])
	}
	return false
}
