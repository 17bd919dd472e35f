package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mainOut runs Main with args and returns its exit status and output.
func mainOut(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

// fiveLostUpdates writes a history with five planted lost updates.
func fiveLostUpdates(t *testing.T) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "lost.jsonl")
	if code, _, errs := mainOut("gen", "--txns", "2000", "--plant", "lost-update,lost-update,lost-update,lost-update,lost-update", "-o", name); code != 0 {
		t.Fatalf("gen: exit %d\n%s", code, errs)
	}
	return name
}

// shownCycle is a shown anomaly's cycle in the text output.
var shownCycle = regexp.MustCompile(`(?m)^  T\d+ --`)

// TestMaxShown: check's --max-shown 0 gives the counts only, -1 every
// anomaly, 2 two and how many more; below -1 is bad input. Before, 0 and
// -1 showed three, as the default does.
func TestMaxShown(t *testing.T) {
	name := fiveLostUpdates(t)
	for _, c := range []struct {
		flag  string
		shown int
		more  string
	}{{"0", 0, ""}, {"-1", 5, ""}, {"2", 2, "… and 3 more"}, {"3", 3, "… and 2 more"}} {
		code, out, errs := mainOut("check", "--max-shown", c.flag, name)
		if code != ExitViolation || !strings.Contains(out, "lost-update [G2-item]: 5\n") {
			t.Fatalf("--max-shown %s: exit %d\n%s%s", c.flag, code, out, errs)
		}
		if n := len(shownCycle.FindAllString(out, -1)); n != c.shown {
			t.Errorf("--max-shown %s: %d anomalies shown, want %d\n%s", c.flag, n, c.shown, out)
		}
		if got := strings.Contains(out, "… and"); got != (c.more != "") || c.more != "" && !strings.Contains(out, c.more) {
			t.Errorf("--max-shown %s: want %q\n%s", c.flag, c.more, out)
		}
	}
	for _, cmd := range []string{"check", "report", "run"} {
		args := []string{cmd, "--max-shown", "-2", name}
		switch cmd {
		case "report":
			args = append(args, name)
		case "run":
			// Refused before it runs; were it not, its history goes here.
			args = append(args[:3], "--txns", "10", "-o", filepath.Join(t.TempDir(), "run.jsonl"))
		}
		code, _, errs := mainOut(args...)
		if code != ExitBadInput || !strings.Contains(errs, "--max-shown -2") {
			t.Errorf("%s --max-shown -2: exit %d\n%s", cmd, code, errs)
		}
	}
}

// TestReportMaxShown: report's --max-shown 0 draws no anomaly's picture,
// -1 every one, 2 two. Before, 0 and -1 drew the default 25 (here all 5).
func TestReportMaxShown(t *testing.T) {
	name := fiveLostUpdates(t)
	code, result, errs := mainOut("check", "--json", name)
	if code != ExitViolation {
		t.Fatalf("check --json: exit %d\n%s", code, errs)
	}
	resultFile := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(resultFile, []byte(result), 0o644); err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]int{"0": 0, "-1": 5, "2": 2} {
		dir := filepath.Join(t.TempDir(), "report")
		if code, _, errs := mainOut("report", "--max-shown", flag, "--out", dir, resultFile, name); code != 0 {
			t.Fatalf("report --max-shown %s: exit %d\n%s", flag, code, errs)
		}
		pictures, err := filepath.Glob(filepath.Join(dir, "lost-update-*.svg"))
		if err != nil {
			t.Fatal(err)
		}
		if len(pictures) != want {
			t.Errorf("report --max-shown %s: %d pictures, want %d", flag, len(pictures), want)
		}
		page, err := os.ReadFile(filepath.Join(dir, "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(page, []byte("lost-update")) {
			t.Errorf("report --max-shown %s: the page does not name the kind", flag)
		}
	}
}
