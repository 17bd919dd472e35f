package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeT records a Check's first failure instead of failing the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) fail(how string) {
	if f.failed == "" {
		f.failed = how
	}
}
func (f *fakeT) Errorf(string, ...any) { f.fail("Errorf") }
func (f *fakeT) Fatalf(string, ...any) { f.fail("Fatalf") }

func TestCheck(t *testing.T) {
	if Updating() {
		t.Skip("-update writes golden files; this test compares")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, got, failed string
	}{
		{path, "a\nb\n", ""},
		{path, "a\nc\n", "Errorf"},
		{filepath.Join(dir, "missing.golden"), "a\n", "Fatalf"},
	} {
		f := &fakeT{TB: t}
		Check(f, c.path, c.got)
		if f.failed != c.failed {
			t.Errorf("%s with %q: %q, want %q", c.path, c.got, f.failed, c.failed)
		}
		f = &fakeT{TB: t}
		Check(f, c.path, []byte(c.got))
		if f.failed != c.failed {
			t.Errorf("%s with bytes %q: %q, want %q", c.path, c.got, f.failed, c.failed)
		}
	}
	if d := FirstDiff("a\nb\nc", "a\nb\nd"); !strings.HasPrefix(d, "line 3:") {
		t.Errorf("FirstDiff: %q", d)
	}
	if d := FirstDiff("a", "a"); d != "(same lines)" {
		t.Errorf("FirstDiff of the same: %q", d)
	}
}
