package txnend

import (
	"slices"
	"testing"
)

// TestAbortClasses checks the classes reports list, in their order, by
// the names the plots show.
func TestAbortClasses(t *testing.T) {
	var names []string
	for _, c := range AbortClasses {
		names = append(names, c.String())
	}
	if want := []string{"serialization failure", "deadlock", "lock timeout", "connection lost", "no answer", "interrupted", "other"}; !slices.Equal(names, want) {
		t.Errorf("classes %q", names)
	}
}
