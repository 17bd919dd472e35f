package chronos_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/chronos"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

const ok = "holds"

// axioms holds one hand-built history per axiom violation, with the kinds
// of every finding (shared checks and chronos, sorted) at SI and SER.
// "ts=S-C:" gives a transaction's start_ts and commit_ts.
var axioms = []struct {
	name, hist string
	si, ser    string
}{
	{"serial", "init: x=0 | s1: ts=1-2: r x 0 w x 1 | s2: ts=3-4: r x 1 w x 2",
		ok, ok},
	{"write skew: SI allows it, the commit order does not", "init: x=0 y=0 | s1: ts=1-3: r x 0 r y 0 w x 1 | s2: ts=2-4: r x 0 r y 0 w y 1",
		ok, "stale-read"},
	{"Session: the successor started before its predecessor committed", "init: x=0 | s1: ts=5-6: r x 0 w x 1 | s1: ts=1-2: r x 0",
		"session-guarantee-violation", "session-guarantee-violation"},
	{"Ext: a stale read", "init: x=0 | s1: ts=1-2: r x 0 w x 1 | s2: ts=3-4: r x 0",
		"stale-read", "stale-read"},
	{"Ext: a read beyond the snapshot", "init: x=0 | s1: ts=1-5: r x 0 w x 1 | s2: ts=3-4: r x 1",
		"read-beyond-snapshot", "read-beyond-snapshot"},
	{"NoConflict: a lost update", "init: x=0 | s1: ts=1-3: r x 0 w x 1 | s2: ts=2-4: r x 0 w x 2",
		"lost-update", "stale-read"},
	{"NoConflict: blind concurrent writes", "init: x=0 | s1: ts=1-3: w x 1 | s2: ts=2-4: w x 2",
		"concurrent-write", ok},
	{"NoConflict: every pair", "init: x=0 | s1: ts=1-5: w x 1 | s2: ts=2-6: w x 2 | s3: ts=3-7: w x 3",
		"concurrent-write concurrent-write concurrent-write", ok},
	{"Int: not my own write (the shared checks report it)", "init: x=0 | s1: ts=1-2: r x 0 w x 1 r x 0",
		"not-my-own-write", "not-my-own-write"},
	{"Int: a non-repeatable read", "init: x=0 | s1: ts=1-5: r x 0 w x 1 | s2: ts=3-6: r x 0 r x 1",
		"non-repeatable-read", "non-repeatable-read stale-read"},
	{"a thin-air read is reported once", "init: x=0 | s1: ts=1-2: r x 5",
		"thin-air-read", "thin-air-read"},
	{"commit before start", "init: x=0 | s1: ts=5-3: r x 0 w x 1",
		"commit-before-start", ok},
	{"deletes", "init: x=0 | s1: ts=1-2: r x 0 d x | s2: ts=3-4: r x _",
		ok, ok},
	{"a read of a deleted key's old value", "init: x=0 | s1: ts=1-2: r x 0 d x | s2: ts=3-4: r x 0",
		"stale-read", "stale-read"},
	{"a commit is visible to a snapshot at its timestamp", "init: x=0 | s1: ts=1-3: r x 0 w x 1 | s2: ts=3-4: r x 1",
		ok, ok},
	{"a read-only transaction at one instant", "init: x=0 | s1: ts=1-3: r x 0 w x 1 | s2: ts=3-3: r x 1 | s2: ts=4-5: r x 1",
		ok, ok},
	{"two writers with one commit timestamp", "s1: ts=1-3: w x 1 | s2: ts=2-3: w x 2",
		"concurrent-write", "concurrent-write"},
	{"unknown outcome, observed", "init: x=0 | s1: unknown: ts=1-2: r x 0 w x 1 | s2: ts=3-4: r x 1",
		ok, ok},
	{"aborted transactions are ignored", "init: x=0 | s1: aborted: ts=1-9: w x 1 | s2: ts=3-4: r x 0 w x 2",
		ok, ok},
	{"lists: valid", "s1: ts=1-2: a x 1 | s2: ts=3-4: r x [1] a x 2 | s3: ts=5-6: r x [1,2]",
		ok, ok},
	{"lists: a stale read", "s1: ts=1-2: a x 1 | s2: ts=3-4: a x 2 | s3: ts=5-6: r x [1]",
		"stale-read", "stale-read"},
	{"lists: a read beyond the snapshot", "s1: ts=1-5: a x 1 | s2: ts=3-4: r x [1]",
		"read-beyond-snapshot", "read-beyond-snapshot"},
	{"lists: own append over a stale snapshot", "s1: ts=1-2: a x 1 | s2: ts=3-4: a x 2 r x [2]",
		"stale-read", "stale-read"},
	{"lists: not my own write", "s1: ts=1-2: a x 1 | s2: ts=3-4: r x [1] a x 2 r x [1]",
		"not-my-own-write", "not-my-own-write"},
	{"lists: a non-repeatable read", "s1: ts=1-2: a x 1 | s2: ts=3-4: r x [1] r x []",
		"non-repeatable-read", "non-repeatable-read"},
	{"lists: duplicate elements", "s1: ts=1-2: a x 1 | s2: ts=3-4: r x [1,1]",
		"duplicate-elements", "duplicate-elements"},
	{"lists: an element nobody appended", "s1: ts=1-2: a x 1 | s2: ts=3-4: r x [1,7]",
		"thin-air-read", "thin-air-read"},
	{"lists: an aborted append", "s1: aborted: ts=1-2: a x 1 | s2: ts=3-4: r x [1]",
		"aborted-read", "aborted-read"},
	{"lists: concurrent appends", "s1: ts=1-3: r x [] a x 1 | s2: ts=2-4: r x [] a x 2",
		"lost-update", "stale-read"},
}

func kinds(as []anomaly.Anomaly) string {
	var out []string
	for _, a := range as {
		out = append(out, a.Kind.String())
	}
	slices.Sort(out)
	if len(out) == 0 {
		return ok
	}
	return strings.Join(out, " ")
}

func TestAxioms(t *testing.T) {
	for _, tc := range axioms {
		h := history.MustParse(tc.hist)
		for _, lv := range []struct {
			id   level.ID
			want string
		}{{level.SnapshotIsolation, tc.si}, {level.Serializable, tc.ser}} {
			l := level.Get(lv.id)
			t.Run(tc.name+"/"+l.Short, func(t *testing.T) {
				res, err := check.Run(context.Background(), h, l, check.Options{Checker: "chronos"})
				if err != nil {
					t.Fatal(err)
				}
				if got := kinds(res.Anomalies); got != lv.want {
					t.Errorf("got %s, want %s", got, lv.want)
				}
				for i := range res.Anomalies {
					if e := report.Explain(h, &res.Anomalies[i]); e == "" || e == res.Anomalies[i].Kind.String() {
						t.Errorf("%s has no explanation", res.Anomalies[i].Kind)
					}
				}
				// Chronos found nothing the shared checks found.
				pre := 0
				for _, a := range res.Anomalies {
					switch a.Kind {
					case anomaly.ThinAirRead, anomaly.AbortedRead, anomaly.FutureRead, anomaly.NotMyOwnWrite,
						anomaly.NotMyLastWrite, anomaly.IntermediateRead, anomaly.NonRepeatableRead:
						pre++
					}
				}
				if pre > 1 {
					t.Errorf("an intra-transaction anomaly reported twice: %s", kinds(res.Anomalies))
				}
			})
		}
	}
}

// TestExplanationsCarryTimestamps checks that each timestamp finding's
// explanation names the timestamps that prove it.
func TestExplanationsCarryTimestamps(t *testing.T) {
	cases := []struct {
		hist string
		l    level.ID
		kind anomaly.Kind
		want []string
	}{
		{"init: x=0 | s1: ts=10-20: r x 0 w x 1 | s2: ts=30-40: r x 0", level.SnapshotIsolation, anomaly.StaleRead,
			[]string{"T2 read x=0", "start_ts 30", "x=1 from T1 at commit_ts 20", "the initial state"}},
		{"init: x=0 | s1: ts=10-50: r x 0 w x 1 | s2: ts=30-40: r x 1", level.SnapshotIsolation, anomaly.ReadBeyondSnapshot,
			[]string{"T2 read x=1", "T1 at commit_ts 50", "start_ts 30"}},
		{"init: x=0 | s1: ts=10-50: r x 0 w x 1 | s2: ts=30-40: r x 1", level.Serializable, anomaly.ReadBeyondSnapshot,
			[]string{"T1 at commit_ts 50", "commit_ts 40"}},
		{"init: x=0 | s1: ts=10-30: r x 0 w x 1 | s2: ts=20-40: r x 0 w x 2", level.SnapshotIsolation, anomaly.LostUpdate,
			[]string{"T2 (start_ts 20) read x", "commit_ts 40", "T1 wrote x at commit_ts 30", "T1's update is lost"}},
		{"s1: ts=10-30: w x 1 | s2: ts=20-40: w x 2", level.SnapshotIsolation, anomaly.ConcurrentWrite,
			[]string{"start_ts 10, commit_ts 30", "start_ts 20, commit_ts 40"}},
		{"init: x=0 | s1: ts=50-60: w x 1 | s1: ts=10-20: r x 0", level.SnapshotIsolation, anomaly.SessionGuaranteeViolation,
			[]string{"commit_ts 60", "start_ts 10"}},
		{"s1: ts=9-3: w x 1", level.SnapshotIsolation, anomaly.CommitBeforeStart,
			[]string{"commit_ts 3", "start_ts 9"}},
		{"s1: ts=10-20: a x 1 | s2: ts=30-40: a x 2 | s3: ts=50-60: r x [1]", level.SnapshotIsolation, anomaly.StaleRead,
			[]string{"x=[1]", "start_ts 50", "element 2", "T2 at commit_ts 40"}},
	}
	for _, tc := range cases {
		h := history.MustParse(tc.hist)
		found, err := checkWith(context.Background(), history.NewIndex(h), level.Get(tc.l))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := range found {
			if found[i].Kind == tc.kind {
				got = append(got, report.Explain(h, &found[i]))
			}
		}
		if len(got) != 1 {
			t.Errorf("%s: %d %s findings, want 1 (%s)", tc.hist, len(got), tc.kind, kinds(found))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got[0], w) {
				t.Errorf("%s: explanation %q lacks %q", tc.hist, got[0], w)
			}
		}
	}
}

func TestDecides(t *testing.T) {
	cases := []struct {
		hist string
		l    level.ID
		why  string // "" decides
	}{
		{"s1: ts=1-2: w x 1", level.SnapshotIsolation, ""},
		{"s1: ts=1-2: w x 1", level.Serializable, ""},
		{"s1: ts=1-2: w x 1", level.ReadCommitted, "not read-committed"},
		{"s1: ts=1-2: w x 1", level.StrictSerializable, "not strict-serializable"},
		{"s1: w x 1", level.Serializable, "no start_ts"},
		{"s1: ts=1-2: w x 1 | s2: r x 1", level.Serializable, "transaction 2 (line 0) has no start_ts"},
		{"s1: ts=1-2: w 1 a | s2: ts=3-4: scan 0 10 [1=a]", level.Serializable, "not range queries"},
		{"s1: ts=1-2: w x 1 | s2: ts=3-4: a x 2", level.Serializable, "both written as a value and appended"},
		{"s1: aborted: w x 1 | s2: ts=3-4: r x _", level.Serializable, ""},
		{"s1: unknown: w x 1 | s2: ts=3-4: r x _", level.Serializable, ""},
		{"s1: unknown: w x 1 | s2: ts=3-4: r x 1", level.Serializable, "no start_ts"},
		{"s1: unknown: a x 1 | s2: ts=3-4: r x [1]", level.Serializable, "no start_ts"},
	}
	for _, tc := range cases {
		_, err := chronos.Checker{}.Plan(history.NewIndex(history.MustParse(tc.hist)), level.Get(tc.l), checker.Options{})
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%s at %s: declined: %v", tc.hist, level.Get(tc.l).Short, err)
		case tc.why != "" && (err == nil || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%s at %s: got %v, want %q", tc.hist, level.Get(tc.l).Short, err, tc.why)
		}
	}
}

// TestAutoPicksChronos: with timestamps on every transaction auto picks
// chronos; without, another checker.
func TestAutoPicksChronos(t *testing.T) {
	for _, tc := range []struct{ hist, want string }{
		{"init: x=0 | s1: ts=1-2: r x 0 w x 1 | s2: ts=3-4: r x 1 w x 2", "chronos"},
		{"init: x=0 | s1: r x 0 w x 1 | s2: r x 1 w x 2", "mt"},
	} {
		res, err := check.Run(context.Background(), history.MustParse(tc.hist), level.Get(level.SnapshotIsolation), check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Checker != tc.want {
			t.Errorf("%s: auto picked %s, want %s", tc.hist, res.Checker, tc.want)
		}
	}
}

// TestCancelled: a context that has ended stops the replay with its error.
func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := history.MustParse("init: x=0 | s1: ts=1-2: r x 0 w x 1")
	if _, err := checkWith(ctx, history.NewIndex(h), level.Get(level.Serializable)); err == nil {
		t.Error("no error from a cancelled check")
	}
}

// FuzzChronos: any history in the test notation is decided or declined
// with a reason, never a panic, and a verdict agrees with the pairwise
// definition of the axioms on histories of reads, writes and deletes.
func FuzzChronos(f *testing.F) {
	for _, tc := range axioms {
		f.Add(tc.hist)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := history.Parse(s)
		if err != nil || len(h.Txns) > 12 {
			return
		}
		for _, id := range []level.ID{level.SnapshotIsolation, level.Serializable} {
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "chronos"})
			if err != nil {
				continue // declined, with a reason
			}
			for i := range res.Anomalies {
				report.Explain(h, &res.Anomalies[i])
			}
			if plainKV(h) {
				if got, want := res.Outcome == check.Satisfied, naiveValid(h, id == level.Serializable); got != want {
					t.Fatalf("%s: chronos satisfied=%v, the axioms say %v (%s)", level.Get(id).Short, got, want, kinds(res.Anomalies))
				}
			}
		}
	})
}

// plainKV reports whether h is one naiveValid decides: committed and
// aborted transactions of reads, writes and deletes, physical deletes.
func plainKV(h *history.History) bool {
	if h.Header.Deletes != history.PhysicalDeletes {
		return false
	}
	for _, t := range h.Txns {
		if t.Status == history.Unknown {
			return false
		}
		for _, op := range t.Ops {
			if op.Kind != history.Read && op.Kind != history.Write && op.Kind != history.Delete {
				return false
			}
		}
	}
	return true
}

// checkWith plans and runs Chronos on ix at l.
func checkWith(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	check, err := chronos.Checker{}.Plan(ix, l, checker.Options{})
	if err != nil {
		return nil, err
	}
	return check(ctx)
}
