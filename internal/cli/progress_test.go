package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunProgressAlways: run --progress always, standard error not a
// terminal, writes a plain status line of the transactions done every
// interval (here 100 ms through ISOSCOPE_PROGRESS_INTERVAL) while it runs;
// --progress auto writes none there; --progress sometimes is bad input.
func TestRunProgressAlways(t *testing.T) {
	t.Setenv(progressIntervalEnv, "100ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	line := regexp.MustCompile(`(?m)^isoscope: running: \d+ transactions done, committed \d+, aborted \d+.* \(\d+\.\ds\)$`)
	for _, mode := range []string{"always", "auto"} {
		file := filepath.Join(t.TempDir(), "p.jsonl")
		code, out, errs := runRunWith(t, ctx, &runCommand{}, "--duration", "1s", "--sessions", "4", "--keys", "20", "--seed", "3", "--progress", mode, "-o", file)
		if code != ExitHolds {
			t.Fatalf("--progress %s: exit %d\n%s%s", mode, code, out, errs)
		}
		n := len(line.FindAllString(errs, -1))
		if mode == "always" && n < 5 || mode == "auto" && n != 0 {
			t.Errorf("--progress %s: %d status lines in a 1 s run at 100 ms:\n%s", mode, n, errs)
		}
	}
	code, _, errs := runRunWith(t, ctx, &runCommand{}, "--progress", "sometimes")
	if code != ExitBadInput || !strings.Contains(errs, "--progress") {
		t.Errorf("--progress sometimes: exit %d\n%s", code, errs)
	}
}
