package report

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/evidence"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// goldenCase is one hand-built history, the level (and checker, modules,
// version order) it is checked with, and what the check must find: every
// kind of the catalogue (docs/anomalies.md), and the edges of each basis
// of evidence.
type goldenCase struct {
	name     string
	notation string
	level    level.ID
	kind     anomaly.Kind
	// checker and modules, when set, choose them.
	checker string
	modules []string
	// versionOrder, when set, is the header's version order: key → the
	// ids of its writers in order.
	versionOrder map[string][]int64
	// bases the cycle's evidence must show (every one found anyway).
	bases []evidence.Basis
}

var goldenCases = []goldenCase{
	{name: "thin-air-read", notation: "init: x=0 | s1: r x 5", level: level.Serializable, kind: anomaly.ThinAirRead},
	{name: "aborted-read", notation: "init: x=0 | s1: aborted: r x 0 w x 1 | s2: r x 1", level: level.Serializable, kind: anomaly.AbortedRead},
	{name: "future-read", notation: "init: x=0 | s1: r x 1 w x 1", level: level.Serializable, kind: anomaly.FutureRead},
	{name: "not-my-last-write", notation: "init: x=0 | s1: r x 0 w x 1 w x 2 r x 1", level: level.Serializable, kind: anomaly.NotMyLastWrite},
	{name: "not-my-own-write", notation: "init: x=0 | s1: r x 0 w x 1 r x 0", level: level.Serializable, kind: anomaly.NotMyOwnWrite},
	{name: "intermediate-read", notation: "init: x=0 | s1: r x 0 w x 1 w x 2 | s2: r x 1", level: level.Serializable, kind: anomaly.IntermediateRead},
	{name: "non-repeatable-read", notation: "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 r x 1", level: level.Serializable, kind: anomaly.NonRepeatableRead},
	{name: "session-guarantee-violation", notation: "init: x=0 | s1: r x 0 w x 1 | s1: r x 0", level: level.Serializable,
		kind: anomaly.SessionGuaranteeViolation, bases: []evidence.Basis{evidence.Session, evidence.Initial}},
	{name: "non-monotonic-read", notation: "init: x=0 y=0 | s1: r x 0 w x 1 | s2: r x 1 r y 0 w x 2 w y 1 | s3: r y 1 r x 1", level: level.Serializable,
		kind: anomaly.NonMonotonicRead, bases: []evidence.Basis{evidence.Read, evidence.ReadModifyWrite}},
	{name: "fractured-read", notation: "init: x=0 y=0 | s1: r x 0 r y 0 w x 1 w y 1 | s2: r y 0 r x 1", level: level.Serializable,
		kind: anomaly.FracturedRead, bases: []evidence.Basis{evidence.Read, evidence.Initial}},
	{name: "causality-violation", notation: "init: x=0 y=0 | s1: r x 0 w x 1 | s2: r x 1 r y 0 w y 1 | s3: r y 1 r x 0", level: level.Serializable,
		kind: anomaly.CausalityViolation},
	{name: "long-fork", notation: "init: x=0 y=0 | s1: r x 0 w x 1 | s2: r y 0 w y 1 | s3: r x 1 r y 0 | s4: r y 1 r x 0", level: level.Serializable, kind: anomaly.LongFork},
	{name: "lost-update", notation: "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2", level: level.SnapshotIsolation, kind: anomaly.LostUpdate},
	{name: "lost-update-either-order", notation: "init: x=0 | s0: w x 5 | s1: r x 5 w x 1 | s2: r x 5 w x 2", level: level.CursorStability, kind: anomaly.LostUpdate,
		checker: "sat", bases: []evidence.Basis{evidence.EitherOrder, evidence.ReadModifyWrite}},
	{name: "write-skew", notation: "init: x=0 y=0 | s1: r x 0 r y 0 w x 1 | s2: r x 0 r y 0 w y 1", level: level.Serializable, kind: anomaly.WriteSkew},
	{name: "real-time-violation", notation: "init: x=0 | s1: @0-1: r x 0 w x 1 | s2: @2-3: r x 0", level: level.StrictSerializable,
		kind: anomaly.RealTimeViolation, bases: []evidence.Basis{evidence.RealTime}},
	{name: "incompatible-order", notation: "a x 1 | a x 2 | r x [1,2] | r x [2,1]", level: level.Serializable, kind: anomaly.IncompatibleOrder},
	{name: "duplicate-elements", notation: "a x 1 | r x [1,1]", level: level.Serializable, kind: anomaly.DuplicateElements},
	{name: "stale-read", notation: "init: x=0 | s1: ts=1-2: r x 0 w x 1 | s2: ts=3-4: r x 0", level: level.SnapshotIsolation, kind: anomaly.StaleRead},
	{name: "read-beyond-snapshot", notation: "init: x=0 | s1: ts=1-5: r x 0 w x 1 | s2: ts=3-4: r x 1", level: level.SnapshotIsolation, kind: anomaly.ReadBeyondSnapshot},
	{name: "concurrent-write", notation: "s1: ts=1-3: w x 1 | s2: ts=2-4: w x 2", level: level.SnapshotIsolation, kind: anomaly.ConcurrentWrite},
	{name: "commit-before-start", notation: "s1: ts=5-3: w x 1", level: level.SnapshotIsolation, kind: anomaly.CommitBeforeStart},
	{name: "cycle-g1c", notation: "init: x=0 y=0 | s1: r x 0 w x 1 r y 1 | s2: r y 0 w y 1 r x 1", level: level.Serializable, kind: anomaly.Cycle},

	// The bases of evidence the catalogue does not show.
	{name: "phantom", notation: "w 1 a w 2 b | d 1 d 2 | scan 0 10 [2=b]", level: level.Serializable, kind: anomaly.FracturedRead},
	{name: "predicate-write-skew", notation: "s0: scan 0 10 [] w 1 x | s1: scan 0 10 [] w 2 y", level: level.Serializable, kind: anomaly.Cycle},
	{name: "list-order", notation: "a x 1 a y 1 | a x 2 a y 2 | r x [1,2] r y [2,1]", level: level.Serializable,
		kind: anomaly.Cycle, bases: []evidence.Basis{evidence.ListOrder}},
	{name: "version-order", notation: "init: x=0 y=0 | w x 1 w y 1 | w x 2 w y 2", level: level.Serializable, kind: anomaly.Cycle,
		versionOrder: map[string][]int64{"x": {1, 2}, "y": {2, 1}}, bases: []evidence.Basis{evidence.VersionOrder}},
	{name: "commit-order", notation: "init: x=0 y=0 | ts=3-4: w x 1 r y 0 | ts=1-2: w x 2 w y 1", level: level.Serializable, kind: anomaly.Cycle,
		checker: "sat", modules: []string{"commit-order"}, bases: []evidence.Basis{evidence.CommitOrder, evidence.Initial}},
	{name: "start-order", notation: "init: x=0 | ts=1-2: w x 1 | ts=3-4: r x 0", level: level.Serializable, kind: anomaly.RealTimeViolation,
		checker: "sat", modules: []string{"start-order"}, bases: []evidence.Basis{evidence.Timestamps}},
	{name: "inferred", notation: "init: x=0 y=0 z=0 | w x 1 w y 1 | r y 1 w x 2 w z 1 | r z 1 r x 1", level: level.Serializable, kind: anomaly.NonMonotonicRead,
		bases: []evidence.Basis{evidence.Inferred}},
	{name: "inferred-by-a-reader", notation: "init: x=0 y=0 z=0 | w x 1 w y 1 | w x 2 w y 2 | r x 1 r y 2 | r z 0 w z 1", level: level.Serializable, kind: anomaly.Cycle,
		bases: []evidence.Basis{evidence.Inferred}},
	{name: "best-found", notation: "init: x=0 y=0 | s1: r x 1 r y 0 | s2: w x 1 w y 1 | s3: w x 1 w y 2 | s4: r y 2 w x 2", level: level.Serializable,
		kind: anomaly.NonMonotonicRead, bases: []evidence.Basis{evidence.Chosen}},
}

// goldenChecked checks c's history.
func goldenChecked(t *testing.T, c goldenCase) *Checked {
	t.Helper()
	h := history.MustParse(c.notation)
	for k, ids := range c.versionOrder {
		if h.Header.VersionOrder == nil {
			h.Header.VersionOrder = map[history.KeyID][]history.TxnID{}
		}
		key, _ := h.LookupKey(history.StringValue(k))
		for _, id := range ids {
			h.Header.VersionOrder[key] = append(h.Header.VersionOrder[key], history.TxnID(id-1))
		}
	}
	o := check.Options{Holds: true, Checker: c.checker}
	for _, m := range c.modules {
		o.Modules = append(o.Modules, check.Modules()[m])
	}
	res, err := check.Run(context.Background(), h, level.Get(c.level), o)
	if err != nil {
		t.Fatal(err)
	}
	return &Checked{File: "h.jsonl", History: h, Result: res}
}

// TestGoldenEvidence: the text and the JSON result of a hand-built
// history of every kind of the catalogue, and of every basis of edge
// evidence, with each edge's evidence, are the golden files' (go test
// -update rewrites them; review the diff). Every edge has evidence.
func TestGoldenEvidence(t *testing.T) {
	kinds := map[anomaly.Kind]bool{}
	bases := map[evidence.Basis]bool{}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			ch := goldenChecked(t, c)
			r := &ch.Result
			if !slices.ContainsFunc(r.Anomalies, func(a anomaly.Anomaly) bool { return a.Kind == c.kind }) {
				t.Fatalf("no %s in %+v", c.kind, r.Anomalies)
			}
			kinds[c.kind] = true
			seen := map[evidence.Basis]bool{}
			for i := range r.Anomalies {
				for _, e := range ch.Evidence(i) {
					if !e.Found() || (len(e.Ops) == 0 && e.Dep != anomaly.SO && e.Dep != anomaly.RT) {
						t.Errorf("%s: %s --%s--> %s: no evidence found", r.Anomalies[i].Kind, ch.History.TxnName(e.From), e.Dep, ch.History.TxnName(e.To))
					}
					seen[e.Basis] = true
					bases[e.Basis] = true
					for _, l := range e.Order {
						seen[l.Basis] = true
						bases[l.Basis] = true
					}
				}
			}
			for _, b := range c.bases {
				if !seen[b] {
					t.Errorf("no edge of basis %s (saw %v)", b, seen)
				}
			}
			var text, js bytes.Buffer
			if err := Text(&text, ch, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := JSON(&js, ch); err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, js.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/evidence/"+c.name+".txt", text.String())
			golden.Check(t, "testdata/evidence/"+c.name+".json", pretty.String()+"\n")
		})
	}
	for _, k := range anomaly.Kinds() {
		if !kinds[k] {
			t.Errorf("no golden case of %s", k)
		}
	}
	for _, b := range evidence.Bases() {
		if !bases[b] && b != evidence.Missing && b != evidence.Chain {
			t.Errorf("no golden case shows an edge of basis %s", b)
		}
	}
}
