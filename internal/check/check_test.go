package check_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// ok marks a level that holds; any other entry names the anomaly kind
// expected first.
const ok = "holds"

// figure5 is MTC's Figure 5 / Table I, one hand-built history per anomaly,
// with the expected verdict at SSER, SER, SI and RC. Transactions without
// instants all overlap in time, so real time adds nothing to them.
var figure5 = []struct {
	name              string
	hist              string
	sser, ser, si, rc string
}{
	{"serial", "init: x=0 y=0 | s1: r x 0 w x 1 | s1: r x 1 r y 0 w y 1 | s2: r y 1",
		ok, ok, ok, ok},
	{"thin-air read", "init: x=0 | s1: r x 5",
		"thin-air-read", "thin-air-read", "thin-air-read", "thin-air-read"},
	{"aborted read", "init: x=0 | s1: aborted: r x 0 w x 1 | s2: r x 1",
		"aborted-read", "aborted-read", "aborted-read", "aborted-read"},
	{"future read", "init: x=0 | s1: r x 1 w x 1",
		"future-read", "future-read", "future-read", "future-read"},
	{"not my last write", "init: x=0 | s1: r x 0 w x 1 w x 2 r x 1",
		"not-my-last-write", "not-my-last-write", "not-my-last-write", "not-my-last-write"},
	{"not my own write", "init: x=0 | s1: r x 0 w x 1 r x 0",
		"not-my-own-write", "not-my-own-write", "not-my-own-write", "not-my-own-write"},
	{"intermediate read", "init: x=0 | s1: r x 0 w x 1 w x 2 | s2: r x 1",
		"intermediate-read", "intermediate-read", "intermediate-read", "intermediate-read"},
	{"non-repeatable read", "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 r x 1",
		"non-repeatable-read", "non-repeatable-read", "non-repeatable-read", ok},
	{"session guarantee violation", "init: x=0 | s1: r x 0 w x 1 | s1: r x 0",
		"session-guarantee-violation", "session-guarantee-violation", "session-guarantee-violation", ok},
	{"non-monotonic read", "init: x=0 y=0 | s1: r x 0 w x 1 | s2: r x 1 r y 0 w x 2 w y 1 | s3: r y 1 r x 1",
		"non-monotonic-read", "non-monotonic-read", "non-monotonic-read", ok},
	{"fractured read", "init: x=0 y=0 | s1: r x 0 r y 0 w x 1 w y 1 | s2: r y 0 r x 1",
		"fractured-read", "fractured-read", "fractured-read", ok},
	{"causality violation", "init: x=0 y=0 | s1: r x 0 w x 1 | s2: r x 1 r y 0 w y 1 | s3: r y 1 r x 0",
		"causality-violation", "causality-violation", "causality-violation", ok},
	{"long fork", "init: x=0 y=0 | s1: r x 0 w x 1 | s2: r y 0 w y 1 | s3: r x 1 r y 0 | s4: r y 1 r x 0",
		"long-fork", "long-fork", "long-fork", ok},
	{"lost update", "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2",
		"lost-update", "lost-update", "lost-update", ok},
	{"write skew", "init: x=0 y=0 | s1: r x 0 r y 0 w x 1 | s2: r x 0 r y 0 w y 1",
		"write-skew", "write-skew", ok, ok},
	{"real-time violation", "init: x=0 | s1: @0-1: r x 0 w x 1 | s2: @2-3: r x 0",
		"real-time-violation", ok, ok, ok},
	{"circular information flow (G1c)", "init: x=0 y=0 | s1: r x 0 w x 1 r y 1 | s2: r y 0 w y 1 r x 1",
		"cycle", "cycle", "cycle", "cycle"},
	{"write cycle (G0)", "s1: r x 2 w x 1 | s2: r x 1 w x 2",
		"cycle", "cycle", "cycle", "cycle"},
	{"unknown transaction observed", "init: x=0 | s1: unknown: r x 0 w x 1 | s2: r x 1 | s3: r x 0 w x 2",
		"lost-update", "lost-update", "lost-update", ok},
	{"unknown transaction unobserved", "init: x=0 | s1: unknown: r x 0 w x 1 | s3: r x 0 w x 2 | s4: r x 2",
		ok, ok, ok, ok},
}

// withOverlap gives every transaction the same interval when none has one.
func withOverlap(h *history.History) *history.History {
	for i := range h.Txns {
		if h.Txns[i].HasTime {
			return h
		}
	}
	for i := range h.Txns {
		h.Txns[i].Begin, h.Txns[i].End, h.Txns[i].HasTime = 0, 100, true
	}
	return h
}

func verdict(t *testing.T, h *history.History, id level.ID, checker string) (check.Result, string) {
	t.Helper()
	res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: checker})
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if res.Outcome == check.Satisfied {
		return res, ok
	}
	if res.Outcome != check.Violated || len(res.Anomalies) == 0 {
		t.Fatalf("%s: outcome %s with %d anomalies", id, res.Outcome, len(res.Anomalies))
	}
	return res, res.Anomalies[0].Kind.String()
}

func TestFigure5(t *testing.T) {
	for _, tc := range figure5 {
		t.Run(tc.name, func(t *testing.T) {
			for _, lv := range []struct {
				id   level.ID
				want string
			}{{level.StrictSerializable, tc.sser}, {level.Serializable, tc.ser}, {level.SnapshotIsolation, tc.si}, {level.ReadCommitted, tc.rc}} {
				h := withOverlap(history.MustParse(tc.hist))
				res, got := verdict(t, h, lv.id, "auto")
				if got != lv.want {
					t.Errorf("%s (checker %s): got %s, want %s; anomalies %v", lv.id, res.Checker, got, lv.want, kinds(res))
				}
			}
		})
	}
}

func kinds(r check.Result) string {
	var s []string
	for _, a := range r.Anomalies {
		s = append(s, a.Kind.String()+"/"+a.Phenomenon.String())
	}
	return strings.Join(s, ",")
}

// TestCyclesAreReal checks every reported cycle: consecutive steps connect
// and the last returns to the first.
func TestCyclesAreReal(t *testing.T) {
	for _, tc := range figure5 {
		for _, id := range []level.ID{level.StrictSerializable, level.Serializable, level.SnapshotIsolation, level.ReadCommitted} {
			h := withOverlap(history.MustParse(tc.hist))
			res, _ := verdict(t, h, id, "auto")
			for _, a := range res.Anomalies {
				for i, s := range a.Cycle {
					next := a.Cycle[(i+1)%len(a.Cycle)]
					if s.To != next.From {
						t.Errorf("%s at %s: cycle %v does not connect", tc.name, id, a.Cycle)
					}
				}
			}
		}
	}
}

func TestAllAnomaliesFound(t *testing.T) {
	h := history.MustParse("init: x=0 y=0 | s1: r x 7 | s2: r y 8 | s3: r x 0 w x 1 w x 2 | s4: r x 1 | s5: r x 1")
	res, _ := verdict(t, h, level.Serializable, "auto")
	got := map[anomaly.Kind]int{}
	for _, a := range res.Anomalies {
		got[a.Kind]++
	}
	if got[anomaly.ThinAirRead] != 2 || got[anomaly.IntermediateRead] != 2 {
		t.Errorf("want 2 thin-air and 2 intermediate reads, got %v", got)
	}
}

func TestNamedCheckerThatCannotDecide(t *testing.T) {
	h := history.MustParse("init: x=0 | s1: w x 1 | s2: r x 1")
	_, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Checker: "mt"})
	if err == nil || !strings.Contains(err.Error(), "read-modify-write") {
		t.Fatalf("want a clear refusal from mt, got %v", err)
	}
}

func TestHoldsNamesWeakerLevels(t *testing.T) {
	h := history.MustParse("init: x=0 y=0 | s1: r x 0 r y 0 w x 1 | s2: r x 0 r y 0 w y 1")
	res, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Holds: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range res.Holds {
		names = append(names, l.Name)
	}
	if !slices.Contains(names, "snapshot-isolation") {
		t.Errorf("write skew: want snapshot-isolation to hold, got %v", names)
	}
	// A long fork violates SI, prefix consistency and RR (G2-item) but
	// not PL-FCV, nor causal consistency: the solver decides that on a
	// small history.
	h = history.MustParse(`s0: w 1 a | s1: w 2 b | s2: r 1 a r 2 _ | s3: r 1 _ r 2 b`)
	res, err = check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Holds: true})
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, l := range res.Holds {
		names = append(names, l.Name)
	}
	if !slices.Equal(names, []string{"pl-fcv", "causal"}) {
		t.Errorf("long fork: want exactly pl-fcv and causal (which imply the rest) to hold, got %v", names)
	}
}

func ExampleRun() {
	h := history.MustParse("init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2")
	res, _ := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{})
	fmt.Println(res.Outcome, res.Checker, res.Anomalies[0].Kind)
	// Output: violation mt lost-update
}

// TestStrictWithoutInstants: strict serializability of a history whose
// transactions lack begin and end instants is checked at serializability.
// A serializability violation is a strict-serializability violation;
// otherwise the outcome is unknown, saying that the instants are missing.
func TestStrictWithoutInstants(t *testing.T) {
	sser := level.Get(level.StrictSerializable)
	for _, tc := range []struct {
		name, hist, checker string
		want                check.Outcome
		kind, why           string
	}{
		{"lost update, no instants", "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2", "auto",
			check.Violated, "lost-update", "2 of 2 transactions have no begin and end instants"},
		{"lost update, named checker", "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2", "mt",
			check.Violated, "lost-update", "2 of 2"},
		{"serial, no instants", "init: x=0 | s1: r x 0 w x 1 | s2: r x 1 w x 2", "auto",
			check.Undecided, "", "2 of 2 transactions have no begin and end instants (the first: transaction 1)"},
		{"partial instants, write skew", "init: x=0 y=0 | s1: @0-1: r x 0 r y 0 w x 1 | s2: r x 0 r y 0 w y 1", "auto",
			check.Violated, "write-skew", "1 of 2"},
		{"partial instants, serial", "init: x=0 | s1: @0-1: r x 0 w x 1 | s2: r x 1 w x 2", "auto",
			check.Undecided, "", "1 of 2 transactions have no begin and end instants (the first: transaction 2)"},
		{"aborted without instants", "init: x=0 | s1: @0-1: r x 0 w x 1 | s2: aborted: r x 1 w x 2 | s3: @2-3: r x 0", "auto",
			check.Violated, "real-time-violation", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := check.Run(context.Background(), history.MustParse(tc.hist), sser, check.Options{Checker: tc.checker, Holds: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.want || res.Level.ID != level.StrictSerializable {
				t.Fatalf("outcome %s at %s, want %s at strict-serializable (reason %q)", res.Outcome, res.Level.Name, tc.want, res.Reason)
			}
			if tc.kind != "" && (len(res.Anomalies) == 0 || res.Anomalies[0].Kind.String() != tc.kind) {
				t.Errorf("anomalies %s, want %s first", kinds(res), tc.kind)
			}
			if tc.why == "" {
				if res.CheckedAt != nil || res.Note != "" {
					t.Errorf("every effective transaction has instants, yet checked at %v: %q", res.CheckedAt, res.Note)
				}
				return
			}
			if res.CheckedAt == nil || res.CheckedAt.ID != level.Serializable {
				t.Errorf("checked at %v, want serializable", res.CheckedAt)
			}
			text := res.Note
			if res.Outcome == check.Undecided {
				text = res.Reason
			}
			if !strings.Contains(text, tc.why) {
				t.Errorf("%q lacks %q", text, tc.why)
			}
		})
	}
	// A named checker that decides neither level still says so.
	_, err := check.Run(context.Background(), history.MustParse("init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2"), sser, check.Options{Checker: "dsg"})
	var ue *check.UnsupportedError
	if !errors.As(err, &ue) || ue.Checker != "dsg" || !strings.Contains(err.Error(), "checked at serializable") {
		t.Errorf("dsg at strict serializability without instants: want its refusal, got %v", err)
	}
}

// TestLWTUnknownThenSession: a transaction of unknown outcome that took
// effect (its write was read) did so before the next transaction of its
// session began — session order says so, though its end instant is
// unknown. Algorithm 2 orders by real time alone, so it declines such a
// history and the solver decides it.
func TestLWTUnknownThenSession(t *testing.T) {
	h := history.MustParse(`unique: | s0: @0-1: r x _ w x 1 | s1: unknown: @2-3: r x 1 w x 2 | s1: @4-5: r x 1 | s2: @10-11: r x 2`)
	if _, err := check.Run(context.Background(), h, level.Get(level.StrictSerializable), check.Options{Checker: "lwt"}); err == nil {
		t.Error("lwt decided a history whose unknown transaction has a session successor")
	}
	res, err := check.Run(context.Background(), h, level.Get(level.StrictSerializable), check.Options{})
	if err != nil || res.Outcome != check.Violated {
		t.Errorf("auto (%s): %v %v; the oracle says violated", res.Checker, res.Outcome, err)
	}
}

// TestViolationCutShortSaysSo: a check stopped before it was complete
// (here by a bound on the solver's work), after the shared checks had
// found an anomaly, is a violation — the anomaly is certain — whose
// caveat says the check was cut short and others may be missing.
func TestViolationCutShortSaysSo(t *testing.T) {
	// Blind writes of repeated values leave the solver a search to make;
	// y=5 is a thin-air read the shared checks find first.
	h := history.MustParse("init: x=0 y=0 | s1: w x 1 | s2: w x 2 | s3: w x 1 | s4: r x 1 r x 2 | s5: r x 2 r x 1 | s6: r y 5")
	o := check.Options{Checker: "sat", Limits: checker.Limits{Work: 1, Conflicts: 1, MaxDerived: 1}}
	o.Tuning.NoUnsatSearch = true
	res, err := check.Run(context.Background(), h, level.Get(level.Serializable), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != check.Violated || len(res.Anomalies) == 0 {
		t.Fatalf("want a violation (the thin-air read), got %v %v", res.Outcome, res.Anomalies)
	}
	if !strings.Contains(res.Caveat, "cut short") {
		t.Errorf("a violation found before the check was cut short says nothing of it: caveat %q", res.Caveat)
	}
	// The complete check has no such caveat.
	full, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Checker: "sat"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(full.Caveat, "cut short") {
		t.Errorf("a complete check says it was cut short: %q", full.Caveat)
	}
}
