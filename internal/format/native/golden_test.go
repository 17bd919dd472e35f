package native_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/format/native"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestGolden reads a small file (header with initial values, two sessions,
// instants, an aborted and an unknown transaction, string and integer ids)
// and compares the history with testdata/small.golden.
func TestGolden(t *testing.T) {
	h := formattest.ReadFile(t, filepath.Join("testdata", "small.jsonl"), native.Read)
	formattest.Golden(t, "small.golden", formattest.Render(h), *update)
}
