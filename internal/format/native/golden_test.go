package native_test

import (
	"path/filepath"
	"testing"

	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/golden"
)

// TestGolden reads a small file (header with initial values, two sessions,
// instants, an aborted and an unknown transaction, string and integer ids)
// and compares the history with testdata/small.golden.
func TestGolden(t *testing.T) {
	h := formattest.ReadFile(t, filepath.Join("testdata", "small.jsonl"), native.Read)
	golden.Check(t, "testdata/small.golden", formattest.Render(h))
}
