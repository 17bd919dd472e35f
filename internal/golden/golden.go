// Package golden keeps tests' expected output in golden files: Check
// compares what a test got with a file under the package's testdata
// directory, and `go test -update` rewrites the files instead (review the
// diff before committing it). It is for tests only: it defines the one
// -update flag of every test binary that imports it, so that no test
// package declares its own.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Updating reports whether the test runs with -update: golden files are
// then written, not compared.
func Updating() bool { return *update }

// Check compares got with the golden file at path (relative to the test's
// package directory, e.g. "testdata/small.golden") and fails the test at
// the first line that differs. Under -update it writes got to path
// instead, creating its directory.
func Check[T ~string | ~[]byte](t testing.TB, path string, got T) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal([]byte(got), want) {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff):\n%s", path, FirstDiff(string(want), string(got)))
	}
}

// FirstDiff shows the first line where got differs from want, each cut to
// 300 bytes.
func FirstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %.300s\ngot  %.300s", i+1, w, g)
		}
	}
	return "(same lines)"
}
