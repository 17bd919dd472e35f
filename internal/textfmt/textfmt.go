// Package textfmt formats numbers for people: the one formatter the
// report layer, the run plots and the command line share. It imports
// nothing of the module, so that any layer may use it.
package textfmt

import "strconv"

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
