package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageErrorsSuggest: a misspelt level, checker, workload, format,
// plantable anomaly, flag or command is bad usage (exit status 2) whose message
// starts with the flag it blames (not the history file), offers the
// nearest valid value, and lists the valid values comma-separated (not as
// a Go slice).
func TestUsageErrorsSuggest(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "given-history.jsonl")
	if err := os.WriteFile(hist, []byte(serial), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args        []string
		start, want string
		list        string
	}{
		{[]string{"check", "--level", "serialisable", hist}, "--level: unknown isolation level", `did you mean "serializable"?`, "read-uncommitted, read-committed, "},
		{[]string{"check", "--level", "snapshot", hist}, "--level: unknown isolation level", `did you mean "snapshot-isolation"?`, ", snapshot-isolation, "},
		{[]string{"run", "--level", "serialisable"}, "--level: unknown isolation level", `did you mean "serializable"?`, ", strict-serializable)"},
		{[]string{"check", "--checker", "chrono", hist}, "--checker: unknown checker", `did you mean "chronos"?`, "auto, chronos, lwt, "},
		{[]string{"check", "--checker", "foo", hist}, "--checker: unknown checker", "", "auto, chronos, lwt, "},
		{[]string{"check", "--format", "jepson", hist}, "--format: unknown format", `did you mean "jepsen"?`, "auto, isoscope, cobra, "},
		{[]string{"convert", "--from", "dbcp", hist, filepath.Join(dir, "out.jsonl")}, "--from: unknown format", `did you mean "dbcop"?`, "auto, isoscope, cobra, "},
		{[]string{"run", "--workload", "list-apend"}, "--workload: unknown workload", `did you mean "list-append"?`, "mt, general, list-append, "},
		{[]string{"gen", "--workload", "randombnch"}, "--workload: unknown workload", `did you mean "randombench"?`, "mt, general, list-append, awdit, randombench, "},
		{[]string{"gen", "--txns", "10", "--plant", "lost-updat"}, "--plant: unknown plantable anomaly", `did you mean "lost-update"?`, ", lost-update, write-skew, "},
		{[]string{"gen", "--txns", "10", "--plant", "cycle"}, `--plant: unknown plantable anomaly "cycle"`, "", ", lost-update, write-skew, "},
		{[]string{"gen", "--mode", "serail"}, "--mode: unknown mode", `did you mean "serial"?`, "serial, si, causal"},
		{[]string{"gen", "--dist", "zipfain"}, "--dist: unknown key distribution", `did you mean "zipfian"?`, "uniform, zipfian, hotspot, exponential"},
		{[]string{"gen", "--ts-fault", "skw"}, "--ts-fault: unknown timestamp fault", `did you mean "skew"?`, "early-commit, skew"},
		{[]string{"run", "--isolation", "serializble"}, "--isolation: unknown isolation", `did you mean "serializable"?`, "serializable, repeatable-read, read-committed, read-uncommitted"},
		{[]string{"check", "--module", "comit-order", hist}, "--module: unknown module", `did you mean "commit-order"?`, "commit-order, innodb-rr, "},
		{[]string{"check", "--levle", "ser", hist}, "unknown flag --levle", `did you mean "--level"?`, "isoscope check --help lists the flags"},
		{[]string{"check", "-level", "ser", hist}, "unknown flag -level", `did you mean "--level"?`, "isoscope check --help lists the flags"},
		{[]string{"gen", "--plnat", "write-skew"}, "unknown flag --plnat", `did you mean "--plant"?`, "isoscope gen --help lists the flags"},
		{[]string{"check", "--frobnicate", hist}, "unknown flag --frobnicate", "", "isoscope check --help lists the flags"},
		{[]string{"chek", hist}, `unknown command "chek"`, `did you mean "check"?`, "isoscope --help lists the commands"},
		{[]string{"gne", "--txns", "3"}, `unknown command "gne"`, `did you mean "gen"?`, "isoscope --help lists the commands"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "", "isoscope --help lists the commands"},
	} {
		code, out, errs := run(t, "", tc.args...)
		if code != ExitBadInput || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", tc.args, code, out)
		}
		msg, ok := strings.CutPrefix(strings.TrimSpace(errs), "isoscope: ")
		switch {
		case !ok || !strings.HasPrefix(msg, tc.start):
			t.Errorf("%q: %q does not start with %q", tc.args, errs, tc.start)
		case tc.want == "" && strings.Contains(msg, "did you mean"):
			t.Errorf("%q: %q suggests where nothing is near", tc.args, errs)
		case !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.list):
			t.Errorf("%q: %q lacks %q or %q", tc.args, errs, tc.want, tc.list)
		case strings.Contains(msg, "given-history") || strings.ContainsAny(msg, "[]"):
			t.Errorf("%q: %q blames the file or lists a Go slice", tc.args, errs)
		case strings.Count(errs, "\n") != 1:
			t.Errorf("%q: %q is not one line", tc.args, errs)
		}
	}
}

// TestUsageArgs: a command given too few or too many arguments says what
// it wants and how it is called, with exit status 2.
func TestUsageArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "check needs a history: isoscope check [flags] FILE… (a file, a directory of a Cobra or Viper log, a Jepsen store, or - for standard input)"},
		{[]string{"convert", "in.jsonl"}, "convert needs two files, IN and OUT: isoscope convert [flags] IN OUT"},
		{[]string{"convert", "a", "b", "c"}, "convert takes two files, IN and OUT, not 3 arguments: isoscope convert [flags] IN OUT"},
		{[]string{"report", "result.json"}, "report needs a result and the histories it judged: isoscope report [flags] RESULT.json HISTORY…"},
		{[]string{"gen", "history.jsonl"}, `gen takes no arguments, only flags (got "history.jsonl"): isoscope gen [flags]`},
		{[]string{"cluster", "up"}, "cluster up needs one cluster kind: isoscope cluster up KIND[:NODES]"},
		{[]string{"publish"}, "publish needs one history file: isoscope publish FILE --nats URL [--shards N]"},
	} {
		code, _, errs := run(t, "", tc.args...)
		if code != ExitBadInput || !strings.HasPrefix(errs, "isoscope: "+tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestCheckHelpGroupsFlags: check --help lists the everyday flags first,
// then the model, the reading limits, and the solver's switches under an
// Advanced heading; run's help puts its check and its online checking
// under headings of their own.
func TestCheckHelpGroupsFlags(t *testing.T) {
	sections := func(args ...string) map[string]string {
		_, out, _ := run(t, "", args...)
		got := map[string]string{}
		head := ""
		for _, line := range strings.Split(out, "\n") {
			if line != "" && !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
				head = strings.TrimSuffix(line, ":")
				continue
			}
			// A flag's line is indented by at most 6 spaces; its
			// description's continuation lines, deeper.
			if indent := len(line) - len(strings.TrimLeft(line, " ")); indent > 6 {
				continue
			}
			if f := strings.Fields(line); len(f) > 0 {
				for _, w := range f[:min(2, len(f))] {
					if strings.HasPrefix(w, "--") {
						got[w] = head
					}
				}
			}
		}
		return got
	}
	advanced := "Advanced (the solver's switches and bounds, for measuring it)"
	for flag, want := range map[string]string{
		"--level": "Flags", "--checker": "Flags", "--json": "Flags", "--report": "Flags", "--timeout": "Flags",
		"--own-reads": "Model (what a history is checked against)", "--module": "Model (what a history is checked against)",
		"--max-line-mb": "Reading limits",
		"--no-chrono":   advanced, "--no-prune": advanced, "--no-prioritize": advanced, "--no-two-width": advanced,
		"--no-unsat-search": advanced, "--dense-pairs": advanced, "--max-derived": advanced,
		"--cpuprofile": "Global Flags",
	} {
		if got := sections("check", "--help")[flag]; got != want {
			t.Errorf("check --help: %s under %q, want %q", flag, got, want)
		}
	}
	for flag, want := range map[string]string{
		"--db": "Flags", "--workload": "Flags", "--level": "Checking the history", "--collector": "Online checking (--collector)",
		"--no-chrono": advanced,
	} {
		if got := sections("run", "--help")[flag]; got != want {
			t.Errorf("run --help: %s under %q, want %q", flag, got, want)
		}
	}
	_, out, _ := run(t, "", "check", "--help")
	if i, j := strings.Index(out, "\nFlags:"), strings.Index(out, "\n"+advanced+":"); i < 0 || j < i {
		t.Errorf("check --help: the Advanced heading is not after the everyday flags:\n%s", out)
	}
	if strings.Contains(out, "[chronos") {
		t.Errorf("check --help lists the checkers as a Go slice:\n%s", out)
	}
}
