package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
)

// TestMemoryFlag: --memory-mb takes a number of megabytes (a negative one
// is bad usage), its default is three quarters of the machine's memory
// without GOMEMLIMIT, and a check under it sets Go's soft limit to its Go
// share only while it runs.
func TestMemoryFlag(t *testing.T) {
	name := filepath.Join(t.TempDir(), "lost.jsonl")
	if err := os.WriteFile(name, []byte(lostUpdate), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "", "check", "--memory-mb", "-1", name); code != ExitBadInput || !strings.Contains(errs, "--memory-mb -1") {
		t.Errorf("--memory-mb -1: exit %d: %s", code, errs)
	}
	before := debug.SetMemoryLimit(-1)
	if code, out, errs := run(t, "", "check", "--memory-mb", "512", name); code != ExitViolation {
		t.Errorf("--memory-mb 512: exit %d\n%s%s", code, out, errs)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("the soft limit was %d before the check and %d after", before, after)
	}
	if os.Getenv("GOMEMLIMIT") == "" && physicalMemory() > 0 {
		// The cgroup's limit, when lower, lowers it.
		if got, want := defaultMemoryMB(), int(physicalMemory()/4*3>>20); got <= 0 || got > want {
			t.Errorf("default --memory-mb %d, want at most %d", got, want)
		}
	}
}

// TestBoundMemory: past its bound the watchdog cancels the check's context
// with a ResourceLimitError as its cause, and sets Go's soft limit to
// the Go share meanwhile.
func TestBoundMemory(t *testing.T) {
	ctx, release := boundMemory(context.Background(), 1) // 1 MB: already passed
	defer release()
	if lim := debug.SetMemoryLimit(-1); lim != goShare(1) {
		t.Errorf("soft limit %d, want %d", lim, goShare(1))
	}
	<-ctx.Done()
	var rl *check.ResourceLimitError
	if cause := context.Cause(ctx); !errors.As(cause, &rl) || !strings.Contains(rl.Error(), "resource limit: memory") {
		t.Fatalf("cause %v", cause)
	}
}
