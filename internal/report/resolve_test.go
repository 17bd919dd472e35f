package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// resolveJSON writes c as check --json does, reads it back and resolves
// it against c's history.
func resolveJSON(t *testing.T, c *Checked) (saved []byte, back *Checked) {
	t.Helper()
	var b bytes.Buffer
	if err := JSON(&b, c); err != nil {
		t.Fatal(err)
	}
	docs, err := ReadDocuments(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	back, err = Resolve(c.File, c.History, docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), back
}

// TestResolveRoundTrip: a saved result resolves back to the result it
// was written from: the same anomalies (operations at issue included),
// and the same JSON again.
func TestResolveRoundTrip(t *testing.T) {
	for kind, notation := range kindCases {
		c := checked(t, notation, kindLevel(kind))
		c.Elapsed = 1234567 * time.Microsecond
		c.Result.OwnReads, c.Result.OwnReadsEvidence = history.ReadsEither, &history.OwnReadsEvidence{Own: 2, External: 3}
		c.Result.Modules = []string{"commit-order"}
		saved, back := resolveJSON(t, c)
		for i := range c.Result.Anomalies {
			a, b := c.Result.Anomalies[i], back.Result.Anomalies[i]
			if a.IsCycle() { // the JSON has a cycle's keys on its edges only
				a.Key, a.Value = history.NoKey, history.Value{}
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: anomaly %d:\n got %+v\nwant %+v", kind, i, b, a)
			}
		}
		var again bytes.Buffer
		if err := JSON(&again, back); err != nil {
			t.Fatal(err)
		}
		if again.String() != string(saved) {
			t.Errorf("%s: the resolved result writes differently:\n got %s\nwant %s", kind, again.String(), saved)
		}
	}
}

// TestResolveOps: a non-cycle anomaly's operations at issue are in the
// JSON, and a result without them (written before they were) still
// resolves, without them.
func TestResolveOps(t *testing.T) {
	c := checked(t, kindCases[anomaly.IntermediateRead], level.Serializable)
	saved, _ := resolveJSON(t, c)
	if !strings.Contains(string(saved), `"ops":[{"transaction":2,"index":0},{"transaction":1,"index":1},{"transaction":1,"index":2}]`) {
		t.Errorf("no operations at issue in %s", saved)
	}
	old := regexp.MustCompile(`,"ops":\[[^\]]*\]`).ReplaceAll(saved, nil)
	docs, err := ReadDocuments(bytes.NewReader(old))
	if err != nil {
		t.Fatal(err)
	}
	back, err := Resolve("h", c.History, docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if a := back.Result.Anomalies[0]; a.Kind != anomaly.IntermediateRead || len(a.Ops) != 0 || len(a.Txns) == 0 {
		t.Errorf("without ops: %+v", a)
	}
}

// TestResolveErrors: a result that is not one, or that names what the
// history does not hold, is refused, saying what.
func TestResolveErrors(t *testing.T) {
	c := checked(t, "init: x=0 | r x 0 w x 1 | r x 0 w x 2", level.Serializable)
	saved, _ := resolveJSON(t, c)
	docs, err := ReadDocuments(bytes.NewReader(saved))
	if err != nil {
		t.Fatal(err)
	}
	other := history.MustParse("init: x=0 | t7: r x 0 w x 1 | t8: r x 0 w x 2")
	if _, err := Resolve("h", other, docs[0]); err == nil || !strings.Contains(err.Error(), "transaction 1 is not in the history") {
		t.Errorf("wrong history: %v", err)
	}
	anomalies := func(s string) string {
		return `{"level":"serializable","outcome":"violation","anomalies":[` + s + `]}`
	}
	for _, tc := range []struct{ in, err string }{
		{"", "empty"},
		{`{"level":"serializable"`, "unexpected EOF"},
		{`{"a":1}`, "not an isoscope result"},
		{`{"level":"nope","outcome":"violation"}`, "unknown isolation level"},
		{`{"level":"serializable","outcome":"nope"}`, "unknown outcome"},
		{`{"level":"serializable","outcome":"violation","holds":["nope"]}`, "holds"},
		{`{"level":"serializable","outcome":"violation","own_reads":{"policy":"nope"}}`, "read-your-own-writes policy"},
		{anomalies(`{"kind":"nope","transactions":[]}`), "unknown kind"},
		{anomalies(`{"kind":"lost-update","transactions":[1.5]}`), "not an integer"},
		{anomalies(`{"kind":"lost-update","transactions":[1],"core":[9]}`), "transaction 9 is not in the history"},
		{anomalies(`{"kind":"thin-air-read","transactions":[1],"key":"zz"}`), "key zz is not in the history"},
		{anomalies(`{"kind":"lost-update","transactions":[1],"cycle":[{"from":1,"to":2,"dep":"xx"}]}`), "unknown dependency"},
		{anomalies(`{"kind":"thin-air-read","transactions":[1],"ops":[{"transaction":1,"index":7}]}`), "operation 7 of transaction 1 is not in the history"},
		{anomalies(`{"kind":"thin-air-read","transactions":[1],"ops":[{"transaction":"init","index":0}]}`), "is not in the history"},
	} {
		docs, err := ReadDocuments(strings.NewReader(tc.in))
		if err == nil {
			_, err = Resolve("h", c.History, docs[0])
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

// TestResolveErrorDocument: a file's "error" outcome resolves to a
// Checked that failed, which writes the same document again.
func TestResolveErrorDocument(t *testing.T) {
	h := history.MustParse("init: x=0 | r x 0")
	in := `{"schema":1,"file":"h","level":"serializable","outcome":"error","checker":"","history":{"transactions":0,"committed":0,"aborted":0,"unknown":0,"sessions":0,"operations":0,"keys":0},"anomalies":[],"elapsed_ms":0,"error":"h:1: bad"}` + "\n"
	docs, err := ReadDocuments(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Resolve("h", h, docs[0])
	if err != nil || c.Err == nil || c.Err.Error() != "h:1: bad" || c.Result.Level.ID != level.Serializable {
		t.Fatalf("%+v, %v", c, err)
	}
	var b bytes.Buffer
	if err := JSON(&b, c); err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	json.Unmarshal([]byte(in), &want)
	json.Unmarshal(b.Bytes(), &got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s\nwant %s", b.String(), in)
	}
}

// TestExplainMalformed: an anomaly resolved from a result file that is
// not isoscope's may lack what its kind's sentence names; Explain, which
// renders the resolved result, says "?" for it instead of failing.
func TestExplainMalformed(t *testing.T) {
	h := history.MustParse("init: x=0 | r x 0 w x 1 | r x 1")
	for _, k := range anomaly.Kinds() {
		for _, a := range []anomaly.Anomaly{
			{Kind: k, Key: history.NoKey},
			{Kind: k, Key: 0, Txns: []history.TxnID{0}},
			{Kind: k, Key: 0, Txns: []history.TxnID{history.Init, 1, 0}, Ops: []history.OpRef{{Txn: 1, Op: 0}}},
			{Kind: k, Key: history.NoKey, Cycle: []anomaly.Step{{From: 0, To: 0, Dep: anomaly.WR, Key: history.NoKey}}},
			{Kind: k, Key: 0, Txns: []history.TxnID{history.Init}, Cycle: []anomaly.Step{{From: history.Init, To: 1, Dep: anomaly.RW, Key: 0}}},
		} {
			if e := Explain(h, &a); e == "" {
				t.Errorf("%s %+v: no explanation", k, a)
			}
			_ = NewFinding(h, &a)
		}
	}
}
