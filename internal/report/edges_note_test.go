package report

import (
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/evidence"
)

// TestBestFoundNoteCounts: the note of a best-found cycle tells the
// solver's choices apart from the forced edges, and calls a cycle with
// no chosen edge certain rather than saying it rests on open
// dependencies.
func TestBestFoundNoteCounts(t *testing.T) {
	forced := []evidence.Edge{{Basis: evidence.Read}, {Basis: evidence.Inferred}}
	if n := BestFoundNote(forced); !strings.Contains(n, "the cycle itself is certain") || strings.Contains(n, "solver's choice") {
		t.Errorf("all edges forced: %q", n)
	}
	one := []evidence.Edge{{Basis: evidence.Read}, {Basis: evidence.Chosen}}
	if n := BestFoundNote(one); !strings.Contains(n, "one of its edges is the solver's choice") {
		t.Errorf("one chosen: %q", n)
	}
	two := []evidence.Edge{{Basis: evidence.Chosen}, {Basis: evidence.Chosen}, {Basis: evidence.Read}}
	if n := BestFoundNote(two); !strings.Contains(n, "2 of its 3 edges are the solver's choice") {
		t.Errorf("two chosen: %q", n)
	}
}
