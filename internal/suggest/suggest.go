// Package suggest finds, for a name that is none of the known ones, the
// known names it was most likely meant to be, and words the error that
// says so ("did you mean …?", then the known names comma-separated). It
// imports nothing of the module, so that any layer may use it.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the names among candidates that s most likely
// misspells, nearest first: those at the smallest Damerau–Levenshtein
// distance (case-insensitive; a transposition of neighbours counts one
// edit) when it is small for s's length, else those s is a prefix of (at
// least 3 characters typed). It returns nil when none is close, and at
// most 3 names.
func Closest(s string, candidates []string) []string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return nil
	}
	limit := max(1, min(3, len([]rune(s))/3))
	best, bestDist := []string(nil), limit+1
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[c] || c == "" {
			continue
		}
		seen[c] = true
		d := distance(s, strings.ToLower(c))
		switch {
		case d < bestDist:
			best, bestDist = []string{c}, d
		case d == bestDist:
			best = append(best, c)
		}
	}
	if best == nil && len(s) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(strings.ToLower(c), s) && !contains(best, c) {
				best = append(best, c)
			}
		}
	}
	if len(best) > 3 {
		best = best[:3]
	}
	return best
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// distance is the optimal-string-alignment distance of a and b (in
// runes): insertions, deletions, substitutions and transpositions of
// neighbours, each one edit.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the dynamic programme.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// DidYouMean is the question that offers names: ` did you mean "a"?`,
// ` did you mean "a" or "b"?`, with the leading space, or "" when names
// is empty.
func DidYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	last := q[len(q)-1]
	if len(q) == 1 {
		return " did you mean " + last + "?"
	}
	return " did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + last + "?"
}

// Unknown is the error for a name s that is none of known: `unknown what
// "s"; did you mean "x"? (known: a, b, c)`, the question only when a
// known name is close (Closest). also are further names the error may
// suggest but does not list (aliases, short forms).
func Unknown(what, s string, known []string, also ...string) error {
	near := Closest(s, append(append([]string{}, known...), also...))
	list := " (known: " + strings.Join(known, ", ") + ")"
	if len(near) == 0 {
		return fmt.Errorf("unknown %s %q%s", what, s, list)
	}
	return fmt.Errorf("unknown %s %q;%s%s", what, s, DidYouMean(near), list)
}
