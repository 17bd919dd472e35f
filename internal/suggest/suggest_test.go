package suggest

import (
	"slices"
	"testing"
)

// TestDistance holds the edit distance to cases worked by hand: a
// transposition of neighbours is one edit, as are an insertion, a
// deletion and a substitution.
func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"level", "level", 0},
		{"levle", "level", 1}, {"serialisable", "serializable", 1}, {"lost-updat", "lost-update", 1},
		{"ca", "abc", 3}, {"kitten", "sitting", 3}, {"chekcer", "checker", 1}, {"é", "e", 1},
	} {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := distance(c.b, c.a); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

// TestClosest: a near misspelling gets the names it misspells, a prefix
// the names it begins, and a name far from all of them nothing.
func TestClosest(t *testing.T) {
	levels := []string{"read-committed", "serializable", "strict-serializable", "snapshot-isolation", "ser", "si"}
	for _, c := range []struct {
		s    string
		want []string
	}{
		{"serialisable", []string{"serializable"}},
		{"Serialisable", []string{"serializable"}},
		{"strict", []string{"strict-serializable"}},
		{"snapshot", []string{"snapshot-isolation"}},
		{"sr", []string{"ser", "si"}},
		{"foo", nil},
		{"", nil},
		{"linearizable-ish", nil},
	} {
		if got := Closest(c.s, levels); !slices.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.s, got, c.want)
		}
	}
}

// TestUnknown words the error with and without a suggestion, the known
// names comma-separated, and suggests an alias without listing it.
func TestUnknown(t *testing.T) {
	known := []string{"lost-update", "write-skew"}
	for _, c := range []struct {
		s    string
		also []string
		want string
	}{
		{"lost-updat", nil, `unknown kind "lost-updat"; did you mean "lost-update"? (known: lost-update, write-skew)`},
		{"nothing", nil, `unknown kind "nothing" (known: lost-update, write-skew)`},
		{"lu2", []string{"lu"}, `unknown kind "lu2"; did you mean "lu"? (known: lost-update, write-skew)`},
	} {
		if got := Unknown("kind", c.s, known, c.also...).Error(); got != c.want {
			t.Errorf("Unknown(%q) = %s\nwant %s", c.s, got, c.want)
		}
	}
	if got := DidYouMean([]string{"a", "b", "c"}); got != ` did you mean "a", "b" or "c"?` {
		t.Errorf("DidYouMean of three = %q", got)
	}
}
