package history

import "testing"

// TestFaultLabel: a fault's label names its kind, its node and a clock
// fault's offset with its sign.
func TestFaultLabel(t *testing.T) {
	for want, f := range map[string]Fault{
		"partition n2":    {Kind: "partition", Node: "n2"},
		"cut":             {Kind: "cut"},
		"clock n1 -1m23s": {Kind: "clock", Node: "n1", Offset: -83e9},
		"clock n3 +2.5s":  {Kind: "clock", Node: "n3", Offset: 2.5e9},
		"clock +10m0s":    {Kind: "clock", Offset: 600e9},
	} {
		if got := f.Label(); got != want {
			t.Errorf("%+v: %q, want %q", f, got, want)
		}
	}
}
