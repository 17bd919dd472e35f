package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestTimeKillerFormat checks and converts TimeKiller JSON histories:
// detected without --format, checked with their timestamps, converted to
// JSON Lines that keep them, and bad input named by transaction and field.
func TestTimeKillerFormat(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hlc := func(p, l string) string { return `{"p":` + p + `,"l":` + l + `}` }
	// T1 writes x; T2 and T3 both read it and both overwrite it, while
	// both run (T3 starts before T2 commits): a lost update.
	lost := write("lost.json", `[
{"tid":1,"sid":0,"sts":`+hlc("100", "0")+`,"cts":`+hlc("100", "1")+`,"ops":[{"t":"w","k":1,"v":1}]},
{"tid":2,"sid":1,"sts":`+hlc("101", "0")+`,"cts":`+hlc("103", "0")+`,"ops":[{"t":"r","k":1,"v":1},{"t":"w","k":1,"v":2}]},
{"tid":3,"sid":2,"sts":`+hlc(`"102"`, "0")+`,"cts":`+hlc("104", "0")+`,"ops":[{"t":"r","k":1,"v":1},{"t":"w","k":1,"v":3}]}]`)
	// T3 starts after T2 committed, and reads T2's 2.
	serial := write("serial.json", `[
{"tid":1,"sid":0,"sts":`+hlc("100", "0")+`,"cts":`+hlc("100", "1")+`,"ops":[{"t":"w","k":1,"v":1}]},
{"tid":2,"sid":1,"sts":`+hlc("101", "0")+`,"cts":`+hlc("103", "0")+`,"ops":[{"t":"r","k":1,"v":1},{"t":"w","k":1,"v":2}]},
{"tid":3,"sid":2,"sts":`+hlc("105", "0")+`,"cts":`+hlc("106", "0")+`,"ops":[{"t":"r","k":1,"v":2},{"t":"w","k":1,"v":3}]}]`)
	if code, out, errs := run(t, "", "check", "--level", "si", lost); code != ExitViolation || !strings.Contains(out, "snapshot-isolation VIOLATED") {
		t.Errorf("lost update: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "", "check", "--level", "si", serial); code != ExitHolds || !strings.Contains(out, "snapshot-isolation holds") {
		t.Errorf("serial: exit %d\n%s%s", code, out, errs)
	}
	out := filepath.Join(dir, "lost.jsonl")
	if code, _, errs := run(t, "", "convert", lost, out); code != ExitHolds {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	h := readHistoryFile(t, out)
	if len(h.Txns) != 3 || !strings.Contains(h.Header.Source, "TimeKiller") {
		t.Fatalf("converted: %s", history.Notation(h))
	}
	// Every l is 0 or 1: one bit for the logical part.
	for i, want := range [][2]uint64{{200, 201}, {202, 206}, {204, 208}} {
		tx := &h.Txns[i]
		if !tx.HasStartTS || !tx.HasCommitTS || tx.StartTS != want[0] || tx.CommitTS != want[1] {
			t.Errorf("transaction %s: start_ts %d commit_ts %d, want %v", tx.ID, tx.StartTS, tx.CommitTS, want)
		}
	}
	bad := write("bad.json", "[\n"+`{"tid":1,"sid":0,"sts":`+hlc("5", "0")+`,"cts":`+hlc("4", "0")+`,"ops":[{"t":"r","k":1}]}]`)
	if code, out, errs := run(t, "", "check", bad); code != ExitBadInput || out != "" || !strings.Contains(errs, "bad.json:2: [0]: the commit timestamp cts (p 4, l 0) is before") {
		t.Errorf("bad input: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}
