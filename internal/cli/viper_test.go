package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestViperFormat checks and converts Viper (ViperBench) log directories
// end to end: detected without --format (the directory, or the folder
// holding its json/), checked, converted to JSON Lines, refused as an
// output format, and bad input named by file, line and field.
func TestViperFormat(t *testing.T) {
	mk := func(files map[string]string) string {
		root := t.TempDir()
		dir := filepath.Join(root, "json")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	const initial = `{"value": [["range", "nil", "nil", [{"id": 1, "sk": 1, "val": 11}], []]], "isInitial": true, "isFinal": false}` + "\n"
	// Two threads read key 1's initial value 11 and both overwrite it: a
	// lost update.
	lost := mk(map[string]string{
		"J1000.log": initial,
		"J21.log":   `{"value": [["r", 1, 11, false], ["w", 1, 21, true]]}` + "\n",
		"J22.log":   `{"value": [["r", 1, 11, false], ["w", 1, 22, true]]}` + "\n",
	})
	// The second reads the first's 21, and then deletes the key (a
	// tombstone 23) that a third reads dead.
	serial := mk(map[string]string{
		"J1000.log": initial,
		"J21.log":   `{"value": [["r", 1, 11, false], ["w", 1, 21, true]]}` + "\n",
		"J22.log":   `{"value": [["r", 1, 21, false], ["w", 1, 22, true]]}` + "\n" + `{"value": [["d", 1, 23, 22, false, true]]}` + "\n",
		"J23.log":   `{"value": [["r", 1, 23, true], ["range", 0, 5, [], [{"id": 1, "sk": 1, "val": 23}]]]}` + "\n",
	})
	if code, out, errs := run(t, "", "check", "--level", "si", lost); code != ExitViolation || !strings.Contains(out, "lost-update") {
		t.Errorf("lost update: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "", "check", "--level", "rc", filepath.Join(lost, "json")); code != ExitHolds {
		t.Errorf("lost update at read committed: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "", "check", "--format", "viper", "--level", "ser", serial); code != ExitHolds || !strings.Contains(out, "3 sessions") {
		t.Errorf("serial: exit %d\n%s%s", code, out, errs)
	}
	out := filepath.Join(t.TempDir(), "lost.jsonl")
	if code, _, errs := run(t, "", "convert", "--from", "viper", lost, out); code != ExitHolds {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	h := readHistoryFile(t, out)
	if len(h.Txns) != 2 || !strings.Contains(h.Header.Source, "Viper") || len(h.Header.Initial.Values) != 1 {
		t.Fatalf("converted: %+v", h.Header)
	}
	if code, _, errs := run(t, "", "convert", "--to", "viper", out, filepath.Join(t.TempDir(), "x")); code != ExitBadInput || !strings.Contains(errs, "cannot write format viper") {
		t.Errorf("convert --to viper: exit %d: %s", code, errs)
	}
	bad := mk(map[string]string{
		"J1.log": `{"value": [["r", 1, 0, false]]}` + "\n" + `{"value": [["w", 1, 2]]}` + "\n",
	})
	code, stdout, errs := run(t, "", "check", bad)
	if code != ExitBadInput || stdout != "" || !strings.Contains(errs, filepath.Join("json", "J1.log")+`:2: value[0]: "w" has 3 elements, want 4`) {
		t.Errorf("bad input: exit %d\nstdout %s\nstderr %s", code, stdout, errs)
	}
}
