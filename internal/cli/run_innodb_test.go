package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/pipeline"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/testservice"
)

// checkSchemaFields checks a run's JSON result against the innodb_rr
// object of docs/result.schema.json (whose other fields report's tests
// hold): the object is there, it has every field the schema requires,
// and no field the schema does not name.
func checkSchemaFields(t *testing.T, b []byte) {
	t.Helper()
	raw, err := os.ReadFile("../../docs/result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			InnoDBRR struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"innodb_rr"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		InnoDBRR map[string]json.RawMessage `json:"innodb_rr"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := schema.Properties.InnoDBRR
	if doc.InnoDBRR == nil || len(s.Required) == 0 {
		t.Fatalf("no innodb_rr in the result or in the schema:\n%s", b)
	}
	for _, f := range s.Required {
		if _, ok := doc.InnoDBRR[f]; !ok {
			t.Errorf("innodb_rr lacks %q, which the schema requires:\n%s", f, b)
		}
	}
	for f := range doc.InnoDBRR {
		if _, ok := s.Properties[f]; !ok {
			t.Errorf("innodb_rr has %q, which the schema does not name:\n%s", f, b)
		}
	}
}

// checkedAtSI checks a history given as native lines at snapshot
// isolation, as run checks a run at REPEATABLE READ.
func checkedAtSI(t *testing.T, lines string) *report.Checked {
	t.Helper()
	h, err := native.Read(strings.NewReader(lines), "h.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	si, err := level.Lookup("si")
	if err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(context.Background(), h, si, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &report.Checked{File: "h.jsonl", History: h, Result: res}
}

// TestInnoDBVerdictBothWays computes the verdict under InnoDB's
// repeatable read for two histories that violate snapshot isolation: a
// lost update, which InnoDB's REPEATABLE READ allows (holds), and a
// non-repeatable read of two plain reads, which it does not (its plain
// reads all read the first snapshot).
func TestInnoDBVerdictBothWays(t *testing.T) {
	const header = `{"format":"isoscope-history","version":1,"initial":{"x":0},"unique_values":true}` + "\n"
	si, _ := level.Lookup("si")
	for _, tc := range []struct {
		name, lines, outcome, says string
	}{
		{"lost update", header +
			`{"id":1,"session":1,"ops":[["r","x",0],["w","x",1]]}` + "\n" +
			`{"id":2,"session":2,"ops":[["r","x",0],["w","x",2]]}` + "\n",
			"satisfied", "InnoDB's REPEATABLE READ allows exactly these anomalies"},
		{"non-repeatable read", header +
			`{"id":1,"session":1,"ops":[["r","x",0],["r","x",1]]}` + "\n" +
			`{"id":2,"session":2,"ops":[["w","x",1]]}` + "\n",
			"violation", "violates even InnoDB's REPEATABLE READ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkedAtSI(t, tc.lines)
			if !pipeline.InnoDBApplies(db.MySQL, db.RepeatableRead, check.Options{}, &c.Result) {
				t.Fatalf("snapshot isolation: %s, want a violation", c.Result.Outcome)
			}
			if pipeline.InnoDBApplies(db.Postgres, db.RepeatableRead, check.Options{}, &c.Result) ||
				pipeline.InnoDBApplies(db.MySQL, db.Serializable, check.Options{}, &c.Result) ||
				pipeline.InnoDBApplies(db.MySQL, db.RepeatableRead, check.Options{InnoDBRR: true}, &c.Result) {
				t.Error("the InnoDB verdict applies beyond a MySQL-protocol database at REPEATABLE READ checked at another model")
			}
			v := pipeline.CheckInnoDB(context.Background(), c, check.Options{}, "MariaDB 10.11.19", si)
			if v.Outcome != tc.outcome || !strings.Contains(v.Note, tc.says) ||
				v.Command != "isoscope check --level rr --module innodb-rr h.jsonl" {
				t.Errorf("got %+v", v)
			}
			if tc.outcome == "satisfied" && strings.Contains(v.Note, "violates") || tc.outcome == "violation" && v.Anomalies == 0 {
				t.Errorf("got %+v", v)
			}
			b, err := json.Marshal(pipeline.Document{Document: report.NewDocument(c), InnoDBRR: v})
			if err != nil {
				t.Fatal(err)
			}
			checkSchemaFields(t, b)
		})
	}
}

// TestRunMariaDBRepeatableReadSaysInnoDB runs a contended workload on
// MariaDB at REPEATABLE READ until it loses updates: the verdict (text and
// JSON) says that InnoDB's REPEATABLE READ allows them, with the command
// that shows it, and that command does hold.
func TestRunMariaDBRepeatableReadSaysInnoDB(t *testing.T) {
	addr := testservice.MySQL(t)
	table := testservice.Table()
	dropAfter(t, addr, table)
	dir := t.TempDir()
	for try := 1; ; try++ {
		file := filepath.Join(dir, "rr.jsonl")
		code, out, errs := runRun(t, context.Background(), "--db", addr, "--table", table, "--isolation", "repeatable-read",
			"--sessions", "16", "--keys", "8", "--txns", "1000", "-o", file)
		if code != ExitViolation || !strings.Contains(out, "lost-update") {
			if try == 5 {
				t.Fatalf("no lost update in %d runs: exit %d\nstdout %s\nstderr %s", try, code, out, errs)
			}
			continue
		}
		command := "isoscope check --level rr --module innodb-rr " + file
		if !strings.Contains(out, "InnoDB's repeatable read: holds") || !strings.Contains(out, "InnoDB's REPEATABLE READ allows exactly these anomalies") ||
			!strings.Contains(out, "see: "+command) {
			t.Fatalf("stdout %s", out)
		}
		var stdout, stderr strings.Builder
		if code := Main(context.Background(), strings.Fields(command)[1:], strings.NewReader(""), &stdout, &stderr); code != ExitHolds {
			t.Fatalf("%s: exit %d\n%s%s", command, code, stdout.String(), stderr.String())
		}
		break
	}
	// The JSON result carries it too.
	for try := 1; ; try++ {
		code, out, errs := runRun(t, context.Background(), "--db", addr, "--table", table, "--isolation", "repeatable-read",
			"--sessions", "16", "--keys", "8", "--txns", "1000", "--json", "-o", filepath.Join(dir, "rr2.jsonl"))
		if code != ExitViolation {
			if try == 5 {
				t.Fatalf("no violation in %d runs: exit %d\nstdout %s\nstderr %s", try, code, out, errs)
			}
			continue
		}
		var doc struct {
			Outcome  string                  `json:"outcome"`
			InnoDBRR *pipeline.InnoDBVerdict `json:"innodb_rr"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		checkSchemaFields(t, []byte(out))
		if doc.Outcome != "violation" || doc.InnoDBRR == nil || doc.InnoDBRR.Outcome != "satisfied" ||
			!strings.HasPrefix(doc.InnoDBRR.Command, "isoscope check --level rr --module innodb-rr ") {
			t.Fatalf("stdout %s", out)
		}
		break
	}
}
