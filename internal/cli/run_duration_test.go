package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunDuration: --duration alone runs past --txns' default on an
// endless plan and stops by itself, not interrupted, with the level
// holding and the history's transactions spread over at least half the
// duration; with --txns too the count comes first; a negative duration is
// bad input.
func TestRunDuration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "d.jsonl")
	code, out, errs := runRunWith(t, ctx, &runCommand{}, "--duration", "2s", "--sessions", "4", "--keys", "20", "--seed", "3", "-o", file)
	if code != ExitHolds || !strings.HasPrefix(out, "serializable holds") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "4 sessions, for 2s,") || strings.Contains(errs, "interrupted") {
		t.Errorf("the summary does not say the run went for 2s:\n%s", errs)
	}
	h := readHistoryFile(t, file)
	if !strings.Contains(h.Header.Source, "txns=unbounded") || !strings.Contains(h.Header.Source, "duration=2s") {
		t.Errorf("source %q", h.Header.Source)
	}
	first, last := h.Txns[0].Begin, int64(0)
	for _, tx := range h.Txns {
		first, last = min(first, tx.Begin), max(last, tx.End)
	}
	if span := time.Duration(last - first); span < time.Second {
		t.Errorf("the transactions span %s of a 2s run", span)
	}

	file = filepath.Join(t.TempDir(), "n.jsonl")
	code, _, errs = runRunWith(t, ctx, &runCommand{}, "--duration", "1h", "--txns", "300", "--seed", "3", "-o", file)
	if h := readHistoryFile(t, file); code != ExitHolds || len(h.Txns) != 300 {
		t.Errorf("--duration 1h --txns 300: exit %d, %d transactions, want 300\n%s", code, len(h.Txns), errs)
	}
	if code, _, errs := runRunWith(t, ctx, &runCommand{}, "--duration", "-1s"); code != ExitBadInput || !strings.Contains(errs, "--duration") {
		t.Errorf("a negative duration: exit %d\n%s", code, errs)
	}
}
