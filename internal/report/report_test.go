package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

func checked(t *testing.T, notation string, id level.ID) *Checked {
	t.Helper()
	h := history.MustParse(notation)
	res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Holds: true})
	if err != nil {
		t.Fatal(err)
	}
	return &Checked{File: "h", History: h, Result: res}
}

// TestTextGroupsByKind: many anomalies are grouped by kind, the first few
// of each shown, the rest counted.
func TestTextGroupsByKind(t *testing.T) {
	var b strings.Builder
	b.WriteString("init: x=0 ")
	for i := range 5 {
		b.WriteString("| r x 9" + strings.Repeat(" ", i)) // five thin-air reads
	}
	b.WriteString("| s7: r y _ w y 1 | s8: r y _ w y 2") // one lost update
	c := checked(t, b.String(), level.Serializable)
	var out bytes.Buffer
	if err := Text(&out, c, TextOptions{PerKind: 2}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"serializable VIOLATED: 6 anomalies",
		"thin-air-read: 5", "… and 3 more",
		"lost-update [G2-item]: 1", "--rw(y)-->",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "thin-air-read") > strings.Index(text, "lost-update") {
		t.Error("kinds not in catalogue order")
	}
}

// kindCases are a history per kind of anomaly the checkers report
// (strict serializability finds the real-time violation, serializability
// the rest).
var kindCases = map[anomaly.Kind]string{
	anomaly.ThinAirRead:               "init: x=0 | r x 5",
	anomaly.AbortedRead:               "init: x=0 | aborted: r x 0 w x 1 | r x 1",
	anomaly.FutureRead:                "init: x=0 | r x 1 w x 1",
	anomaly.NotMyLastWrite:            "init: x=0 | r x 0 w x 1 w x 2 r x 1",
	anomaly.NotMyOwnWrite:             "init: x=0 | r x 0 w x 1 r x 0",
	anomaly.IntermediateRead:          "init: x=0 | r x 0 w x 1 w x 2 | r x 1",
	anomaly.NonRepeatableRead:         "init: x=0 | r x 0 w x 1 | r x 0 r x 1",
	anomaly.SessionGuaranteeViolation: "init: x=0 | s1: r x 0 w x 1 | s1: r x 0",
	anomaly.NonMonotonicRead:          "init: x=0 y=0 | r x 0 w x 1 | r x 1 r y 0 w x 2 w y 1 | r y 1 r x 1",
	anomaly.FracturedRead:             "init: x=0 y=0 | r x 0 r y 0 w x 1 w y 1 | r y 0 r x 1",
	anomaly.CausalityViolation:        "init: x=0 y=0 | r x 0 w x 1 | r x 1 r y 0 w y 1 | r y 1 r x 0",
	anomaly.LongFork:                  "init: x=0 y=0 | r x 0 w x 1 | r y 0 w y 1 | r x 1 r y 0 | r y 1 r x 0",
	anomaly.LostUpdate:                "init: x=0 | r x 0 w x 1 | r x 0 w x 2",
	anomaly.WriteSkew:                 "init: x=0 y=0 | r x 0 r y 0 w x 1 | r x 0 r y 0 w y 1",
	anomaly.RealTimeViolation:         "init: x=0 | @0-1: r x 0 w x 1 | @2-3: r x 0",
	anomaly.Cycle:                     "init: x=0 y=0 | r x 0 w x 1 r y 1 | r y 0 w y 1 r x 1",
	anomaly.IncompatibleOrder:         "a x 1 | a x 2 | r x [1,2] | r x [2,1]",
	anomaly.DuplicateElements:         "a x 1 | r x [1,1]",
}

// kindLevel is the level that finds kind's case.
func kindLevel(kind anomaly.Kind) level.ID {
	if kind == anomaly.RealTimeViolation {
		return level.StrictSerializable
	}
	return level.Serializable
}

// TestExplanationsForEveryKind: every kind the checkers report renders a
// sentence that names its transactions.
func TestExplanationsForEveryKind(t *testing.T) {
	for kind, notation := range kindCases {
		c := checked(t, notation, kindLevel(kind))
		found := false
		for i := range c.Result.Anomalies {
			a := &c.Result.Anomalies[i]
			if a.Kind != kind {
				continue
			}
			found = true
			e := Explain(c.History, a)
			if !regexp.MustCompile(`T[0-9]`).MatchString(e) {
				t.Errorf("%s: explanation names no transaction: %q", kind, e)
			}
		}
		if !found {
			t.Errorf("%s: not found in %q", kind, notation)
		}
	}
}

func TestTextNamesWhatStillHolds(t *testing.T) {
	c := checked(t, "init: x=0 y=0 | r x 0 r y 0 w x 1 | r x 0 r y 0 w y 1", level.Serializable)
	var out bytes.Buffer
	if err := Text(&out, c, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "still holds: snapshot-isolation") {
		t.Errorf("write skew: %s", out.String())
	}
}

func TestJSONShape(t *testing.T) {
	c := checked(t, "init: x=0 | r x 0 w x 1 | r x 0 w x 2", level.SnapshotIsolation)
	var out bytes.Buffer
	if err := JSON(&out, c); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"level", "outcome", "checker", "history", "anomalies", "elapsed_ms"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out.String())
		}
	}
	if m["file"] != "h" || m["schema"] != float64(Schema) {
		t.Errorf("a single history's result names no file or schema: %s", out.String())
	}
	a := m["anomalies"].([]any)[0].(map[string]any)
	if a["kind"] != "lost-update" || a["phenomenon"] != "G2-item" || len(a["cycle"].([]any)) != 2 {
		t.Errorf("anomaly: %v", a)
	}
}

// TestPhantomExplained: a cycle through a scan is explained step by step,
// saying what the scan saw.
func TestPhantomExplained(t *testing.T) {
	c := checked(t, "w 1 a w 2 b | d 1 d 2 | scan 0 10 [2=b]", level.Serializable)
	if len(c.Result.Anomalies) != 1 {
		t.Fatalf("want one anomaly, got %v", c.Result.Anomalies)
	}
	e := Explain(c.History, &c.Result.Anomalies[0])
	for _, want := range []string{"a phantom", "a scan of T3 saw key", "before T"} {
		if !strings.Contains(e, want) {
			t.Errorf("explanation %q lacks %q", e, want)
		}
	}
}

// TestNonRepeatableScanExplained: a non-repeatable read through a scan
// says what the scan returned, not the scan operation's empty value.
func TestNonRepeatableScanExplained(t *testing.T) {
	c := checked(t, "w 1 a | scan 0 10 [1=a] r 1 _", level.Serializable)
	for i := range c.Result.Anomalies {
		a := &c.Result.Anomalies[i]
		if a.Kind != anomaly.NonRepeatableRead {
			continue
		}
		if e := Explain(c.History, a); !strings.Contains(e, "got a (a scan), then null") {
			t.Errorf("explanation %q", e)
		}
		return
	}
	t.Fatalf("no non-repeatable read in %v", c.Result.Anomalies)
}

// TestBlindLostUpdateExplained: when only one side of a lost update read
// the key, the explanation does not say both did.
func TestBlindLostUpdateExplained(t *testing.T) {
	h := history.MustParse("init: x=0 | r x 0 w x 1 | w x 2")
	x, _ := h.LookupKey(history.StringValue("x"))
	a := anomaly.Anomaly{Kind: anomaly.LostUpdate, Phenomenon: anomaly.GSingle, Txns: []history.TxnID{0, 1}, Key: x,
		Cycle: []anomaly.Step{{From: 0, To: 1, Dep: anomaly.RW, Key: x}, {From: 1, To: 0, Dep: anomaly.WW, Key: x}}}
	e := Explain(h, &a)
	if strings.Contains(e, "both read") || !strings.Contains(e, "T1 read x, T2 then wrote it, and T1 overwrote that write without having seen it") {
		t.Errorf("explanation %q", e)
	}
}

// TestNoOrderExplained: the register checker's counterexample — the
// longest prefix of a linearization and the operation that cannot follow
// it — is explained in text and JSON, and survives a saved result.
func TestNoOrderExplained(t *testing.T) {
	// Two compare-and-sets from 1 (lost update), concurrent with reads and
	// writes of 1 and 2 that leave the refutation nothing to say.
	c := checked(t, "@1-2: w x 1 | @3-8: r x 1 w x 2 | @3-8: r x 1 w x 3 | @3-8: w x 1 | @9-10: r x 3 | @9-10: r x 2", level.StrictSerializable)
	var a *anomaly.Anomaly
	for i := range c.Result.Anomalies {
		if x := &c.Result.Anomalies[i]; x.Kind == anomaly.RealTimeViolation && !x.IsCycle() {
			a = x
		}
	}
	if a == nil {
		t.Fatalf("no prefix counterexample in %v (checker %s)", c.Result.Anomalies, c.Result.Checker)
	}
	e := Explain(c.History, a)
	for _, want := range []string{"no order of the operations on x respects real time", "the longest prefix of one that does", "none of the operations left can come next", "the first of them to end"} {
		if !strings.Contains(e, want) {
			t.Errorf("explanation %q lacks %q", e, want)
		}
	}
	var b bytes.Buffer
	if err := JSON(&b, c); err != nil {
		t.Fatal(err)
	}
	var d Document
	if err := json.Unmarshal(b.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	back, err := Resolve("h", c.History, &d)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range back.Result.Anomalies {
		if got, want := Explain(back.History, &x), Explain(c.History, &c.Result.Anomalies[i]); got != want {
			t.Errorf("resolved from JSON: %q\nwant %q", got, want)
		}
	}
}

// TestGroupNamedFirst: the named kinds come in catalogue order before the
// generic cycles, however many cycles there are, each kind keeping its
// anomalies in the result's order.
func TestGroupNamedFirst(t *testing.T) {
	as := []anomaly.Anomaly{
		{Kind: anomaly.Cycle}, {Kind: anomaly.WriteSkew}, {Kind: anomaly.Cycle}, {Kind: anomaly.Cycle},
		{Kind: anomaly.AbortedRead}, {Kind: anomaly.Cycle}, {Kind: anomaly.WriteSkew},
	}
	var got []string
	for _, g := range Group(as) {
		got = append(got, fmt.Sprint(g.Kind, g.Indices))
	}
	want := []string{"aborted-read [4]", "write-skew [1 6]", "cycle [0 2 3 5]"}
	if !slices.Equal(got, want) {
		t.Errorf("Group = %q, want %q", got, want)
	}
}
