package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestChronosEndToEnd generates timestamped histories, with and without
// planted timestamp faults, and checks them with chronos, named and
// chosen by auto.
func TestChronosEndToEnd(t *testing.T) {
	dir := t.TempDir()
	gen := func(name string, args ...string) (string, string) {
		t.Helper()
		file := filepath.Join(dir, name+".jsonl")
		all := append([]string{"gen", "--txns", "2000", "--keys", "100", "--seed", "3", "--out", file}, args...)
		code, _, errs := run(t, "", all...)
		if code != ExitHolds {
			t.Fatalf("gen %v: exit %d: %s", args, code, errs)
		}
		return file, errs
	}
	siFile, _ := gen("si", "--mode", "si", "--timestamps")
	serialFile, _ := gen("serial", "--workload", "general", "--ops", "8", "--timestamps")
	earlyFile, earlyErr := gen("early", "--mode", "si", "--ts-fault", "early-commit", "--ts-faults", "2")
	skewFile, skewErr := gen("skew", "--workload", "blindw", "--blindw-mixed", "--ts-fault", "skew")
	plainFile, _ := gen("plain", "--mode", "si")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
	}{
		{"si holds", []string{"check", "--level", "si", "--checker", "chronos", siFile}, ExitHolds, []string{"snapshot-isolation holds (checker chronos"}},
		{"auto picks chronos", []string{"check", "--level", "si", siFile}, ExitHolds, []string{"checker chronos"}},
		{"si is not commit-order serializable", []string{"check", "--level", "ser", "--checker", "chronos", siFile}, ExitViolation, []string{"stale-read", "commit_ts"}},
		{"serial holds ser", []string{"check", "--level", "ser", serialFile}, ExitHolds, []string{"serializable holds (checker chronos"}},
		{"early commit", []string{"check", "--level", "si", earlyFile}, ExitViolation, []string{"checker chronos", "stale-read [G-SIb]", "start_ts"}},
		{"skew", []string{"check", "--level", "ser", skewFile}, ExitViolation, []string{"checker chronos", "read-beyond-snapshot", "commit_ts"}},
		{"json", []string{"check", "--level", "si", "--json", earlyFile}, ExitViolation, []string{`"checker":"chronos"`, `"kind":"stale-read"`, `"phenomenon":"G-SIb"`}},
		{"no timestamps: named chronos declines", []string{"check", "--level", "si", "--checker", "chronos", plainFile}, ExitBadInput, nil},
		{"no timestamps: auto picks another", []string{"check", "--level", "si", plainFile}, ExitHolds, []string{"checker mt"}},
		{"rc is not chronos's", []string{"check", "--level", "rc", "--checker", "chronos", siFile}, ExitBadInput, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tc.code, out, errs)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(strings.ReplaceAll(out, `": "`, `":"`), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
	for _, e := range []string{earlyErr, skewErr} {
		if !strings.Contains(e, "timestamp fault") {
			t.Errorf("gen did not say where it planted the faults: %q", e)
		}
	}
}

func TestGenTimestampErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ts-fault", "nope"}, "unknown timestamp fault"},
		{[]string{"--timestamps", "--plant", "lost-update"}, "no database timestamps"},
		{[]string{"--ts-fault", "skew", "--ts-faults", "100000", "--txns", "50"}, "faults fit"},
	} {
		code, out, errs := run(t, "", append([]string{"gen", "--out", filepath.Join(t.TempDir(), "x.jsonl")}, tc.args...)...)
		if code != ExitBadInput || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q stderr %q; want exit %d and %q", tc.args, code, out, errs, ExitBadInput, tc.want)
		}
	}
}
