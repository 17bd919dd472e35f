package linear

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// run plans and runs the check of h at level id.
func run(t *testing.T, h *history.History, id level.ID, o checker.Options) ([]anomaly.Anomaly, error) {
	t.Helper()
	check, err := Checker{}.Plan(history.NewIndex(h), level.Get(id), o)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, history.Notation(h))
	}
	return check(context.Background())
}

func TestCases(t *testing.T) {
	for _, c := range []struct {
		name, h string
		id      level.ID
		holds   bool
		// For a violation: the anomaly's kind, whether it is a cycle,
		// and BestFound.
		kind      anomaly.Kind
		cycle     bool
		bestFound bool
	}{
		{name: "sequential", h: "s1: @1-2: w x 1 | s2: @3-4: r x 1 | s3: @5-6: r x 1 w x 2 | s4: @7-8: r x 2", id: level.StrictSerializable, holds: true},
		{name: "concurrent reads either side of a write", h: "@1-10: w x 1 | @2-3: r x _ | @4-5: r x 1", id: level.StrictSerializable, holds: true},
		{name: "touching intervals are concurrent", h: "@1-5: w x 1 | @5-6: r x _", id: level.StrictSerializable, holds: true},
		{name: "stale read, one writer", h: "@1-2: w x 1 | @3-4: w x 2 | @5-6: r x 1", id: level.StrictSerializable,
			kind: anomaly.RealTimeViolation, cycle: true},
		{name: "stale read of a repeated value", h: "@1-2: w x 1 | @1-2: w x 1 | @3-4: w x 2 | @5-6: r x 1", id: level.StrictSerializable,
			kind: anomaly.RealTimeViolation, cycle: true, bestFound: true},
		{name: "stale read of the initial value", h: "@1-2: w x 1 | @3-4: r x _", id: level.StrictSerializable,
			kind: anomaly.RealTimeViolation, cycle: true},
		{name: "future read", h: "@1-2: r x 1 | @3-4: w x 1", id: level.StrictSerializable,
			kind: anomaly.RealTimeViolation, cycle: true},
		{name: "unknown write may take effect late", h: "@1-2: w x 1 | unknown: @3-4: w x 2 | @10-11: w x 3 | @12-13: r x 2", id: level.StrictSerializable, holds: true},
		{name: "unknown write explains a later read", h: "@1-2: w x 1 | unknown: @3-4: w x 2 | @10-11: r x 2", id: level.StrictSerializable, holds: true},
		{name: "unknown write not before it began", h: "@1-2: r x 2 | unknown: @3-4: w x 2", id: level.StrictSerializable,
			kind: anomaly.RealTimeViolation, cycle: true},
		{name: "unknown write may not take effect", h: "@1-2: w x 1 | unknown: @3-4: w x 2 | @10-11: r x 1", id: level.StrictSerializable, holds: true},
		{name: "lost update: two compare-and-sets from one write", h: "@1-2: w x 1 | @3-8: r x 1 w x 2 | @3-8: r x 1 w x 3 | @9-10: r x 1 w x 4", id: level.StrictSerializable,
			kind: anomaly.RealTimeViolation},
		{name: "compare-and-sets chained through repeated values", h: "@1-2: w x 1 | @3-8: r x 1 w x 2 | @3-8: r x 2 w x 1 | @3-8: r x 1 w x 2 | @9-10: r x 2", id: level.StrictSerializable, holds: true},
		{name: "an unknown compare-and-set in the middle of a chain", h: "@1-2: w x 1 | unknown: @3-4: r x 1 w x 2 | @5-6: r x 2 w x 3 | @7-8: r x 3", id: level.StrictSerializable, holds: true},
		{name: "two unknown writes in a chain", h: "@1-2: w x 0 | unknown: @3-4: r x 0 w x 1 | unknown: @3-4: w x 2 | unknown: @3-4: r x 2 w x 1 | @9-10: r x 1 w x 5 | @11-12: r x 5", id: level.StrictSerializable, holds: true},
		{name: "serializable but not linearizable", h: "s1: @1-2: w x 1 | s2: @3-4: r x _", id: level.Serializable, holds: true},
		{name: "serializability keeps session order", h: "s1: @1-2: w x 1 | s1: @3-4: w x 2 | s2: @5-6: r x 2 | s2: @7-8: r x 1", id: level.Serializable,
			kind: anomaly.Cycle},
		{name: "serializability: a session misses its own write", h: "s1: w x 1 | s1: r x _ | s2: w x 2", id: level.Serializable,
			kind: anomaly.SessionGuaranteeViolation, cycle: true},
		{name: "serializability: a session reads its own later write", h: "s1: r x 1 | s1: w x 1", id: level.Serializable,
			kind: anomaly.SessionGuaranteeViolation, cycle: true},
		{name: "serializability: a session overwrote what it reads", h: "s1: w x 1 | s1: w x 2 | s1: r x 1 | s2: r x 2", id: level.Serializable,
			kind: anomaly.SessionGuaranteeViolation, cycle: true},
		{name: "keys are independent", h: "@1-2: w x 1 | @1-2: w y 1 | @3-4: r x 1 | @3-4: r y _", id: level.StrictSerializable,
			kind: anomaly.RealTimeViolation, cycle: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			found, err := run(t, h, c.id, checker.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.holds {
				if len(found) > 0 {
					t.Fatalf("want it to hold, got %v", found)
				}
				return
			}
			if len(found) != 1 {
				t.Fatalf("want one anomaly, got %d: %v", len(found), found)
			}
			a := found[0]
			if a.Kind != c.kind || a.IsCycle() != c.cycle && c.cycle || a.BestFound != c.bestFound {
				t.Errorf("got %s (cycle %v, best found %v), want %s (cycle %v, best found %v): %+v", a.Kind, a.IsCycle(), a.BestFound, c.kind, c.cycle, c.bestFound, a)
			}
			if a.IsCycle() {
				validCycle(t, h, a)
			} else {
				validPrefix(t, h, a)
			}
		})
	}
}

// validCycle checks a cycle anomaly's shape: its steps join up, and each
// rt step is one of real time.
func validCycle(t *testing.T, h *history.History, a anomaly.Anomaly) {
	t.Helper()
	for i, s := range a.Cycle {
		next := a.Cycle[(i+1)%len(a.Cycle)]
		if s.To != next.From {
			t.Errorf("step %d ends at %d, step %d starts at %d", i, s.To, i+1, next.From)
		}
		from, to := &h.Txns[s.From], &h.Txns[s.To]
		switch s.Dep {
		case anomaly.RT:
			if from.Status != history.Committed || from.End >= to.Begin {
				t.Errorf("rt step %d: %s [%d,%d] does not precede %s [%d,%d]", i, h.TxnName(s.From), from.Begin, from.End, h.TxnName(s.To), to.Begin, to.End)
			}
		case anomaly.SO:
			if from.Session != to.Session || s.From >= s.To {
				t.Errorf("so step %d: %s does not precede %s in a session", i, h.TxnName(s.From), h.TxnName(s.To))
			}
		}
	}
}

// validPrefix checks a counterexample of the search: the prefix (Txns[1:])
// is a linearizable prefix that leaves Value, and the blocked operation
// is not in it.
func validPrefix(t *testing.T, h *history.History, a anomaly.Anomaly) {
	t.Helper()
	if len(a.Txns) == 0 || len(a.Ops) == 0 || a.Ops[0].Txn != a.Txns[0] {
		t.Fatalf("a counterexample names the blocked operation first: %+v", a)
	}
	// Values some other transaction that may have taken effect writes
	// (or the initial state holds): a read of another one is the shared
	// checks' to report, and the search leaves it out.
	writers := map[history.Value][]history.TxnID{}
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Write && h.Txns[i].Status != history.Aborted {
				writers[op.Value] = append(writers[op.Value], history.TxnID(i))
			}
		}
	}
	served := func(reader history.TxnID, v history.Value) bool {
		if v == h.InitialValue(a.Key) {
			return true
		}
		for _, w := range writers[v] {
			if w != reader {
				return true
			}
		}
		return false
	}
	state := h.InitialValue(a.Key)
	for i, id := range a.Txns[1:] {
		if id == a.Txns[0] {
			t.Fatalf("the blocked operation is in the prefix")
		}
		for _, op := range h.Txns[id].Ops {
			switch {
			case op.Kind == history.Write:
				state = op.Value
			case op.Value != state && served(id, op.Value):
				t.Fatalf("prefix step %d: %s reads %s but the register holds %s", i, h.TxnName(id), op.Value, state)
			}
		}
	}
	if state != a.Value {
		t.Errorf("the prefix leaves %s, the anomaly says %s", state, a.Value)
	}
}

// TestDeclines: what the checker does not decide.
func TestDeclines(t *testing.T) {
	for _, c := range []struct {
		h    string
		id   level.ID
		want string
	}{
		{"@1-2: w x 1 | @3-4: r x 1", level.ReadCommitted, "not read-committed"},
		{"@1-2: w x 1 w y 1", level.StrictSerializable, "more than one key"},
		{"w x 1 | r x 1", level.StrictSerializable, "no begin and end instants"},
		{"s1: unknown: @1-2: w x 1 | s1: @3-4: r x 1", level.StrictSerializable, "of unknown outcome, is followed"},
		{"s1: @1-5: w x 1 | s1: @3-4: r x 1", level.StrictSerializable, "begins before"},
		{"s1: w x 1 | s1: w y 1", level.Serializable, "more than one key"},
		{"@1-2: r x 1 r x 2", level.StrictSerializable, "reads x twice"},
		{"@1-2: d x", level.StrictSerializable, "has a delete operation"},
	} {
		_, err := Checker{}.Plan(history.NewIndex(history.MustParse(c.h)), level.Get(c.id), checker.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s at %s: got %v, want an error saying %q", c.h, level.Get(c.id).Name, err, c.want)
		}
	}
}

// symmetric builds a register history whose search, without the memo,
// tries every interleaving of n concurrent writes of 1 with n of 2: then a
// read of 3 that nothing writes before it ends (left to the search: the
// refutation would find it at once).
func symmetric(n int) *history.History {
	var b strings.Builder
	for range n {
		b.WriteString("@1-100: w x 1 | @1-100: w x 2 | ")
	}
	b.WriteString("@1-100: r x 1 | @1-100: r x 2 | @1-100: r x 3 | @200-201: w x 3")
	return history.MustParse(b.String())
}

// distinct builds a register history that is hard for any search: n
// concurrent writes of distinct values, each read by a concurrent read,
// and after them two reads of different values, which no order allows.
// The search must try every set of writes placed before it can tell.
func distinct(n int) *history.History {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "@1-100: w x %d | @1-100: r x %d | ", i, i)
	}
	b.WriteString("@200-201: r x 0 | @200-201: r x 1")
	return history.MustParse(b.String())
}

// TestMemoBoundsTheSearch: the memo keeps a search whose orders are all
// alike polynomial: without it, this one would visit every one of the
// C(24,12) interleavings of the writes.
func TestMemoBoundsTheSearch(t *testing.T) {
	h := symmetric(12)
	p, err := newPlan(history.NewIndex(h), level.Get(level.StrictSerializable))
	if err != nil {
		t.Fatal(err)
	}
	s := newSearch(p, &p.keys[0], limits{work: 2_000_000})
	ok, err := s.run(context.Background())
	if err != nil {
		t.Fatalf("the search should stay far under its work limit: %v (%d configurations)", err, s.nodes)
	}
	if ok {
		t.Fatal("r x 3 cannot be served: nothing writes 3 before it ends")
	}
	if s.nodes > 2_000 {
		t.Errorf("%d configurations visited: the memo should keep it near (n+1)^2 · values", s.nodes)
	}
}

// TestBounds: past the work or memory bound the check is undecided; a
// context that ends stops it promptly.
func TestBounds(t *testing.T) {
	h := distinct(40)
	check, err := Checker{}.Plan(history.NewIndex(h), level.Get(level.StrictSerializable), checker.Options{Limits: checker.Limits{Work: 5000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := check(context.Background()); !errors.Is(err, checker.ErrUndecided) || !strings.Contains(err.Error(), "work limit") {
		t.Errorf("work bound: got %v", err)
	}
	// (A work limit too, so that a search whose memory does not grow
	// fails the test instead of running on.)
	check, _ = Checker{}.Plan(history.NewIndex(h), level.Get(level.StrictSerializable), checker.Options{MemoryLimit: 64 << 10, Limits: checker.Limits{Work: 10_000_000}})
	if _, err := check(context.Background()); !errors.Is(err, checker.ErrUndecided) || !strings.Contains(err.Error(), "MB") {
		t.Errorf("memory bound: got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	check, _ = Checker{}.Plan(history.NewIndex(h), level.Get(level.StrictSerializable), checker.Options{})
	start := time.Now()
	if _, err := check(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: got %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the search took %v to notice the deadline", d)
	}
}

// TestDeterministic: the same history gives the same anomalies, keys
// checked in parallel or not.
func TestDeterministic(t *testing.T) {
	var b strings.Builder
	for k := range 12 {
		fmt.Fprintf(&b, "@1-2: w k%d 1 | @3-4: w k%d 2 | @5-6: r k%d 1 | @1-9: w k%d 3 | @10-11: r k%d 3 | ", k, k, k, k, k)
	}
	h := history.MustParse(strings.TrimSuffix(b.String(), " | "))
	first, err := run(t, h, level.StrictSerializable, checker.Options{})
	if err != nil || len(first) != 12 {
		t.Fatalf("got %d anomalies, %v; want one per key", len(first), err)
	}
	for range 20 {
		again, _ := run(t, h, level.StrictSerializable, checker.Options{})
		if fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("the anomalies changed from one run to the next:\n%v\n%v", first, again)
		}
	}
}
