package check_test

import (
	"context"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/polygraph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestStartOrder: with the start-order module, T1 precedes T2 whenever
// commit_ts(T1) < start_ts(T2): a history whose only serial orders put a
// transaction before one that committed before it started violates the
// level with the module and holds without it; concurrent timestamps add
// nothing; the transitive reduction of the edges keeps every order.
func TestStartOrder(t *testing.T) {
	cases := []struct {
		name     string
		h        string
		ser, mod bool // holds at the level: black-box, with the module
	}{
		{"a read of the state before a write that committed before the reader started",
			`s0: ts=1-2: w x 1 | s1: ts=3-4: r x _`, true, false},
		{"the same read by a transaction concurrent with the writer",
			`s0: ts=1-4: w x 1 | s1: ts=3-5: r x _`, true, true},
		{"the reader started after the writer committed and saw it",
			`s0: ts=1-2: w x 1 | s1: ts=3-4: r x 1`, true, true},
		{"ordered only through a third transaction (a reduced edge)",
			`s0: ts=1-2: w x 1 | s1: ts=3-4: w y 1 | s2: ts=5-6: r x _`, true, false},
		{"a predecessor concurrent with another predecessor is kept",
			`s0: ts=1-4: w x 1 | s1: ts=3-6: w y 1 | s2: ts=5-8: r x _`, true, false},
	}
	for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation} {
		l := level.Get(id)
		for _, c := range cases {
			t.Run(l.Name+"/"+c.name, func(t *testing.T) {
				h := history.MustParse(c.h)
				res, err := check.Run(context.Background(), h, l, check.Options{Checker: "sat"})
				if err != nil || (res.Outcome == check.Satisfied) != c.ser {
					t.Fatalf("black-box: %v %v (%s)", res.Outcome, err, kinds(res))
				}
				res, err = check.Run(context.Background(), h, l, check.Options{Modules: []checker.Module{polygraph.StartOrder{}}})
				if err != nil || (res.Outcome == check.Satisfied) != c.mod {
					t.Fatalf("with start-order: %v %v (%s)", res.Outcome, err, kinds(res))
				}
				if !c.mod {
					found := false
					for _, st := range res.Anomalies[0].Cycle {
						found = found || st.Dep == anomaly.RT
					}
					if !found {
						t.Errorf("the cycle %v has no start-order (rt) edge", res.Anomalies[0].Cycle)
					}
				}
			})
		}
	}
	h := history.MustParse(`s0: ts=1-2: w x 1 | s1: r x 1`)
	if _, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Modules: []checker.Module{polygraph.StartOrder{}}}); err == nil || !strings.Contains(err.Error(), "lacks start_ts") {
		t.Errorf("a transaction without timestamps: %v", err)
	}
	h = history.MustParse(`s0: ts=5-2: w x 1`)
	if _, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Modules: []checker.Module{polygraph.StartOrder{}}}); err == nil || !strings.Contains(err.Error(), "after its commit_ts") {
		t.Errorf("start_ts after commit_ts: %v", err)
	}
}

// TestInferOwnReads: inference picks the policy the history shows, the
// check follows it and the result says so; without inference the default
// stays own.
func TestInferOwnReads(t *testing.T) {
	cases := []struct {
		name, h  string
		policy   history.OwnReads
		own, ext int
		holds    bool // with the inferred policy
		ownHolds bool // with the default policy
	}{
		{"no read after an own write", `init: x=0 | s0: r x 0 w x 1`, history.MustReadOwn, 0, 0, true, true},
		{"reads its own writes", `init: x=0 | s0: w x 1 r x 1 | s1: w x 2 r x 2`, history.MustReadOwn, 2, 0, true, true},
		{"reads externally", `init: x=0 y=0 | s0: w x 1 r x 0 | s1: w y 1 r y 0`, history.ReadsExternal, 0, 2, true, false},
		{"mixed", `init: x=0 | s0: w x 1 r x 1 | s1: w x 2 r x 0`, history.ReadsEither, 1, 1, true, false},
		{"a scan that misses its own write, and a read that sees it", `s0: w 1 a scan 0 10 [] | s1: w 2 b r 2 b`, history.ReadsEither, 1, 1, true, false},
		{"external reads of a value nobody wrote stay a violation", `init: x=0 | s0: w x 1 r x 7`, history.ReadsExternal, 0, 1, false, false},
	}
	ser := level.Get(level.Serializable)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			res, err := check.Run(context.Background(), h, ser, check.Options{InferOwnReads: true})
			if err != nil {
				t.Fatal(err)
			}
			e := res.OwnReadsEvidence
			if e == nil || res.OwnReads != c.policy || e.Own != c.own || e.External != c.ext {
				t.Fatalf("inferred %s from %+v, want %s from %d own, %d external", res.OwnReads, e, c.policy, c.own, c.ext)
			}
			if got := res.Outcome == check.Satisfied; got != c.holds {
				t.Errorf("inferred: holds=%v, want %v (%s)", got, c.holds, kinds(res))
			}
			res, err = check.Run(context.Background(), h, ser, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Outcome == check.Satisfied; got != c.ownHolds || res.OwnReads != history.MustReadOwn || res.OwnReadsEvidence != nil {
				t.Errorf("default: holds=%v, want %v, policy %s (%s)", got, c.ownHolds, res.OwnReads, kinds(res))
			}
		})
	}
}

// TestTuning: a solver switch makes only the solver checkers decide (auto
// picks sat where mt would have), and a named checker without the
// switches refuses.
func TestTuning(t *testing.T) {
	h := history.MustParse(`init: x=0 | s0: r x 0 w x 1 | s1: r x 0 w x 2`)
	h.Header.UniqueValues = true
	ser := level.Get(level.Serializable)
	res, err := check.Run(context.Background(), h, ser, check.Options{})
	if err != nil || res.Checker != "mt" {
		t.Fatalf("without switches: %s %v", res.Checker, err)
	}
	for _, tu := range []checker.Tuning{{NoPrune: true}, {NoPhase: true}, {NoTwoWidth: true}, {NoChrono: true}, {NoUnsatSearch: true}, {Dense: true}} {
		res, err := check.Run(context.Background(), h, ser, check.Options{Tuning: tu})
		if err != nil || res.Checker != "sat" || res.Outcome != check.Violated {
			t.Errorf("%+v: %s %v %v", tu, res.Checker, res.Outcome, err)
		}
	}
	if _, err := check.Run(context.Background(), h, ser, check.Options{Tuning: checker.Tuning{NoPrune: true}, Checker: "mt"}); err == nil {
		t.Error("mt took a solver switch")
	}
}
