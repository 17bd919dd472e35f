// Package testbin builds the isoscope binary once per test process, for
// the tests that run it as a process of its own (signals, exit statuses,
// sharded workers).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once  sync.Once
	built string
	err   error
)

// Isoscope returns the path of the isoscope binary built from this
// checkout, building it at the first call; a failed build fails t.
func Isoscope(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		dir, mkErr := os.MkdirTemp("", "isoscope-bin")
		if mkErr != nil {
			err = mkErr
			return
		}
		built = filepath.Join(dir, "isoscope")
		out, buildErr := exec.Command("go", "build", "-o", built, "github.com/isoscope/isoscope/cmd/isoscope").CombinedOutput()
		if buildErr != nil {
			err = fmt.Errorf("go build: %v\n%s", buildErr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return built
}
