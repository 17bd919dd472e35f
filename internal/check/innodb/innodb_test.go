package innodb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/innodb"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// cases are hand-built histories with their verdict under InnoDB's
// repeatable read (innodb) and under snapshot isolation (si), and what the
// InnoDB check must find when it refutes. "r*" is a locking read.
var cases = []struct {
	name   string
	h      string
	innodb bool
	si     bool
	found  string
}{
	// InnoDB's documented behaviour: accepted.
	{"lost update: snapshot reads, then UPDATEs of the latest version",
		`init: x=0 | s0: r x 0 w x 1 | s1: r x 0 w x 2`, true, false, ""},
	{"a snapshot read misses what a later locking read saw",
		`init: x=0 y=0 | s0: r y 0 r* x 1 r x 0 | s1: w x 1`, true, false, ""},
	{"a locking read sees a commit after the view, a snapshot read of another key does not",
		`init: x=0 y=0 | s0: r y 0 r* x 1 r y 0 | s1: w x 1 w y 1`, true, false, ""},
	{"a locking read before the first snapshot read: the view comes after it",
		`init: x=0 y=0 | s0: r* x 1 r y 1 | s1: w x 1 w y 1`, true, true, ""},
	{"an update after a snapshot read overwrites a concurrent commit, then reads its own write",
		`init: x=0 | s0: r x 0 w x 5 r x 5 | s1: r x 0 w x 2`, true, false, ""},
	{"a delete that found no row (a locking read of null) and a snapshot scan that still sees the row",
		`init: 1=5 | s0: r 2 _ r* 1 _ scan 0 10 [1=5] | s1: d 1`, true, false, ""},
	{"a scan sees its own write and the view",
		`init: 2=b | s0: w 1 a scan 0 10 [1=a,2=b]`, true, true, ""},
	{"an iterator cut around its own write",
		`init: 2=b 5=e | s0: w 3 c iter 0 10 [2=b,3=c]`, true, true, ""},
	// What InnoDB does not allow: refuted.
	{"lost update through locking reads",
		`init: x=0 | s0: r* x 0 w x 1 | s1: r* x 0 w x 2`, false, false, "lost-update"},
	{"a snapshot read sees a value committed after the view, not lock-read",
		`init: x=0 | s0: r x 0 r* x 1 r x 1 | s1: w x 1`, false, false, "non-repeatable-read"},
	{"fractured snapshot",
		`init: x=0 y=0 | s0: r x 0 r y 1 | s1: w x 1 w y 1`, false, false, "G-single"},
	{"the view after a locking read misses what that read saw",
		`init: x=0 y=0 | s0: r* x 1 r y 0 | s1: w x 1 w y 1`, false, false, "G-single"},
	{"aborted read (G1a)",
		`s0: aborted: w x 1 | s1: r x 1`, false, false, "aborted-read"},
	{"intermediate read (G1b)",
		`s0: w x 1 w x 2 | s1: r x 1`, false, false, "intermediate-read"},
	{"circular information flow (G1c)",
		`init: x=0 y=0 | s0: w x 1 r y 1 | s1: w y 1 r x 1`, false, false, "G1c"},
	{"circular information flow through locking reads (G1c)",
		`init: x=0 y=0 | s0: w x 1 r* y 1 | s1: w y 1 r* x 1`, false, false, "G1c"},
	{"a read after its own update sees the snapshot (Boomslang's Case 2, MariaDB)",
		`init: x=a | s0: r x a w x b r x a | s1: w x b`, false, false, "not-my-own-write"},
	{"a scan misses its own write",
		`s0: w 1 a scan 0 10 []`, false, false, "not-my-own-write"},
	{"two locking reads of one key disagree",
		`init: x=0 | s0: r* x 0 r* x 1 | s1: w x 1`, false, false, "non-repeatable-read"},
	{"session order: a later transaction's view misses the session's earlier write",
		`init: x=0 | s0: w x 1 | s0: r x 0`, false, false, "G-single"},
}

func TestRepeatableReadCases(t *testing.T) {
	rr, si := level.Get(level.RepeatableRead), level.Get(level.SnapshotIsolation)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			res, err := check.Run(context.Background(), h, rr, check.Options{InnoDBRR: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Outcome == check.Satisfied; got != c.innodb {
				t.Errorf("innodb-rr: holds=%v, want %v (%s; checker %s)", got, c.innodb, kinds(res), res.Checker)
			}
			if !c.innodb && !strings.Contains(kinds(res), c.found) {
				t.Errorf("innodb-rr found %s, want %s", kinds(res), c.found)
			}
			if res.Level.ID != level.RepeatableRead || len(res.Modules) != 1 || res.Modules[0] != check.InnoDBRRModule {
				t.Errorf("result level %s, modules %v", res.Level.Name, res.Modules)
			}
			for _, a := range res.Anomalies {
				for _, tx := range a.Txns {
					if int(tx) >= len(h.Txns) {
						t.Errorf("%s names piece %d, not a transaction of the history", a.Kind, tx)
					}
				}
				for _, st := range a.Cycle {
					if st.From == st.To && st.Dep == anomaly.SO {
						t.Errorf("the cycle keeps a step between a transaction's pieces: %v", a.Cycle)
					}
				}
			}
			std, err := check.Run(context.Background(), h, si, check.Options{Checker: "sat"})
			if err != nil {
				t.Fatal(err)
			}
			if got := std.Outcome == check.Satisfied; got != c.si {
				t.Errorf("si: holds=%v, want %v (%s)", got, c.si, kinds(std))
			}
		})
	}
}

// TestSplit: the pieces of a transaction — the view piece with the
// snapshot reads (and a locking read before the first of them), the commit
// piece with the rest in program order — and a scan cut around an own
// write.
func TestSplit(t *testing.T) {
	h := history.MustParse(`t7: r* 9 1 r 2 b w 3 c scan 0 10 [2=b,3=c,4=d] r 3 c r* 5 _`)
	got := innodb.Split(h).String()
	want := "7/view: r* 9 1 r 2 b scan 0 3 [2=b] scan 4 10 [4=d]\n7: r* 9 1 w 3 c r 3 c r 3 c r* 5 _\n"
	if got != want {
		t.Errorf("pieces:\n%s\nwant:\n%s", got, want)
	}
	// A read-only transaction stays one piece, as does one with no
	// snapshot read.
	h = history.MustParse(`t1: r x 1 r y 2 | t2: r* x 1 w x 2`)
	if got, want := innodb.Split(h).String(), "1: r x 1 r y 2\n2: r* x 1 w x 2\n"; got != want {
		t.Errorf("pieces:\n%s\nwant:\n%s", got, want)
	}
}

// TestOnlyRepeatableRead: the model is InnoDB's repeatable read, so any
// other level is an error, as is a policy other than reading own writes.
func TestOnlyRepeatableRead(t *testing.T) {
	h := history.MustParse(`s0: w x 1 | s1: r x 1`)
	if _, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{InnoDBRR: true}); err == nil || !strings.Contains(err.Error(), "repeatable-read") {
		t.Errorf("at serializable: %v", err)
	}
	if _, err := check.Run(context.Background(), h, level.Get(level.RepeatableRead), check.Options{InnoDBRR: true, OwnReads: history.ReadsExternal}); err == nil {
		t.Error("the external policy was accepted")
	}
}

// TestWeakerLevels: when InnoDB's repeatable read is violated, the weaker
// levels that still hold are checked on the transactions as they ran.
func TestWeakerLevels(t *testing.T) {
	h := history.MustParse(`init: x=0 y=0 | s0: r x 0 r y 1 | s1: w x 1 w y 1`)
	res, err := check.Run(context.Background(), h, level.Get(level.RepeatableRead), check.Options{InnoDBRR: true, Holds: true})
	if err != nil || res.Outcome != check.Violated {
		t.Fatalf("%v %v", res.Outcome, err)
	}
	// A fractured read: not PL-2+, but cursor stability (and so read
	// committed) holds, on the transactions as they ran.
	if len(res.Holds) == 0 || res.Holds[0].ID != level.CursorStability {
		t.Errorf("still holds: %v, want cursor stability first", res.Holds)
	}
}

func kinds(r check.Result) string {
	var s []string
	for _, a := range r.Anomalies {
		s = append(s, a.Kind.String()+"/"+a.Phenomenon.String())
	}
	return strings.Join(s, " ")
}
