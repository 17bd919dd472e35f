package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const lostUpdate = `{"format":"isoscope-history","version":1,"initial":"absent","unique_values":true}
{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",1],["w","x",2]]}
{"id":3,"session":2,"ops":[["r","x",1],["w","x",3]]}
`

const serial = `{"id":1,"session":0,"begin":1,"end":2,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"begin":3,"end":4,"ops":[["r","x",1],["w","x",2]]}
`

// untimedSerial holds at serializable and has no begin and end instants:
// strict serializability is undecided.
const untimedSerial = `{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",1],["w","x",2]]}
`

// commitOrdered holds unless the version order is the commit_ts order: x=1
// (commit_ts 20) then x=2 (commit_ts 10) read in that order by one session.
const commitOrdered = `{"id":1,"session":0,"commit_ts":20,"ops":[["w","x",1]]}
{"id":2,"session":1,"commit_ts":10,"ops":[["w","x",2]]}
{"id":3,"session":2,"commit_ts":30,"ops":[["r","x",1]]}
{"id":4,"session":2,"commit_ts":40,"ops":[["r","x",2]]}
`

// ownBeforeRead reads the state before its own write.
const ownBeforeRead = `{"format":"isoscope-history","version":1,"initial":{"x":0}}
{"id":1,"session":0,"ops":[["w","x",1],["r","x",0]]}
`

// elleLostUpdate is Elle's lost update on a list: transactions 2 and 3 both
// read [0] and both append to x.
const elleLostUpdate = `{"id":1,"session":0,"ops":[["append","x",0]]}
{"id":2,"session":1,"ops":[["r","x",[0]],["append","x",1]]}
{"id":3,"session":2,"ops":[["r","x",[0]],["append","x",2]]}
`

// phantom scans after two inserts and sees one.
const phantom = `{"id":1,"session":0,"ops":[["w",1,"a"],["w",2,"b"]]}
{"id":2,"session":1,"ops":[["scan",0,10,[[1,"a"]]]]}
`

// cliCase is one command line with its standard input, and the exit
// status and substrings of its output it must give.
type cliCase struct {
	name   string
	stdin  string
	args   []string
	code   int
	stdout string // a substring
	stderr string // a substring
}

// runCLICases runs each case; bad input must print no verdict.
func runCLICases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, tc.code, out, errs)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout %q lacks %q", out, tc.stdout)
			}
			if !strings.Contains(errs, tc.stderr) {
				t.Errorf("stderr %q lacks %q", errs, tc.stderr)
			}
			if tc.code == ExitBadInput && out != "" {
				t.Errorf("bad input printed a verdict: %q", out)
			}
		})
	}
}

func TestCheckExitStatuses(t *testing.T) {
	cases := []cliCase{
		{"violation", lostUpdate, []string{"check", "--level", "si", "-"}, ExitViolation, "lost-update", ""},
		{"chain", lostUpdate, []string{"check", "--level", "ser", "-"}, ExitViolation, "--rw(x)-->", ""},
		{"rc holds", lostUpdate, []string{"check", "--level", "rc", "-"}, ExitHolds, "read-committed holds", ""},
		{"sser holds", serial, []string{"check", "--level", "sser", "-"}, ExitHolds, "strict-serializable holds", ""},
		{"unknown level", serial, []string{"check", "--level", "nope", "-"}, ExitBadInput, "", "unknown isolation level"},
		{"unknown checker", serial, []string{"check", "--checker", "nope", "-"}, ExitBadInput, "", "unknown checker"},
		{"unknown flag", serial, []string{"check", "--frobnicate", "-"}, ExitBadInput, "", "unknown flag"},
		{"no files", serial, []string{"check"}, ExitBadInput, "", "check needs a history: isoscope check [flags] FILE…"},
		{"bad json", "{\"id\":1,", []string{"check", "-"}, ExitBadInput, "", "-:1"},
		{"undecidable", `{"id":1,"session":0,"ops":[["w","x",1]]}` + "\n", []string{"check", "--checker", "mt", "-"}, ExitBadInput, "", "read-modify-write"},
		{"empty", "", []string{"check", "-"}, ExitBadInput, "", "empty"},
		{"sser without instants, not serializable", lostUpdate, []string{"check", "--level", "sser", "--checker", "auto", "-"}, ExitViolation, "found at serializable, which strict-serializable implies: 3 of 3 transactions have no begin and end instants", ""},
		{"sser without instants, serializable", untimedSerial, []string{"check", "--level", "sser", "-"}, ExitUnknown, "strict-serializable UNKNOWN: serializable holds, but strict-serializable cannot be decided: 2 of 2 transactions have no begin and end instants", ""},
		{"commit order", commitOrdered, []string{"check", "-"}, ExitHolds, "serializable holds", ""},
		{"commit order module", commitOrdered, []string{"check", "--module", "commit-order", "-"}, ExitViolation, "checker sat", ""},
		{"unknown module", commitOrdered, []string{"check", "--module", "nope", "-"}, ExitBadInput, "", "unknown module"},
		{"module without commit_ts", lostUpdate, []string{"check", "--module", "commit-order", "-"}, ExitBadInput, "", "no commit_ts"},
		{"own reads", ownBeforeRead, []string{"check", "-"}, ExitViolation, "not-my-own-write", ""},
		{"external reads", ownBeforeRead, []string{"check", "--own-reads", "external", "-"}, ExitHolds, "serializable holds", ""},
		{"unknown own-reads", ownBeforeRead, []string{"check", "--own-reads", "maybe", "-"}, ExitBadInput, "", "--own-reads: unknown read-your-own-writes policy"},
		{"scan phantom", phantom, []string{"check", "-"}, ExitViolation, "a phantom", ""},
		{"lost update on a list at si", elleLostUpdate, []string{"check", "--level", "si", "-"}, ExitViolation, "lost-update", ""},
		{"lost update on a list, named checker", elleLostUpdate, []string{"check", "--level", "si", "--checker", "list-append", "-"}, ExitViolation, "lost-update", ""},
		{"lost update on a list at ser", elleLostUpdate, []string{"check", "--level", "ser", "-"}, ExitViolation, "lost-update", ""},
		{"lost update on a list at rc", elleLostUpdate, []string{"check", "--level", "rc", "-"}, ExitHolds, "read-committed holds (checker list-append", ""},
	}
	runCLICases(t, cases)
}

func TestCheckJSON(t *testing.T) {
	code, out, _ := run(t, lostUpdate, "check", "--level", "si", "--json", "-")
	if code != ExitViolation {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Level     string `json:"level"`
		Outcome   string `json:"outcome"`
		Checker   string `json:"checker"`
		History   struct{ Transactions, Committed, Sessions, Operations int }
		Anomalies []struct {
			Kind, Phenomenon string
			Transactions     []any
			Cycle            []struct {
				From, To any
				Dep      string
				Key      any
			}
			Explanation string
		}
		ElapsedMS *float64 `json:"elapsed_ms"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if doc.Level != "snapshot-isolation" || doc.Outcome != "violation" || doc.Checker != "mt" || doc.ElapsedMS == nil {
		t.Errorf("header fields: %+v", doc)
	}
	if doc.History.Transactions != 3 || doc.History.Operations != 6 || doc.History.Sessions != 3 {
		t.Errorf("history stats: %+v", doc.History)
	}
	if len(doc.Anomalies) != 1 || doc.Anomalies[0].Kind != "lost-update" || len(doc.Anomalies[0].Cycle) != 2 {
		t.Fatalf("anomalies: %+v", doc.Anomalies)
	}
	if c := doc.Anomalies[0].Cycle[0]; c.Dep != "rw" || c.Key != "x" || c.From != float64(2) {
		t.Errorf("cycle edge: %+v", c)
	}
}

func TestGenThenCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "h.jsonl.gz")
	code, _, errs := run(t, "", "gen", "--txns", "2000", "--seed", "3", "--plant", "write-skew", "--out", file)
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "planted write-skew") {
		t.Errorf("gen did not say what it planted: %q", errs)
	}
	code, out, _ := run(t, "", "check", "--level", "ser", file)
	if code != ExitViolation || !strings.Contains(out, "write-skew") {
		t.Errorf("ser: exit %d: %s", code, out)
	}
	code, out, _ = run(t, "", "check", "--level", "si", file)
	if code != ExitHolds {
		t.Errorf("si: exit %d: %s", code, out)
	}
	code, _, errs = run(t, "", "gen", "--plant", "nonsense")
	if code != ExitBadInput || !strings.Contains(errs, "nonsense") {
		t.Errorf("bad plant: exit %d %q", code, errs)
	}
}

func TestTimeoutGivesUnknown(t *testing.T) {
	code, out, _ := run(t, serial, "check", "--timeout", "1ns", "-")
	if code != ExitUnknown || !strings.Contains(out, "UNKNOWN") {
		t.Errorf("exit %d, want 3: %s", code, out)
	}
}

func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	// dbcop needs integer keys and values, and an initial state of zeros.
	os.WriteFile(in, []byte(`{"format":"isoscope-history","version":1,"initial":{"7":0}}
{"id":1,"session":0,"ops":[["r",7,0],["w",7,1]]}
{"id":2,"session":1,"ops":[["r",7,1],["w",7,2]]}
{"id":3,"session":2,"ops":[["r",7,1],["w",7,3]]}
`), 0o644)
	for _, to := range []string{"isoscope", "dbcop", "jepsen"} {
		out := filepath.Join(dir, "out."+to+".gz")
		if code, _, errs := run(t, "", "convert", "--to", to, in, out); code != 0 {
			t.Fatalf("convert to %s: exit %d: %s", to, code, errs)
		}
		code, stdout, errs := run(t, "", "check", "--level", "si", out)
		if code != ExitViolation || !strings.Contains(stdout, "lost-update") {
			t.Errorf("check of %s output: exit %d: %s %s", to, code, stdout, errs)
		}
	}
	if code, _, errs := run(t, "", "convert", "--to", "plume", in, filepath.Join(dir, "x")); code != ExitBadInput || !strings.Contains(errs, "cannot write") {
		t.Errorf("unwritable format: exit %d %q", code, errs)
	}
}

// TestCorpusFormatsDetected: a file of every importable format in the
// shared corpora is detected and read by check.
func TestCorpusFormatsDetected(t *testing.T) {
	corpora := corporaDir(t)
	for _, p := range []string{
		"isovista-bugs/history/bugs/pg_ser_bug.txt",
		"cobra-logs/ser-violation/cock-G2",
		"awdit/histories/tests/causal/lost-update.txt",
		"elle/histories/si-without-g-single.edn",
		"elle-cli/histories/elle/paper-example.json",
		"elle-cli/histories/elle/rw-register.edn",
		"porcupine/test_data/kv/c01-ok.txt",
	} {
		code, out, errs := run(t, "", "check", "--level", "rc", filepath.Join(corpora, p))
		if code == ExitBadInput {
			t.Errorf("%s: exit 2: %s %s", p, out, errs)
		}
	}
}
