package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGenListAppendThenCheck: gen --workload list-append writes a history
// that holds at SSER (serial) and at SI (si mode), and one with planted
// anomalies that check refutes, naming every planted group on stderr.
func TestGenListAppendThenCheck(t *testing.T) {
	dir := t.TempDir()
	serial, si, planted := filepath.Join(dir, "serial.jsonl"), filepath.Join(dir, "si.jsonl"), filepath.Join(dir, "planted.jsonl")
	if code, _, errs := run(t, "", "gen", "--workload", "list-append", "--txns", "3000", "--seed", "4", "--out", serial); code != ExitHolds {
		t.Fatalf("gen: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "", "gen", "--workload", "list-append", "--mode", "si", "--txns", "3000", "--unknown-ratio", "0.1", "--out", si); code != ExitHolds {
		t.Fatalf("gen si: exit %d: %s", code, errs)
	}
	code, _, errs := run(t, "", "gen", "--workload", "list-append", "--txns", "3000", "--plant", "g1c,lost-update", "--out", planted)
	if code != ExitHolds || !strings.Contains(errs, "planted g1c: transactions") || !strings.Contains(errs, "planted lost-update: transactions") {
		t.Fatalf("gen planted: exit %d: %s", code, errs)
	}
	if code, out, _ := run(t, "", "check", "--level", "sser", "--no-holds", serial); code != ExitHolds {
		t.Errorf("serial list-append at SSER: exit %d: %s", code, out)
	}
	if code, out, _ := run(t, "", "check", "--level", "si", "--no-holds", si); code != ExitHolds {
		t.Errorf("SI list-append at SI: exit %d: %s", code, out)
	}
	code, out, _ := run(t, "", "check", "--level", "si", "--no-holds", planted)
	if code != ExitViolation || !strings.Contains(out, "G1c") || !strings.Contains(out, "lost-update") {
		t.Errorf("planted list-append at SI: exit %d: %s", code, out)
	}
	for _, args := range [][]string{
		{"--plant", "write-skw"},
		{"--timestamps"},
		{"--mode", "causal"},
		{"--appends-per-key", "-1"},
	} {
		code, _, errs := run(t, "", append([]string{"gen", "--workload", "list-append", "--txns", "10"}, args...)...)
		if code != ExitBadInput || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
