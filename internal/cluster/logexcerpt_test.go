package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogExcerptShowsTheCause: a failed start's error shows the log's
// error lines, which come well before the shutdown lines at its end, and
// then the end of the log.
func TestLogExcerptShowsTheCause(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "node.log")
	lines := []string{
		"2026-12-07  6:17:05 0 [Note] WSREP: starting",
		"2026-12-07  6:17:06 0 [ERROR] WSREP: failed to open IST listener at tcp://127.0.0.1:40123: Address already in use",
	}
	for i := 0; i < 20; i++ {
		lines = append(lines, "2026-12-07  6:17:07 0 [Note] WSREP: shutting down, step")
	}
	lines = append(lines, "2026-12-07  6:17:07 1 [Note] WSREP: /usr/sbin/mariadbd: Terminated.")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logExcerpt(file)
	if !strings.Contains(got, "its errors:\n  "+lines[1]) {
		t.Errorf("the error line is missing:\n%s", got)
	}
	if !strings.HasSuffix(got, "Terminated.") || !strings.Contains(got, "the end of its log:\n") {
		t.Errorf("the end of the log is missing:\n%s", got)
	}
	if strings.Contains(got, "starting") {
		t.Errorf("a line that is neither an error nor at the end is shown:\n%s", got)
	}

	quiet := filepath.Join(dir, "quiet.log")
	if err := os.WriteFile(quiet, []byte("ready\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := logExcerpt(quiet); strings.Contains(got, "its errors") || !strings.Contains(got, "ready") {
		t.Errorf("a log without errors: %q", got)
	}
	if got := logExcerpt(filepath.Join(dir, "absent.log")); !strings.Contains(got, "no such file") {
		t.Errorf("a missing log: %q", got)
	}
}
