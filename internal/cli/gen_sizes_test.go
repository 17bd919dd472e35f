package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenRefusesEmptySizes: gen refuses a size below 1 — no
// transactions, faults, operations, value domain, range width or
// iterator length — with exit 2, naming the flag, and writes no file.
// Before, --txns 0 wrote a history check then refused as empty, and
// --ts-faults 0, --value-domain 0, --min-width 0 and --max-iter 0 were
// silently ignored (no fault planted, the defaults used).
func TestGenRefusesEmptySizes(t *testing.T) {
	for _, c := range []struct {
		flag string // the flag the refusal names
		args []string
	}{
		{"--txns 0", []string{"--txns", "0"}},
		{"--txns -5", []string{"--txns", "-5"}},
		{"--sessions 0", []string{"--sessions", "0"}},
		{"--keys -3", []string{"--keys", "-3"}},
		{"--ops 0", []string{"--ops", "0", "--workload", "general"}},
		{"--ops 0", []string{"--ops", "0", "--workload", "randomrange"}},
		{"--ts-faults 0", []string{"--ts-fault", "skew", "--ts-faults", "0"}},
		{"--value-domain 0", []string{"--value-domain", "0", "--workload", "randomrange"}},
		{"--min-width 0", []string{"--min-width", "0", "--workload", "randomrange"}},
		{"--max-width -1", []string{"--max-width", "-1", "--workload", "randomrange"}},
		{"--max-iter 0", []string{"--max-iter", "0", "--workload", "randombench"}},
	} {
		out := filepath.Join(t.TempDir(), "g.jsonl")
		code, _, errs := mainOut(append([]string{"gen", "-o", out}, c.args...)...)
		if code != ExitBadInput || !strings.Contains(errs, c.flag+": ") {
			t.Errorf("gen %v: exit %d, want 2 naming %s\n%s", c.args, code, c.flag, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("gen %v wrote %s", c.args, out)
		}
	}
	out := filepath.Join(t.TempDir(), "one.jsonl")
	if code, _, errs := mainOut("gen", "--txns", "1", "-o", out); code != 0 {
		t.Fatalf("gen --txns 1: exit %d\n%s", code, errs)
	}
	if code, stdout, errs := mainOut("check", out); code != 0 {
		t.Errorf("check of gen --txns 1: exit %d\n%s%s", code, stdout, errs)
	}
}
