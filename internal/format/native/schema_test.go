package native_test

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// historySchema compiles docs/history.schema.json, the JSON Schema of one
// line of a history.
func historySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../../../docs/history.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("history.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("history.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// schemaAccepts validates one line against the schema.
func schemaAccepts(sch *jsonschema.Schema, line string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// TestHistorySchemaAgreesWithReader holds docs/history.schema.json to the
// reader line by line: each line below, after the header, is accepted by
// the schema exactly when the reader accepts the file, so the schema
// documents what the reader reads (every field and operation, the fault
// record) and refuses what it refuses.
func TestHistorySchemaAgreesWithReader(t *testing.T) {
	sch := historySchema(t)
	const header = `{"format":"isoscope-history","version":1}`
	cases := []struct {
		line string
		ok   bool
	}{
		{`{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}`, true},
		{`{"id":"t1","session":"alice","status":"committed","begin":10,"end":20,"start_ts":4411,"commit_ts":4417,"ops":[["r","x",5,{"lock":true}],["w","x",6]]}`, true},
		{`{"id":1,"session":0,"status":"unknown","ops":[["d","x"]]}`, true},
		{`{"id":1,"session":0,"status":"aborted","ops":[]}`, true},
		{`{"id":1,"session":0,"status":null,"begin":null,"ops":[["w","x",1]]}`, true},
		{`{"id":1,"session":0,"ops":[["append","l",1],["r","l",[1]],["r","m",null]]}`, true},
		{`{"id":1,"session":0,"ops":[["scan","a","c",[["a",1],["b",null]]],["iter","a",null,[]]]}`, true},
		{`{"id":1,"session":0,"hints":{"anything":[1]},"extra":true,"ops":[["w","x",1]]}`, true},
		{`{"fault":"partition","node":"n2","begin":100,"end":250,"info":"n2 cut off from n1, n3"}`, true},
		{`{"fault":"clock","node":"n3","begin":400,"end":900,"offset":-83000000000}`, true},
		{`{"fault":"kill","begin":5}`, true},

		{`{"session":0,"ops":[["w","x",1]]}`, false},
		{`{"id":1,"ops":[["w","x",1]]}`, false},
		{`{"id":1,"session":0}`, false},
		{`{"id":null,"session":0,"ops":[["w","x",1]]}`, false},
		{`{"id":1,"session":0,"ops":[]}`, false},
		{`{"id":1,"session":0,"status":"done","ops":[["w","x",1]]}`, false},
		{`{"id":1,"session":0,"begin":-1,"ops":[["w","x",1]]}`, false},
		{`{"id":1,"session":0,"start_ts":"4411","ops":[["w","x",1]]}`, false},
		{`{"id":1,"session":0,"ops":[["x","k",1]]}`, false},
		{`{"id":1,"session":0,"ops":[["w","x"]]}`, false},
		{`{"id":1,"session":0,"ops":[["d","x",1]]}`, false},
		{`{"id":1,"session":0,"ops":[["w",null,1]]}`, false},
		{`{"id":1,"session":0,"ops":[["w","x",{"v":1}]]}`, false},
		{`{"id":1,"session":0,"ops":[["append","l",[1]]]}`, false},
		{`{"id":1,"session":0,"ops":[["r","x",1,{"lock":"yes"}]]}`, false},
		{`{"id":1,"session":0,"ops":[["scan","a","c",[["a"]]]]}`, false},
		{`{"id":1,"session":0,"ops":[["w","x",1.5]]}`, false},
		{`{"fault":"","begin":1}`, false},
		{`{"fault":"kill","node":"n1"}`, false},
		{`{"fault":"kill","begin":1,"offset":"1s"}`, false},
		{`["w","x",1]`, false},
	}
	for _, c := range cases {
		_, readErr := native.Read(strings.NewReader(header+"\n"+c.line+"\n"), "h.jsonl")
		if (readErr == nil) != c.ok {
			t.Errorf("%s: the reader says %v, want ok=%v", c.line, readErr, c.ok)
		}
		if err := schemaAccepts(sch, c.line); (err == nil) != c.ok {
			t.Errorf("%s: the schema says %v, want ok=%v", c.line, err, c.ok)
		}
	}

	headers := []struct {
		line string
		ok   bool
	}{
		{header, true},
		{`{"format":"isoscope-history","version":1,"initial":"absent","unique_values":true,"deletes":"tombstone","source":"PostgreSQL 15, serializable"}`, true},
		{`{"format":"isoscope-history","version":1,"initial":{"x":0,"y":null},"version_order":{"x":[1]}}`, true},
		{`{"format":"isoscope-history"}`, false},
		{`{"format":"isoscope-history","version":2}`, false},
		{`{"format":"elle","version":1}`, false},
		{`{"format":"isoscope-history","version":1,"initial":"zero"}`, false},
		{`{"format":"isoscope-history","version":1,"deletes":"soft"}`, false},
	}
	for _, c := range headers {
		_, readErr := native.Read(strings.NewReader(c.line+"\n"+`{"id":1,"session":0,"ops":[["w","x",1]]}`+"\n"), "h.jsonl")
		if (readErr == nil) != c.ok {
			t.Errorf("%s: the reader says %v, want ok=%v", c.line, readErr, c.ok)
		}
		if err := schemaAccepts(sch, c.line); (err == nil) != c.ok {
			t.Errorf("%s: the schema says %v, want ok=%v", c.line, err, c.ok)
		}
	}
}

// TestHistorySchemaValidatesWrittenLines validates every line the Writer
// writes (a header with initial values and tombstones, transactions of
// every status with instants and timestamps, lists, deletes and scans, and
// fault records) and every line of the repository's sample histories.
func TestHistorySchemaValidatesWrittenLines(t *testing.T) {
	sch := historySchema(t)
	h := history.MustParse("unique: init: x=0 | t1: s0: @10-20: w x 1 d y | unknown: t2: s1: r* x 1 w x 2 | t3: s2: ts=7-9: r x 2 scan a _ [x=2] | aborted: s3: w z 5")
	h.Header.Present, h.Header.Version = true, native.Version
	h.Header.Source = "sample"
	var out bytes.Buffer
	w, err := native.NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	for i := range h.Txns {
		if err := w.WriteTxn(&h.Txns[i]); err != nil {
			t.Fatal(err)
		}
		f := history.Fault{Kind: "clock", Node: "n1", Begin: int64(100 * i), End: int64(100*i + 50), Offset: -int64(i + 1), Info: "n1 behind"}
		if err := w.WriteFault(&f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	lists := history.MustParse("t1: s0: a l 1 | t2: s1: r l [1] a l 2")
	if err := native.Write(&out, lists); err != nil {
		t.Fatal(err)
	}
	written := out.String()
	for _, file := range []string{"testdata/small.jsonl", "../../../testdata/formats/isoscope.jsonl"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		written += string(b)
	}
	sc := bufio.NewScanner(strings.NewReader(written))
	n := 0
	for sc.Scan() {
		if line := sc.Text(); strings.TrimSpace(line) != "" {
			n++
			if err := schemaAccepts(sch, line); err != nil {
				t.Errorf("%s: %v", line, err)
			}
		}
	}
	if n < 12 {
		t.Fatalf("only %d lines validated", n)
	}
}
