package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenAWDITThenCheck: gen --workload awdit writes a history of exactly
// --events operations over ⌈√events⌉ sessions that holds at causal
// consistency, one with stale reads that check refutes, and refuses
// what the workload cannot do with exit 2, writing nothing.
func TestGenAWDITThenCheck(t *testing.T) {
	dir := t.TempDir()
	clean, stale := filepath.Join(dir, "clean.jsonl"), filepath.Join(dir, "stale.jsonl")
	if code, _, errs := run(t, "", "gen", "--workload", "awdit", "--events", "2500", "--seed", "3", "--out", clean); code != ExitHolds {
		t.Fatalf("gen: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "", "gen", "--workload", "awdit", "--events", "4000", "--keys", "20", "--stale", "0.2", "--seed", "3", "--out", stale); code != ExitHolds {
		t.Fatalf("gen stale: exit %d: %s", code, errs)
	}
	code, out, _ := run(t, "", "check", "--level", "causal", "--no-holds", clean)
	if code != ExitHolds || !strings.Contains(out, "50 sessions, 2500 operations") {
		t.Errorf("AWDIT-shaped history at causal: exit %d: %s", code, out)
	}
	if code, out, _ := run(t, "", "check", "--level", "causal", "--no-holds", stale); code != ExitViolation {
		t.Errorf("stale AWDIT-shaped history at causal: exit %d: %s", code, out)
	}
	for i, args := range [][]string{
		{"--events", "-1"},
		{"--mode", "si"},
		{"--plant", "g1c"},
		{"--timestamps"},
		{"--keys", "0"},
	} {
		out := filepath.Join(dir, "bad"+string(rune('a'+i))+".jsonl")
		code, _, errs := run(t, "", append([]string{"gen", "--workload", "awdit", "--events", "100", "--out", out}, args...)...)
		if code != ExitBadInput || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: wrote %s", args, out)
		}
	}
}
