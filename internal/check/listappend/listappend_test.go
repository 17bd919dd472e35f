package listappend_test

import (
	"context"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

const ok = "holds"

// cases: hand-built list-append histories with their verdicts at SER, SI
// and RC (transactions overlap in time unless instants are given).
var cases = []struct {
	name        string
	hist        string
	ser, si, rc string
}{
	{"serial appends", "s1: a x 1 | s1: a x 2 r x [1,2] | s2: r x [1,2]", ok, ok, ok},
	{"empty read before", "s1: r x [] | s2: a x 1 | s3: r x [1]", ok, ok, ok},
	{"unobserved append", "s1: a x 1 | s2: r x [1] a x 2", ok, ok, ok},
	{"lost append", "s1: r x [] a x 1 | s2: r x [] a x 2 | s3: r x [1,2]", "lost-update", "lost-update", ok},
	{"lost appends, neither observed", "s1: r x [] a x 1 | s2: r x [] a x 2", "lost-update", "lost-update", ok},
	{"Elle's lost update", "s0: a x 0 | s1: r x [0] a x 1 | s2: r x [0] a x 2", "lost-update", "lost-update", ok},
	{"concurrent blind appends", "s1: a x 1 | s2: a x 2 | s3: r x []", ok, ok, ok},
	{"stale appends on two keys", "s1: r x [] r y [] a x 1 a y 1 | s2: r x [] a x 2 | s3: r y [] a y 2", "lost-update", "lost-update", ok},
	{"unobserved appends, one stale reader", "s1: a x 1 | s2: r x [1] a x 2 | s3: r x [1] | s4: a x 3", ok, ok, ok},
	{"unknown stale appender did not commit", "s1: r x [] a x 1 | s2: unknown: r x [] a x 2", ok, ok, ok},
	{"write skew", "s1: r x [] r y [] a x 1 | s2: r x [] r y [] a y 1 | s3: r x [1] r y [1]", "write-skew", ok, ok},
	{"G1c", "s1: a x 1 r y [1] | s2: a y 1 r x [1]", "cycle", "cycle", "cycle"},
	{"G0 write cycle", "s1: a x 1 a y 1 | s2: a x 2 a y 2 | s3: r x [1,2] r y [2,1]", "cycle", "cycle", "cycle"},
	{"incompatible order", "s1: a x 1 | s2: a x 2 | s3: r x [1,2] | s4: r x [2,1]", "incompatible-order", "incompatible-order", "incompatible-order"},
	{"duplicate elements", "s1: a x 1 | s2: r x [1,1]", "duplicate-elements", "duplicate-elements", "duplicate-elements"},
	{"thin air", "s1: r x [7]", "thin-air-read", "thin-air-read", "thin-air-read"},
	{"aborted read", "s1: aborted: a x 1 | s2: r x [1]", "aborted-read", "aborted-read", "aborted-read"},
	{"intermediate read", "s1: a x 1 a x 2 | s2: r x [1]", "intermediate-read", "intermediate-read", "intermediate-read"},
	{"own append missing", "s1: a x 1 r x []", "not-my-own-write", "not-my-own-write", "not-my-own-write"},
	{"future read", "s1: r x [1] a x 1", "future-read", "future-read", "future-read"},
	{"unknown observed", "s1: unknown: a x 1 | s2: r x [1]", ok, ok, ok},
	{"unknown unobserved, stale", "s1: unknown: r x [] a x 1 | s2: r x [] a x 2 | s3: r x [2]", ok, ok, ok},
	{"session order", "s1: a x 1 | s1: r x []", "session-guarantee-violation", "session-guarantee-violation", ok},
	{"fractured read", "s1: a x 1 a y 1 | s2: r y [] r x [1]", "fractured-read", "fractured-read", ok},
	{"long fork", "s1: a x 1 | s2: a y 1 | s3: r x [1] r y [] | s4: r y [1] r x []", "long-fork", "long-fork", ok},
	{"non-repeatable read", "s1: a x 1 | s2: r x [] r x [1]", "non-repeatable-read", "non-repeatable-read", ok},
}

func TestCases(t *testing.T) {
	for _, tc := range cases {
		for _, lv := range []struct {
			id   level.ID
			want string
		}{{level.Serializable, tc.ser}, {level.SnapshotIsolation, tc.si}, {level.ReadCommitted, tc.rc}} {
			h := history.MustParse(tc.hist)
			res, err := check.Run(context.Background(), h, level.Get(lv.id), check.Options{})
			if err != nil {
				t.Fatalf("%s at %s: %v", tc.name, lv.id, err)
			}
			if res.Checker != "list-append" {
				t.Fatalf("%s: checker %s", tc.name, res.Checker)
			}
			got := ok
			if res.Outcome != check.Satisfied {
				got = res.Anomalies[0].Kind.String()
			}
			if got != lv.want {
				var all []string
				for _, a := range res.Anomalies {
					all = append(all, a.Kind.String())
				}
				t.Errorf("%s at %s: got %s, want %s (all: %v)", tc.name, lv.id, got, lv.want, all)
			}
		}
	}
}

// TestElleLostUpdate is Elle's lost update, once said to hold at SI: two
// transactions both read [0] from x and both append to it. Snapshot
// isolation orders the two appends one way or the other, and either order
// makes a lost update; the checker, named or chosen, must say so with a
// cycle of the two transactions.
func TestElleLostUpdate(t *testing.T) {
	h := history.MustParse("s0: a x 0 | s1: r x [0] a x 1 | s2: r x [0] a x 2")
	x, _ := h.LookupKey(history.StringValue("x"))
	for _, name := range []string{"list-append", "auto"} {
		res, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{Checker: name})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != check.Violated || res.Checker != "list-append" || len(res.Anomalies) != 1 {
			t.Fatalf("%s: %v by %s, %d anomalies", name, res.Outcome, res.Checker, len(res.Anomalies))
		}
		a := res.Anomalies[0]
		if a.Kind.String() != "lost-update" || len(a.Cycle) != 2 {
			t.Fatalf("%s: %s with cycle %v", name, a.Kind, a.Cycle)
		}
		deps := map[string]bool{}
		for i, st := range a.Cycle {
			deps[st.Dep.String()] = true
			if st.Key != x || st.From == st.To || st.From < 1 || st.To < 1 || a.Cycle[(i+1)%2].From != st.To {
				t.Errorf("%s: step %+v of cycle %v", name, st, a.Cycle)
			}
		}
		if !deps["ww"] || !deps["rw"] {
			t.Errorf("%s: cycle %v, want a ww and an rw edge", name, a.Cycle)
		}
	}
}

func TestRealTime(t *testing.T) {
	h := history.MustParse("s1: @0-1: a x 1 | s2: @2-3: r x []")
	for id, want := range map[level.ID]check.Outcome{level.Serializable: check.Satisfied, level.StrictSerializable: check.Violated} {
		res, err := check.Run(context.Background(), h, level.Get(id), check.Options{})
		if err != nil || res.Outcome != want {
			t.Errorf("%s: %v %v, want %v", id, res.Outcome, err, want)
		}
	}
}

func TestDeclines(t *testing.T) {
	for _, s := range []string{"s1: w x 1", "s1: a x 1 | s2: a x 1"} {
		h := history.MustParse(s)
		if _, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Checker: "list-append"}); err == nil {
			t.Errorf("%q: list-append should decline", s)
		}
	}
}
