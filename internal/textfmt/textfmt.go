// Package textfmt formats numbers for people: the one formatter the
// report layer, the run plots and the command line share. It imports
// nothing of the module, so that any layer may use it.
package textfmt

import (
	"fmt"
	"strconv"
)

// Thousands renders n with thousands separators: 1,000,000.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Count is n and the noun, plural unless n is 1: Count(1, "session") is
// "1 session", Count(3, "session") "3 sessions". A noun whose plural is
// not its singular and "s" is given both: Count(n, "anomaly",
// "anomalies").
func Count(n int, noun ...string) string {
	switch {
	case n == 1:
		return fmt.Sprintf("%d %s", n, noun[0])
	case len(noun) > 1:
		return fmt.Sprintf("%d %s", n, noun[1])
	}
	return fmt.Sprintf("%d %ss", n, noun[0])
}
