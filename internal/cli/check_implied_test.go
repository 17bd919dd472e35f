package cli

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corporaDir finds shared/corpora in a directory above this one (beside
// the repository, or beside the directory of its worktrees).
func corporaDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		c := filepath.Join(dir, "shared", "corpora")
		if _, err := os.Stat(filepath.Join(c, "LABELS.tsv")); err == nil {
			return c
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("the shared corpora are missing: no shared/corpora/LABELS.tsv above the package; CI runs with shared/ beside the repository")
		}
		dir = up
	}
}

// linearizabilityLabels returns the SSER labels (VALID or VIOLATED) of
// LABELS.tsv's porcupine and knossos histories, by path.
func linearizabilityLabels(t *testing.T, corpora string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(corpora, "LABELS.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	col := -1
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if col < 0 {
			for i, c := range fields {
				if c == "SSER" {
					col = i
				}
			}
			if col < 0 {
				t.Fatal("LABELS.tsv has no SSER column")
			}
			continue
		}
		if strings.HasPrefix(fields[0], "porcupine/") && (fields[col] == "VALID" || fields[col] == "VIOLATED") {
			out[fields[0]] = fields[col]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFormatImpliesLevel: knossos and porcupine logs, checked without
// --level, are checked for linearizability (strict serializability), as
// their labels in LABELS.tsv are; the output says the format chose it.
// Every porcupine log and every tenth knossos log: the mechanism is per
// format, and internal/conformance holds every labelled log's verdict at
// strict serializability already.
func TestFormatImpliesLevel(t *testing.T) {
	corpora := corporaDir(t)
	labels := linearizabilityLabels(t, corpora)
	if len(labels) < 100 {
		t.Fatalf("only %d labelled porcupine histories", len(labels))
	}
	n := 0
	violations := 0
	for _, path := range slices.Sorted(maps.Keys(labels)) {
		label := labels[path]
		format := "porcupine"
		if strings.HasSuffix(path, ".log") {
			format = "knossos"
			n++
			if n%10 != 0 {
				continue
			}
		}
		t.Run(path, func(t *testing.T) {
			code, out, errs := run(t, "", "check", "--json", filepath.Join(corpora, path))
			var doc struct {
				Level, Outcome string
				ImpliedBy      string `json:"level_implied_by"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("exit %d, %v: %s %s", code, err, out, errs)
			}
			want, wantCode := "satisfied", ExitHolds
			if label == "VIOLATED" {
				want, wantCode = "violation", ExitViolation
				violations++
			}
			if doc.Level != "strict-serializable" || doc.ImpliedBy != format || doc.Outcome != want || code != wantCode {
				t.Errorf("level %s implied by %q: %s, exit %d; want strict-serializable implied by %s: %s (label %s), exit %d",
					doc.Level, doc.ImpliedBy, doc.Outcome, code, format, want, label, wantCode)
			}
		})
	}
	if violations == 0 {
		t.Error("no labelled violation was checked")
	}
}

// TestExplicitLevelWins: --level, even at its default value, is what is
// checked; the text says when the format chose the level.
func TestExplicitLevelWins(t *testing.T) {
	corpora := corporaDir(t)
	etcd := filepath.Join(corpora, "porcupine/test_data/jepsen/etcd_000.log") // not linearizable, serializable
	code, out, errs := run(t, "", "check", etcd)
	if code != ExitViolation || !strings.Contains(out, "strict-serializable VIOLATED") ||
		!strings.Contains(out, "level strict-serializable (implied by the knossos format; pass --level to choose)") {
		t.Errorf("no --level: exit %d: %s %s", code, out, errs)
	}
	code, out, errs = run(t, "", "check", "--level", "ser", etcd)
	if code != ExitHolds || !strings.HasPrefix(out, "serializable holds") || strings.Contains(out, "implied") {
		t.Errorf("--level ser: exit %d: %s %s", code, out, errs)
	}
	code, out, _ = run(t, "", "check", "--level", "ser", "--json", etcd)
	if code != ExitHolds || strings.Contains(out, "level_implied_by") {
		t.Errorf("--level ser --json: exit %d: %s", code, out)
	}
	// With several files, each gets its own level.
	native := writeFiles(t, []string{"h.jsonl"}, map[string]string{"h.jsonl": untimedSerial})[0]
	code, out, errs = run(t, "", "check", native, etcd)
	if code != ExitViolation || !strings.Contains(out, native+": serializable holds") || !strings.Contains(out, etcd+": strict-serializable VIOLATED") {
		t.Errorf("native and knossos files: exit %d: %s %s", code, out, errs)
	}
}
