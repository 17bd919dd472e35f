package check_test

import (
	"context"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/polygraph"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// rangeLevels are the levels of rangeCases' verdict strings, weakest first.
var rangeLevels = []level.ID{level.SnapshotIsolation, level.Serializable, level.StrictSerializable}

// rangeCases are hand-built histories with deletes, scans and iterators.
// want has one character per level of rangeLevels: '+' holds, '-'
// violated. found, when set, is what the solver must report at the
// weakest violated level (kind/phenomenon, as kinds prints it). Keys
// are integers, so ranges order them numerically; "_" is null.
var rangeCases = []struct {
	name       string
	h          string
	tombstones bool
	want       string
	found      string
}{
	{"read after delete sees absence", `s0: @0-1: w 1 5 | s1: @2-3: d 1 | s2: @4-5: r 1 _`, false, "+++", ""},
	{"read of a deleted key's old value after the delete ended", `s0: @0-1: w 1 5 | s1: @2-3: d 1 | s2: @4-5: r 1 5`, false, "++-", ""},
	{"delete, then own read", `s0: @0-1: w 1 5 | s1: @2-3: d 1 r 1 _`, false, "+++", ""},
	{"own delete then read of the old value", `s0: @0-1: w 1 5 | s1: @2-3: d 1 r 1 5`, false, "---", "not-my-own-write"},
	{"scan returns every present key", `s0: @0-1: w 1 a w 2 b | s1: @2-3: scan 0 10 [1=a,2=b]`, false, "+++", ""},
	{"scan before the writes returns nothing", `s0: @2-3: w 1 a w 2 b | s1: @0-1: scan 0 10 []`, false, "+++", ""},
	{"scan misses a present key: phantom", `s0: @0-1: w 1 a w 2 b | s1: @2-3: scan 0 10 [1=a]`, false, "---", "G-single"},
	{"scan bounds: the upper bound is excluded", `s0: @0-1: w 1 a w 10 b | s1: @2-3: scan 1 10 [1=a]`, false, "+++", ""},
	{"unbounded scan", `s0: @0-1: w 1 a w 10 b | s1: @2-3: scan 1 _ [1=a,10=b]`, false, "+++", ""},
	{"phantom through a delete: a fractured scan", `s0: @0-1: w 1 a w 2 b | s1: @2-3: d 1 d 2 | s2: @4-5: scan 0 10 [2=b]`, false, "---", "G-single"},
	{"scan after a delete", `s0: @0-1: w 1 a w 2 b | s1: @2-3: d 1 | s2: @4-5: scan 0 10 [2=b]`, false, "+++", ""},
	{"iterator that stops early", `s0: @0-1: w 1 a w 2 b w 3 c | s1: @2-3: iter 0 10 [1=a]`, false, "+++", ""},
	{"iterator that skips a present key", `s0: @0-1: w 1 a w 2 b w 3 c | s1: @2-3: iter 0 10 [2=b]`, false, "---", "G-single"},
	{"iterator past every key", `s0: @0-1: w 1 a | s1: @2-3: iter 0 10 [1=a,2=b]`, false, "---", "thin-air-read"},
	{"scan sees own writes and deletes", `init: 1=x 2=y | s0: @0-1: w 3 z d 1 scan 0 10 [2=y,3=z]`, false, "+++", ""},
	{"scan misses its own write", `s0: @0-1: w 3 z scan 0 10 []`, false, "---", "not-my-own-write"},
	{"write skew through a range predicate (G2, not G2-item)",
		`s0: @0-2: scan 0 10 [] w 1 x | s1: @1-3: scan 0 10 [] w 2 y`, false, "+--", "G2"},
	{"write skew on items (G2-item)",
		`init: 1=a 2=b | s0: @0-2: r 1 a r 2 b w 1 x | s1: @1-3: r 1 a r 2 b w 2 y`, false, "+--", "G2-item"},
	{"lost update through a delete", `init: 1=a | s0: @0-2: r 1 a d 1 | s1: @1-3: r 1 a w 1 b`, false, "---", ""},
	{"tombstone returned by a scan", `s0: @0-1: w 1 a | s1: @2-3: d 1 | s2: @4-5: scan 0 10 [1=_]`, true, "+++", ""},
	{"tombstone expected, key absent", `s0: @0-1: w 1 a | s1: @2-3: d 1 | s2: @4-5: scan 0 10 [1=_]`, false, "---", "thin-air-read"},
	{"tombstone omitted by a scan", `s0: @0-1: w 1 a | s1: @2-3: d 1 | s2: @4-5: scan 0 10 []`, true, "++-", ""},
	{"write then delete in one transaction leaves a tombstone", `s0: @0-1: w 1 a d 1 | s1: @2-3: iter 0 10 [1=_]`, true, "+++", ""},
	{"read of a tombstone is null", `s0: @0-1: w 1 a | s1: @2-3: d 1 | s2: @4-5: r 1 _`, true, "+++", ""},
	{"read of a value its writer deleted later (intermediate read)", `s0: @0-1: w 1 a d 1 | s1: @2-3: r 1 a`, false, "---", "intermediate-read/G1b"},
	{"deleted then reinserted with the same value", `s0: @0-1: w 1 a | s1: @2-3: d 1 | s2: @4-5: w 1 a | s3: @6-7: scan 0 10 [1=a] r 1 a`, false, "+++", ""},
	{"null read served by one of two deleters", `init: 1=a | s0: @0-1: d 1 | s1: @2-3: w 1 b | s2: @4-5: d 1 | s3: @6-7: r 1 _`, false, "+++", ""},
	{"null read between the deletes in real time", `init: 1=a | s0: @0-1: d 1 | s1: @2-3: w 1 b | s3: @4-5: r 1 _ | s2: @6-7: d 1`, false, "++-", ""},
	// Boomslang's Case 2 (MariaDB at repeatable read): a read after the
	// transaction's own update returns the snapshot's value instead.
	{"read after own update sees the snapshot (MariaDB)", `init: 1=a | s0: @0-1: w 1 b r 1 a | s1: @2-3: w 1 b`, false, "---", "not-my-own-write"},
}

// TestRangeCases holds the oracle and the solver checker to the table.
func TestRangeCases(t *testing.T) {
	for _, c := range rangeCases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			if c.tombstones {
				h.Header.Deletes = history.TombstoneDeletes
			}
			checked := false
			for i, id := range rangeLevels {
				want := c.want[i] == '+'
				oracle, err := reference.Check(h, id)
				if err != nil {
					t.Fatalf("%s: oracle: %v", id, err)
				}
				if oracle != want {
					t.Errorf("%s: the oracle says holds=%v, want %v", id, oracle, want)
				}
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "sat"})
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if got := res.Outcome == check.Satisfied; got != want {
					t.Errorf("%s: the solver says holds=%v, want %v (%s)", id, got, want, kinds(res))
				}
				if !want && !checked {
					checked = true
					if c.found != "" && !strings.Contains(kinds(res), c.found) {
						t.Errorf("%s: found %q, want %s", id, kinds(res), c.found)
					}
				}
			}
		})
	}
}

// TestVersionOrderHints: a white-box version order is a fact the verdict
// respects: a history that holds with the order left open violates the
// level when the header's order contradicts what was read, and only the
// solver checker, which uses the order, decides it.
func TestVersionOrderHints(t *testing.T) {
	cases := []struct {
		name  string
		h     string
		order map[string][]int // key → writers' positions in the file
		id    level.ID
	}{
		{"a read of a version the header says was overwritten before it",
			`s0: w x 1 | s1: w x 2 | s1: r x 1`, map[string][]int{"x": {0, 1}}, level.Serializable},
		{"writes ordered in opposite ways on two keys (G0)",
			`s0: w x 1 w y 1 | s1: w x 2 w y 2`, map[string][]int{"x": {0, 1}, "y": {1, 0}}, level.ReadUncommitted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			res, err := check.Run(context.Background(), h, level.Get(c.id), check.Options{})
			if err != nil || res.Outcome != check.Satisfied {
				t.Fatalf("without the order: %v %v %s", err, res.Outcome, kinds(res))
			}
			h.Header.VersionOrder = map[history.KeyID][]history.TxnID{}
			for k, ts := range c.order {
				id, _ := h.LookupKey(history.StringValue(k))
				for _, i := range ts {
					h.Header.VersionOrder[id] = append(h.Header.VersionOrder[id], history.TxnID(i))
				}
			}
			res, err = check.Run(context.Background(), h, level.Get(c.id), check.Options{})
			if err != nil || res.Outcome != check.Violated || res.Checker != "sat" {
				t.Fatalf("with the order: %v %v (checker %s) %s", err, res.Outcome, res.Checker, kinds(res))
			}
			if _, err := check.Run(context.Background(), h, level.Get(c.id), check.Options{Checker: "dsg"}); err == nil {
				t.Error("dsg accepted a white-box version order it ignores")
			}
		})
	}
}

// TestReadCommittedRanges: at read committed and read uncommitted the
// solver checker (and the oracle) take scans and deletes too; read committed proscribes
// cycles of write and read dependencies, predicate ones included, and
// reads of aborted or intermediate versions, not phantoms.
func TestReadCommittedRanges(t *testing.T) {
	cases := []struct {
		name, h string
		want    string // read uncommitted, read committed: '+' holds
	}{
		{"a scan of a committed write", `s0: w 1 a | s1: scan 0 10 [1=a]`, "++"},
		{"a phantom is allowed", `s0: w 1 a w 2 b | s1: scan 0 10 [1=a]`, "++"},
		{"circular information flow through scans (G1c)", `s0: w 1 a scan 0 10 [1=a,2=b] | s1: w 2 b scan 0 10 [1=a,2=b]`, "+-"},
		{"a scan of an aborted write (G1a)", `s0: aborted: w 1 a | s1: scan 0 10 [1=a]`, "+-"},
		{"a null read after a delete", `s0: w 1 a | s1: d 1 | s2: r 1 _`, "++"},
		{"a scan that saw a write its writer deleted (G1b)", `s0: w 1 a d 1 | s1: scan 0 10 [1=a]`, "+-"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			for i, id := range []level.ID{level.ReadUncommitted, level.ReadCommitted} {
				if oracle, err := reference.Check(h, id); err != nil || oracle != (c.want[i] == '+') {
					t.Errorf("%s: the oracle says %v (%v), want %c", id, oracle, err, c.want[i])
				}
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{})
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if got := res.Outcome == check.Satisfied; got != (c.want[i] == '+') {
					t.Errorf("%s: holds=%v, want %c (%s, checker %s)", id, got, c.want[i], kinds(res), res.Checker)
				}
			}
		})
	}
}

// TestRepeatableReadCases: repeatable read (PL-2.99) on histories without
// predicate reads: no session order, and every cycle through an
// anti-dependency is proscribed.
func TestRepeatableReadCases(t *testing.T) {
	cases := []struct {
		name, h string
		holds   bool
		found   string
	}{
		{"a stale read in the same session (allowed: no session order)", `s0: w x 1 | s0: r x _`, true, ""},
		{"a lost update", `init: x=0 | s0: r x 0 w x 1 | s1: r x 0 w x 2`, false, "lost-update"},
		{"a write skew (G2-item)", `init: x=0 y=0 | s0: r x 0 r y 0 w x 1 | s1: r x 0 r y 0 w y 1`, false, "G2-item"},
		{"a non-repeatable read", `s0: w x 1 | s1: r x _ r x 1`, false, "non-repeatable-read"},
		{"a delete read twice", `init: x=0 | s0: d x | s1: r x 0 r x _`, false, "non-repeatable-read"},
		{"reads of one snapshot", `init: x=0 y=0 | s0: w x 1 w y 1 | s1: r x 1 r y 1`, true, ""},
		{"a phantom: a scan run twice sees a new key (allowed)", `s0: w 1 a | s1: scan 0 10 [] scan 0 10 [1=a]`, true, ""},
		{"a scan misses a key an item read then sees (the anti-dependency is the scan's: allowed)", `s0: w 1 a | s1: scan 0 10 [] r 1 a`, true, ""},
		{"an item read sees an older version than a scan (the anti-dependency is the read's: a G-single through an item anti-dependency)", `init: 1=a | s0: w 1 b | s1: scan 0 10 [1=b] r 1 a`, false, "G-single"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			if oracle, err := reference.Check(h, level.RepeatableRead); err != nil || oracle != c.holds {
				t.Errorf("the oracle says %v (%v), want %v", oracle, err, c.holds)
			}
			res, err := check.Run(context.Background(), h, level.Get(level.RepeatableRead), check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Outcome == check.Satisfied; got != c.holds || !strings.Contains(kinds(res), c.found) {
				t.Errorf("holds=%v (%s, checker %s), want %v with %q", got, kinds(res), res.Checker, c.holds, c.found)
			}
		})
	}
}

// TestTooLargeIsUndecided: an encoding past the bound on derived
// anti-dependencies (checker.Limits.MaxDerived) gives no verdict —
// outcome unknown, with the reason — rather than an error or a guess.
func TestTooLargeIsUndecided(t *testing.T) {
	h := history.MustParse(`s0: w x 1 | s1: w x 1 | s2: w x 2 | s3: r x 1 w x 3`)
	res, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Checker: "sat", Limits: checker.Limits{MaxDerived: 1}})
	if err != nil || res.Outcome != check.Undecided || !strings.Contains(res.Reason, "more than the 1 it is allowed") {
		t.Fatalf("%v %v %q", err, res.Outcome, res.Reason)
	}
}

// TestModules: a module's facts enter the check — with the commit-order
// module a history whose reads follow the opposite version order is
// refuted — only checkers that run modules decide, and a history that
// contradicts what a module assumes is an error.
func TestModules(t *testing.T) {
	h := history.MustParse(`s0: w x 1 | s1: w x 2 | s2: r x 1 | s2: r x 2`)
	for i, ts := range []uint64{20, 10, 30, 40} {
		h.Txns[i].CommitTS, h.Txns[i].HasCommitTS = ts, true
	}
	ser := level.Get(level.Serializable)
	res, err := check.Run(context.Background(), h, ser, check.Options{})
	if err != nil || res.Outcome != check.Satisfied {
		t.Fatalf("without the module: %v %v", res.Outcome, err)
	}
	mods := []checker.Module{polygraph.CommitOrder{}}
	res, err = check.Run(context.Background(), h, ser, check.Options{Modules: mods})
	if err != nil || res.Outcome != check.Violated || res.Checker != "sat" {
		t.Fatalf("with commit order: %v %v (%s)", res.Outcome, err, res.Checker)
	}
	if _, err := check.Run(context.Background(), h, ser, check.Options{Modules: mods, Checker: "mt"}); err == nil {
		t.Error("mt, which runs no modules, decided")
	}
	h.Txns[1].HasCommitTS = false
	if _, err := check.Run(context.Background(), h, ser, check.Options{Modules: mods}); err == nil || !strings.Contains(err.Error(), "no commit_ts") {
		t.Errorf("a writer without commit_ts: %v", err)
	}
}

// TestOwnReadsPolicies: the read-your-own-writes policy decides what a
// read after the transaction's own write may return; checkers that assume
// reads see own writes decline the other policies.
func TestOwnReadsPolicies(t *testing.T) {
	cases := []struct {
		name, h string
		want    string // own, external, either: '+' holds
	}{
		{"reads its own write", `init: x=0 | s0: w x 1 r x 1`, "+-+"},
		{"reads the state before its own write", `init: x=0 | s0: w x 1 r x 0`, "-++"},
		{"reads another's write after its own", `init: x=0 | s1: w x 5 | s0: w x 1 r x 5`, "-++"},
		{"a scan of the state before its own write", `s0: w 1 a scan 0 10 []`, "-++"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			for i, own := range []history.OwnReads{history.MustReadOwn, history.ReadsExternal, history.ReadsEither} {
				res, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{OwnReads: own})
				if err != nil {
					t.Fatalf("%s: %v", own, err)
				}
				if got := res.Outcome == check.Satisfied; got != (c.want[i] == '+') {
					t.Errorf("%s: holds=%v, want %c (%s, checker %s)", own, got, c.want[i], kinds(res), res.Checker)
				}
			}
		})
	}
	h := history.MustParse(`init: x=0 | s0: r x 0 w x 1`)
	if _, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{OwnReads: history.ReadsEither, Checker: "mt"}); err == nil {
		t.Error("mt decided under the either policy")
	}
}

// eitherModule is a user module that adds one superposition.
type eitherModule struct{ alts [][]checker.Edge }

func (eitherModule) Name() string { return "either" }

func (m eitherModule) Extend(a checker.ASG) error { return a.Either(m.alts...) }

// TestModuleSuperpositions: a module's superposition holds exactly one of
// its alternatives, and the solver chooses: a history is refuted only when
// every alternative closes a forbidden cycle.
func TestModuleSuperpositions(t *testing.T) {
	h := history.MustParse(`init: x=0 | s0: r x 0 w x 1 | s1: r x 1 w x 2`) // T0 →wr T1
	back := func(d anomaly.Dep) []checker.Edge {
		return []checker.Edge{{From: 1, To: 0, Dep: d, Key: history.NoKey}}
	}
	cases := []struct {
		name  string
		alts  [][]checker.Edge
		holds bool
	}{
		{"one alternative closing a cycle", [][]checker.Edge{back(anomaly.RT)}, false},
		{"or nothing", [][]checker.Edge{back(anomaly.RT), nil}, true},
		{"two alternatives, both closing a cycle", [][]checker.Edge{back(anomaly.RT), back(anomaly.SO)}, false},
		{"an alternative that agrees", [][]checker.Edge{back(anomaly.RT), {{From: 0, To: 1, Dep: anomaly.RT, Key: history.NoKey}}}, true},
	}
	for _, c := range cases {
		for _, id := range []level.ID{level.ReadCommitted, level.PL2Plus, level.Serializable} {
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Modules: []checker.Module{eitherModule{c.alts}}})
			if err != nil {
				t.Fatalf("%s at %s: %v", c.name, id, err)
			}
			if got := res.Outcome == check.Satisfied; got != c.holds {
				t.Errorf("%s at %s: holds=%v (%s), want %v", c.name, id, got, kinds(res), c.holds)
			}
		}
	}
	bad := eitherModule{[][]checker.Edge{{{From: 0, To: 0, Dep: anomaly.RT, Key: history.NoKey}}}}
	if _, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{Modules: []checker.Module{bad}}); err == nil {
		t.Error("an edge from a transaction to itself was accepted")
	}
}

// TestOrderModules: session order and real time added to levels that do
// not ask for them.
func TestOrderModules(t *testing.T) {
	cases := []struct {
		name   string
		h      string
		id     level.ID
		module checker.Module
	}{
		{"a stale read in the same session, at repeatable read", `s0: w x 1 | s0: r x _`, level.RepeatableRead, polygraph.SessionOrder{}},
		{"a stale read in the same session, at PL-2+", `init: x=0 y=0 | s0: w x 1 | s0: r x 0 w y 1`, level.PL2Plus, polygraph.SessionOrder{}},
		{"a stale read after the write ended, at serializability", `s0: @0-1: w x 1 | s1: @2-3: r x _`, level.Serializable, polygraph.RealTime{}},
		{"a stale read after the write ended, at snapshot isolation", `s0: @0-1: w x 1 | s1: @2-3: r x _`, level.SnapshotIsolation, polygraph.RealTime{}},
	}
	for _, c := range cases {
		h := history.MustParse(c.h)
		res, err := check.Run(context.Background(), h, level.Get(c.id), check.Options{})
		if err != nil || res.Outcome != check.Satisfied {
			t.Fatalf("%s: without the module %v %v", c.name, res.Outcome, err)
		}
		res, err = check.Run(context.Background(), h, level.Get(c.id), check.Options{Modules: []checker.Module{c.module}})
		if err != nil || res.Outcome != check.Violated {
			t.Errorf("%s: with %s %v (%s) %v", c.name, c.module.Name(), res.Outcome, kinds(res), err)
		}
	}
	if _, err := check.Run(context.Background(), history.MustParse(`w x 1 | r x 1`), level.Get(level.Serializable),
		check.Options{Modules: []checker.Module{polygraph.RealTime{}}}); err == nil {
		t.Error("real time without instants was accepted")
	}
}
