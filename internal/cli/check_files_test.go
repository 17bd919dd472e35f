package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes each name's content into a new directory and returns
// the paths, in the order of names.
func writeFiles(t *testing.T, names []string, content map[string]string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(content[n]), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestCheckSeveralFiles: with several files, each gets its own result,
// an unreadable one included, and the exit status is the most severe:
// violation, then bad input, then undecided, then holds.
func TestCheckSeveralFiles(t *testing.T) {
	content := map[string]string{
		"violation.jsonl": lostUpdate,
		"holds.jsonl":     serial,
		"untimed.jsonl":   untimedSerial,
		"bad.jsonl":       serial + `{"id":3,"session":0,"ops":[["zap","x"]]}` + "\n",
		"garbage.txt":     "garbage\n",
	}
	for _, tc := range []struct {
		files []string
		code  int
	}{
		{[]string{"violation.jsonl", "bad.jsonl", "garbage.txt"}, ExitViolation},
		{[]string{"bad.jsonl", "violation.jsonl"}, ExitViolation},
		{[]string{"holds.jsonl", "bad.jsonl"}, ExitBadInput},
		{[]string{"untimed.jsonl", "garbage.txt", "holds.jsonl"}, ExitBadInput},
		{[]string{"untimed.jsonl", "holds.jsonl"}, ExitUnknown},
		{[]string{"untimed.jsonl", "violation.jsonl"}, ExitViolation},
		{[]string{"holds.jsonl", "holds.jsonl"}, ExitHolds},
	} {
		t.Run(strings.Join(tc.files, "+"), func(t *testing.T) {
			paths := writeFiles(t, tc.files, content)
			args := append([]string{"check", "--level", "sser"}, paths...)
			code, out, errs := run(t, "", args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, tc.code, out, errs)
			}
			lines := strings.Split(out, "\n")
			want := map[string]string{
				"violation.jsonl": "strict-serializable VIOLATED",
				"holds.jsonl":     "strict-serializable holds",
				"untimed.jsonl":   "strict-serializable UNKNOWN",
				"bad.jsonl":       "NOT CHECKED: ",
				"garbage.txt":     "NOT CHECKED: cannot tell the history format",
			}
			for i, f := range tc.files {
				prefix := paths[i] + ": " + want[f]
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, prefix)
				}
				if !found {
					t.Errorf("no line starting %q in\n%s", prefix, out)
				}
			}
			for i, f := range tc.files {
				if strings.HasPrefix(want[f], "NOT CHECKED") && !strings.Contains(errs, paths[i]) {
					t.Errorf("stderr does not name %s: %q", paths[i], errs)
				}
			}
			if strings.Contains(out, "bad.jsonl") && (!strings.Contains(out, "bad.jsonl:3") || !strings.Contains(errs, "bad.jsonl:3")) {
				t.Errorf("the bad file's error does not say where (bad.jsonl:3): stdout %q stderr %q", out, errs)
			}
		})
	}
}

// TestCheckSeveralFilesJSON: one JSON object per file, a file that could
// not be checked with outcome "error" and its error.
func TestCheckSeveralFilesJSON(t *testing.T) {
	paths := writeFiles(t, []string{"bad.jsonl", "violation.jsonl"}, map[string]string{
		"violation.jsonl": lostUpdate,
		"bad.jsonl":       serial + `{"id":3,"session":0,"ops":[["zap","x"]]}` + "\n",
	})
	code, out, errs := run(t, "", "check", "--json", paths[0], paths[1])
	if code != ExitViolation {
		t.Errorf("exit %d, want %d; stderr %q", code, ExitViolation, errs)
	}
	type doc struct {
		File, Level, Outcome, Error string
		Anomalies                   []json.RawMessage
	}
	var docs []doc
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var d doc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("want 2 results, got %d: %s", len(docs), out)
	}
	if d := docs[0]; d.File != paths[0] || d.Outcome != "error" || !strings.Contains(d.Error, "bad.jsonl:3") || d.Level != "serializable" || d.Anomalies == nil {
		t.Errorf("bad file: %+v", d)
	}
	if d := docs[1]; d.File != paths[1] || d.Outcome != "violation" || d.Error != "" || len(d.Anomalies) == 0 {
		t.Errorf("violating file: %+v", d)
	}
	if !strings.Contains(errs, "bad.jsonl:3") {
		t.Errorf("stderr %q does not name the bad file and line", errs)
	}
}

// TestCheckOneBadFile: with one file, bad input prints no result.
func TestCheckOneBadFile(t *testing.T) {
	paths := writeFiles(t, []string{"bad.jsonl"}, map[string]string{"bad.jsonl": `{"id":1,"session":0,"ops":[["zap","x"]]}` + "\n"})
	for _, json := range []bool{false, true} {
		args := []string{"check", paths[0]}
		if json {
			args = append(args, "--json")
		}
		code, out, errs := run(t, "", args...)
		if code != ExitBadInput || out != "" || !strings.Contains(errs, "bad.jsonl:1") {
			t.Errorf("json %v: exit %d stdout %q stderr %q", json, code, out, errs)
		}
	}
}
