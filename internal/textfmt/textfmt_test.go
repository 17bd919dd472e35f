package textfmt

import "testing"

// TestThousands checks the separators, for small, large and negative
// numbers.
func TestThousands(t *testing.T) {
	for n, want := range map[int]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 123456: "123,456",
		1234567: "1,234,567", 1000000: "1,000,000", -1: "-1", -999: "-999", -1000: "-1,000", -1234567: "-1,234,567",
	} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
