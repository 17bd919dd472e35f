package format

import (
	"bytes"
	"strconv"
	"strings"
)

// FirstLine returns the first line of text that is not blank, trimmed of
// spaces and its line end (cut short by the end of text); nil if there is
// none. Detection reads a format's first line with it.
func FirstLine(text []byte) []byte {
	for len(text) > 0 {
		line, rest, _ := bytes.Cut(text, []byte("\n"))
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line
		}
		text = rest
	}
	return nil
}

// LogNumber parses n from a log file's name "<prefix><n>.log", n decimal
// digits only (Cobra's T<n>.log, Viper's J<n>.log).
func LogNumber(name, prefix string) (int64, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, ".log"); !ok || s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
