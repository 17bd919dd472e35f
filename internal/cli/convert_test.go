package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// initialUntimed is the history Jepsen EDN once lost the initial state of: valid at every level it can be
// checked at, it reads x's initial value and has no instants, so strict
// serializability cannot be checked on it.
const initialUntimed = `{"format":"isoscope-history","version":1,"initial":{"x":0}}
{"id":1,"session":0,"ops":[["r","x",0],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",1],["w","y",5]]}
{"id":3,"session":0,"ops":[["r","y",5]]}
`

// TestConvertKeepsVerdicts: converted to Jepsen, a history with an
// initial state and no instants checks as the original does at every
// level (before, its initial reads became thin-air reads, and file order
// became a real-time order that strict serializability checked).
func TestConvertKeepsVerdicts(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(initialUntimed), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.edn")
	if code, _, errs := run(t, "", "convert", "--to", "jepsen", in, out); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, errs)
	}
	for _, l := range []string{"ru", "rc", "rr", "si", "ser", "sser"} {
		wantCode, _, wantErr := run(t, "", "check", "--level", l, in)
		code, stdout, errs := run(t, "", "check", "--level", l, out)
		if code != wantCode {
			t.Errorf("%s: the conversion exits %d (%s%s), the original %d (%s)", l, code, stdout, errs, wantCode, wantErr)
		}
	}
}

// TestConvertRefuses: what the output format cannot record is refused
// with exit 2, a message naming the transaction, and no output file.
func TestConvertRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ to, in, want string }{
		{"dbcop", `{"id":1,"session":0,"begin":1,"end":2,"ops":[["w",1,1]]}` + "\n",
			"transaction 1 (line 1) has begin and end instants (real time), which dbcop cannot record"},
		{"jepsen", `{"id":1,"session":0,"start_ts":3,"commit_ts":4,"ops":[["w","x",1]]}` + "\n",
			"transaction 1 (line 1) carries the database's timestamps"},
		{"jepsen", `{"id":1,"session":0,"ops":[["w","x",1],["d","x"]]}` + "\n",
			"transaction 1 (line 1), operation 1 (d x): Jepsen's workloads have appends, writes and reads only"},
	} {
		in := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(in, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out."+c.to)
		code, _, errs := run(t, "", "convert", "--to", c.to, in, out)
		if code != ExitBadInput || !strings.Contains(errs, c.want) || !strings.Contains(errs, "nothing was written") {
			t.Errorf("--to %s: exit %d, stderr %q; want exit %d and %q", c.to, code, errs, ExitBadInput, c.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("--to %s: the refused output %s exists (%v)", c.to, out, err)
		}
	}
}

// TestConvertDrop: --drop leaves out, on request, what the output format
// cannot record, and says so; a refusal names the --drop that would
// write it.
func TestConvertDrop(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	timed := `{"format":"isoscope-history","version":1,"initial":{"7":0}}
{"id":1,"session":0,"begin":1,"end":2,"ops":[["r",7,0],["w",7,1]]}
{"id":2,"session":1,"begin":3,"end":4,"ops":[["r",7,1],["w",7,2]]}
{"id":3,"session":2,"begin":5,"end":6,"ops":[["r",7,1],["w",7,3]]}
`
	if err := os.WriteFile(in, []byte(timed), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.dbcop")
	if code, _, errs := run(t, "", "convert", "--to", "dbcop", in, out); code != ExitBadInput || !strings.Contains(errs, "--drop instants writes it without them") {
		t.Errorf("without --drop: exit %d, stderr %q", code, errs)
	}
	code, _, errs := run(t, "", "convert", "--to", "dbcop", "--drop", "instants", in, out)
	if code != 0 || !strings.Contains(errs, "instants dropped as asked (strict serializability cannot be checked on the output)") {
		t.Fatalf("--drop instants: exit %d, stderr %q", code, errs)
	}
	if code, stdout, errs := run(t, "", "check", "--level", "si", out); code != ExitViolation || !strings.Contains(stdout, "lost-update") {
		t.Errorf("check of the output at si: exit %d: %s %s", code, stdout, errs)
	}
	// Without instants strict serializability is checked at
	// serializability, which the lost update violates.
	if code, stdout, errs := run(t, "", "check", "--level", "sser", out); code != ExitViolation || !strings.Contains(stdout, "instants") {
		t.Errorf("check of the output at sser: exit %d: %s %s; want exit 1, found at serializable for want of instants", code, stdout, errs)
	}
	if code, _, errs := run(t, "", "convert", "--to", "dbcop", "--drop", "ids", in, out); code != ExitBadInput || !strings.Contains(errs, "can drop instants, timestamps, version-order") {
		t.Errorf("--drop ids: exit %d, stderr %q", code, errs)
	}
}
