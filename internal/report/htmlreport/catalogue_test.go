package htmlreport

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

// catalogue is one history per kind of the catalogue (as in
// internal/report's tests), and the level that finds it.
var catalogue = []struct {
	name     string
	kind     anomaly.Kind
	notation string
	level    level.ID
}{
	{"thin-air-read", anomaly.ThinAirRead, "init: x=0 | r x 5", level.Serializable},
	{"aborted-read", anomaly.AbortedRead, "init: x=0 | aborted: r x 0 w x 1 | r x 1", level.Serializable},
	{"future-read", anomaly.FutureRead, "init: x=0 | r x 1 w x 1", level.Serializable},
	{"not-my-last-write", anomaly.NotMyLastWrite, "init: x=0 | r x 0 w x 1 w x 2 r x 1", level.Serializable},
	{"not-my-own-write", anomaly.NotMyOwnWrite, "init: x=0 | r x 0 w x 1 r x 0", level.Serializable},
	{"intermediate-read", anomaly.IntermediateRead, "init: x=0 | r x 0 w x 1 w x 2 | r x 1", level.Serializable},
	{"non-repeatable-read", anomaly.NonRepeatableRead, "init: x=0 | r x 0 w x 1 | r x 0 r x 1", level.Serializable},
	{"session-guarantee-violation", anomaly.SessionGuaranteeViolation, "init: x=0 | s1: r x 0 w x 1 | s1: r x 0", level.Serializable},
	{"non-monotonic-read", anomaly.NonMonotonicRead, "init: x=0 y=0 | r x 0 w x 1 | r x 1 r y 0 w x 2 w y 1 | r y 1 r x 1", level.Serializable},
	{"fractured-read", anomaly.FracturedRead, "init: x=0 y=0 | r x 0 r y 0 w x 1 w y 1 | r y 0 r x 1", level.Serializable},
	{"causality-violation", anomaly.CausalityViolation, "init: x=0 y=0 | r x 0 w x 1 | r x 1 r y 0 w y 1 | r y 1 r x 0", level.Serializable},
	{"long-fork", anomaly.LongFork, "init: x=0 y=0 | r x 0 w x 1 | r y 0 w y 1 | r x 1 r y 0 | r y 1 r x 0", level.Serializable},
	{"lost-update", anomaly.LostUpdate, "init: x=0 | r x 0 w x 1 | r x 0 w x 2", level.Serializable},
	{"write-skew", anomaly.WriteSkew, "init: x=0 y=0 | r x 0 r y 0 w x 1 | r x 0 r y 0 w y 1", level.Serializable},
	{"real-time-violation", anomaly.RealTimeViolation, "init: x=0 | @0-1: r x 0 w x 1 | @2-3: r x 0", level.StrictSerializable},
	{"cycle-g1c", anomaly.Cycle, "init: x=0 y=0 | r x 0 w x 1 r y 1 | r y 0 w y 1 r x 1", level.Serializable},
	{"cycle-g0", anomaly.Cycle, "init: x=0 y=0 | w x 1 w y 2 | w x 2 w y 1 | r x 2 r y 2", level.Serializable},
	{"incompatible-order", anomaly.IncompatibleOrder, "a x 1 | a x 2 | r x [1,2] | r x [2,1]", level.Serializable},
	{"duplicate-elements", anomaly.DuplicateElements, "a x 1 | r x [1,1]", level.Serializable},
}

// checkedSection checks a notation history at a level.
func checkedSection(t testing.TB, notation string, id level.ID) Section {
	t.Helper()
	h := history.MustParse(notation)
	res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Holds: true})
	if err != nil {
		t.Fatal(err)
	}
	return FromChecked(&report.Checked{File: "h.jsonl", History: h, Result: res})
}

// predicateSection hand-builds a cycle of predicate edges (no checker
// reports them yet) over a history with scans: T2 --pwr(b)--> T1 --wr(a)-->
// T2 when prw is false; the predicate write skew T1 --prw(b)--> T2
// --prw(d)--> T1 when it is true.
func predicateSection(t testing.TB, prw bool) Section {
	t.Helper()
	var h *history.History
	var c []anomaly.Step
	key := func(s string) history.KeyID {
		k, ok := h.LookupKey(history.StringValue(s))
		if !ok {
			t.Fatalf("no key %s", s)
		}
		return k
	}
	if prw {
		h = history.MustParse("init: a=0 | scan a c [a=0] w d 1 | w b 1 scan d e []")
		c = []anomaly.Step{{From: 0, To: 1, Dep: anomaly.PRW, Key: key("b")}, {From: 1, To: 0, Dep: anomaly.PRW, Key: key("d")}}
	} else {
		h = history.MustParse("init: a=0 b=0 | w a 1 scan b c [b=2] | w b 2 r a 1")
		c = []anomaly.Step{{From: 0, To: 1, Dep: anomaly.WR, Key: key("a")}, {From: 1, To: 0, Dep: anomaly.PWR, Key: key("b")}}
	}
	a := anomaly.Anomaly{Kind: anomaly.Cycle, Phenomenon: anomaly.G2, Txns: []history.TxnID{0, 1}, Cycle: c, Key: history.NoKey}
	if !prw {
		a.Phenomenon = anomaly.G1c
	}
	res := check.Result{Level: level.Get(level.Serializable), Outcome: check.Violated, Checker: "hand", Stats: h.Stats(), Anomalies: []anomaly.Anomaly{a}}
	return FromChecked(&report.Checked{File: "h.jsonl", History: h, Result: res})
}

// allCases is the catalogue's sections, and the predicate ones, by name.
func allCases(t testing.TB) (names []string, secs map[string]Section) {
	secs = map[string]Section{}
	for _, c := range catalogue {
		s := checkedSection(t, c.notation, c.level)
		if !slices.ContainsFunc(s.Anomalies, func(a anomaly.Anomaly) bool { return a.Kind == c.kind }) {
			t.Fatalf("%s: no %s in %q", c.name, c.kind, c.notation)
		}
		names = append(names, c.name)
		secs[c.name] = s
	}
	names = append(names, "predicate-pwr", "predicate-prw")
	secs["predicate-pwr"] = predicateSection(t, false)
	secs["predicate-prw"] = predicateSection(t, true)
	return names, secs
}

var (
	classRE = regexp.MustCompile(`<([a-z]+)\b[^>]*?\bclass="([^"]*)"`)
	tagRE   = regexp.MustCompile(`<span class="tag ([^"]*)">([^<]*)</span>`)
	labelRE = regexp.MustCompile(`<g class="edge-label [^"]*">.*?<text[^>]*>([^<]*)</text>`)
)

// skeleton summarises a page's structure: how many elements of each tag
// and class, the highlight tags' texts and the edge labels, one per line,
// sorted. It does not depend on coordinates or styles.
func skeleton(page string) string {
	count := map[string]int{}
	for _, m := range classRE.FindAllStringSubmatch(page, -1) {
		count[m[1]+"."+strings.ReplaceAll(m[2], " ", ".")]++
	}
	for _, m := range tagRE.FindAllStringSubmatch(page, -1) {
		count["tag "+m[1]+": "+m[2]]++
	}
	for _, m := range labelRE.FindAllStringSubmatch(page, -1) {
		count["edge label: "+m[1]]++
	}
	count["<svg"] = strings.Count(page, "<svg")
	var lines []string
	for k, n := range count {
		lines = append(lines, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}
