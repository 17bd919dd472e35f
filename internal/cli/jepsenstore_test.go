package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A register log as Jepsen stores it, linearizable, and one that reads a
// value nobody wrote.
const (
	storeHolds = `{:type :invoke, :f :write, :value 1, :process 0, :time 1, :index 0}
{:type :ok, :f :write, :value 1, :process 0, :time 2, :index 1}
{:type :invoke, :f :read, :value nil, :process 1, :time 3, :index 2}
{:type :ok, :f :read, :value 1, :process 1, :time 4, :index 3}
`
	storeViolated = `{:type :invoke, :f :write, :value 1, :process 0, :time 1, :index 0}
{:type :ok, :f :write, :value 1, :process 0, :time 2, :index 1}
{:type :invoke, :f :read, :value nil, :process 1, :time 3, :index 2}
{:type :ok, :f :read, :value 2, :process 1, :time 4, :index 3}
`
	// A read of nil after a write completed: stale for isoscope, any
	// value for Knossos's register models.
	storeNilRead = `{:type :invoke, :f :write, :value 1, :process 0, :time 1, :index 0}
{:type :ok, :f :write, :value 1, :process 0, :time 2, :index 1}
{:type :invoke, :f :read, :value nil, :process 1, :time 3, :index 2}
{:type :ok, :f :read, :value nil, :process 1, :time 4, :index 3}
`
	knossosSaysValid   = "{:valid? true, :linear {:valid? true, :analyzer :linear, :configs (), :final-paths ()}, :perf {:valid? true}}\n"
	knossosSaysInvalid = "{:valid? false, :linear {:valid? false, :analyzer :linear, :final-paths ()}}\n"
)

func storeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store", "register", "20261207T101010.000Z")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, body := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCheckJepsenStore: a store directory is read as its run's history;
// --compare-results prints Jepsen's verdict and whether it agrees, and
// never changes the exit status.
func TestCheckJepsenStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		code    int
		want    string
		compare bool
	}{
		{"agree, holds", map[string]string{"history.edn": storeHolds, "results.edn": knossosSaysValid}, ExitHolds, "isoscope agrees: strict-serializable holds.", true},
		{"agree, violated", map[string]string{"history.edn": storeViolated, "results.edn": knossosSaysInvalid}, ExitViolation, "isoscope agrees: strict-serializable is violated.", true},
		{"disagree", map[string]string{"history.edn": storeViolated, "results.edn": knossosSaysValid}, ExitViolation, "isoscope DISAGREES", true},
		{"disagree on a nil read", map[string]string{"history.edn": storeNilRead, "results.edn": knossosSaysValid}, ExitViolation, "1 read(s) that returned nil: Knossos's register models take such a read as a read of any value", true},
		{"disagree, holds", map[string]string{"history.edn": storeHolds, "results.edn": knossosSaysInvalid}, ExitHolds, "isoscope DISAGREES", true},
		{"history.txt", map[string]string{"history.txt": "0\t:invoke\t:write\t1\n0\t:ok\t:write\t1\n1\t:invoke\t:read\tnil\n1\t:ok\t:read\t2\n"}, ExitViolation, "strict-serializable VIOLATED", false},
		{"no results.edn", map[string]string{"history.edn": storeHolds}, ExitBadInput, "", true},
		{"bad results.edn", map[string]string{"history.edn": storeHolds, "results.edn": "{:valid? true"}, ExitBadInput, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := storeDir(t, tc.files)
			args := []string{"check", dir}
			if tc.compare {
				args = []string{"check", "--compare-results", dir}
			}
			code, out, errs := run(t, "", args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %d; stdout %q (want %q) stderr %q", code, tc.code, out, tc.want, errs)
			}
			if code == ExitBadInput && (out != "" || !strings.Contains(errs, "results.edn")) {
				t.Fatalf("bad input: stdout %q stderr %q", out, errs)
			}
		})
	}
}

// TestCheckJepsenStoreLatest: a test directory is read through its
// latest link, and the JSON result keeps every field and adds the run and
// the comparison.
func TestCheckJepsenStoreLatest(t *testing.T) {
	run1 := storeDir(t, map[string]string{"history.edn": storeViolated, "results.edn": knossosSaysInvalid})
	test := filepath.Dir(run1)
	run2 := filepath.Join(test, "20261208T000000.000Z")
	if err := os.MkdirAll(run2, 0o755); err != nil {
		t.Fatal(err)
	}
	// Two runs and no latest: which one is meant is not guessed.
	if err := os.WriteFile(filepath.Join(run2, "history.edn"), []byte(storeHolds), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "", "check", test); code != ExitBadInput || !strings.Contains(errs, "no latest link") {
		t.Fatalf("two runs: exit %d, stderr %q", code, errs)
	}
	if err := os.Symlink(filepath.Base(run1), filepath.Join(test, "latest")); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "check", "--json", "--compare-results", test)
	if code != ExitViolation {
		t.Fatalf("exit %d; stdout %q stderr %q", code, out, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if doc["outcome"] != "violation" || doc["level"] != "strict-serializable" || doc["jepsen_store"] != filepath.Join(test, "latest") ||
		!strings.HasPrefix(doc["jepsen_store_via"].(string), "latest") || doc["file"] != filepath.Join(test, "latest", "history.edn") {
		t.Fatalf("document: %v", doc)
	}
	op, ok := doc["second_opinion"].(map[string]any)
	if !ok || op["agreement"] != "agree" || op["jepsen"] != "invalid" {
		t.Fatalf("second_opinion: %v", doc["second_opinion"])
	}
	// A directory format named is read as that format, not as a store.
	if code, out, errs := run(t, "", "check", "--format", "cobra", run1); code != ExitBadInput || out != "" {
		t.Fatalf("--format cobra on a store: exit %d, %q %q", code, out, errs)
	}
	// A history file with results.edn beside it compares too.
	code, out, _ = run(t, "", "check", "--compare-results", filepath.Join(run1, "history.edn"))
	if code != ExitViolation || !strings.Contains(out, "isoscope agrees") {
		t.Fatalf("file beside results.edn: exit %d, %q", code, out)
	}
}

// TestCheckJepsenIndependentKeys: jepsen.independent writes each key's
// history and result in independent/<key>/; checking those directories
// compares key by key, each with its own result, and the exit status is
// the most severe.
func TestCheckJepsenIndependentKeys(t *testing.T) {
	runDir := storeDir(t, map[string]string{"history.edn": storeHolds, "results.edn": knossosSaysInvalid})
	keys := map[string][2]string{"0": {storeHolds, knossosSaysValid}, "1": {storeViolated, knossosSaysInvalid}}
	var dirs []string
	for k, files := range keys {
		dir := filepath.Join(runDir, "independent", k)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"history.edn": files[0], "results.edn": files[1]} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	code, out, errs := run(t, "", append([]string{"check", "--compare-results"}, dirs...)...)
	if code != ExitViolation || strings.Count(out, "isoscope agrees") != 2 {
		t.Fatalf("exit %d; stdout %q stderr %q", code, out, errs)
	}
}

// TestCheckJepsenIndependentRun: a run whose history is made of
// jepsen.independent keys is compared with results.edn key by key, and a
// key on which the verdicts differ is named.
func TestCheckJepsenIndependentRun(t *testing.T) {
	history := `{:type :invoke, :f :write, :value [0 1], :process 0, :time 1, :index 0}
{:type :ok, :f :write, :value [0 1], :process 0, :time 2, :index 1}
{:type :invoke, :f :read, :value [0 nil], :process 1, :time 3, :index 2}
{:type :ok, :f :read, :value [0 1], :process 1, :time 4, :index 3}
{:type :invoke, :f :write, :value [1 1], :process 0, :time 5, :index 4}
{:type :ok, :f :write, :value [1 1], :process 0, :time 6, :index 5}
{:type :invoke, :f :read, :value [1 nil], :process 1, :time 7, :index 6}
{:type :ok, :f :read, :value [1 2], :process 1, :time 8, :index 7}
`
	results := "{:valid? true, :indp {:valid? true, :results {0 {:valid? true, :configs ()}, 1 {:valid? true, :configs ()}}}}\n"
	dir := storeDir(t, map[string]string{"history.edn": history, "results.edn": results})
	code, out, errs := run(t, "", "check", "--compare-results", dir)
	if code != ExitViolation || !strings.Contains(out, "per key: 1 agree, 1 disagree, 0 without a comparison") ||
		!strings.Contains(out, "DISAGREES on key 1: Jepsen valid, isoscope invalid") {
		t.Fatalf("exit %d; stdout %q stderr %q", code, out, errs)
	}
	code, out, _ = run(t, "", "check", "--compare-results", "--json", dir)
	if code != ExitViolation || !strings.Contains(out, `"keys":[{"key":"0","jepsen":"valid","isoscope":"valid","agreement":"agree"},{"key":"1","jepsen":"valid","isoscope":"invalid","agreement":"disagree"}]`) {
		t.Fatalf("JSON: exit %d; %s", code, out)
	}
}
