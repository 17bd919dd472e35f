package listappend

import (
	"context"
	"errors"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestSolveStopsWithItsContext: the solver path gives up with the
// context's error once it ends, and decides with a live one.
func TestSolveStopsWithItsContext(t *testing.T) {
	h := history.MustParse("s1: r x [] a x 1 | s2: r x [] a x 2")
	si := level.Get(level.SnapshotIsolation)
	a := newAnalysis(h, si)
	a.resolve()
	a.reads()
	a.graph(si)
	if !a.choice {
		t.Fatal("two unobserved appenders of x leave a choice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if found, err := a.solve(ctx, si); !errors.Is(err, context.Canceled) || len(found) != 0 {
		t.Fatalf("a cancelled solve: %v, %v", found, err)
	}
	if _, err := (Checker{}).Check(ctx, history.NewIndex(h), si); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled check: %v", err)
	}
	found, err := a.solve(context.Background(), si)
	if err != nil || len(found) != 1 {
		t.Fatalf("a solve: %v, %v", found, err)
	}
}

// TestRegisters: the rewriting keeps transactions and operation positions,
// reads the last element the transaction did not append itself, and
// settles unknown transactions as resolve did.
func TestRegisters(t *testing.T) {
	h := history.MustParse("s1: unknown: a x 1 | s2: unknown: a x 9 | s3: r x [1] a x 2 r x [1,2] r y []")
	a := newAnalysis(h, level.Get(level.SnapshotIsolation))
	a.resolve()
	rw := a.registers()
	want := "t1: s1: w x 1 | t2: s2: aborted: w x 9 | t3: s3: r x 1 w x 2 r x 1 r y _"
	if got := history.Notation(rw); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if h.Txns[0].Status != history.Unknown || h.Txns[2].Ops[0].Kind != history.ReadList {
		t.Error("the rewriting changed the history")
	}
}

// TestNullElements: null elements are renumbered for the solver (a write
// of null would be a delete), and the lost update is still found.
func TestNullElements(t *testing.T) {
	h := history.MustParse("s1: a x 0 | s2: r x [0] a x 1 | s3: r x [0] a x 2")
	for i := range h.Txns {
		for j, op := range h.Txns[i].Ops {
			if op.Kind == history.Append && op.Value == history.IntValue(0) {
				h.Txns[i].Ops[j].Value = history.NullValue
			}
			if op.Kind == history.ReadList {
				h.Txns[i].Ops[j].List = []history.Value{history.NullValue}
			}
		}
	}
	si := level.Get(level.SnapshotIsolation)
	a := newAnalysis(h, si)
	a.resolve()
	rw := a.registers()
	if got, want := history.Notation(rw), "t1: s1: w x 1 | t2: s2: r x 1 w x 2 | t3: s3: r x 1 w x 3"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	found, err := (Checker{}).Check(context.Background(), history.NewIndex(h), si)
	if err != nil || len(found) != 1 || found[0].Kind.String() != "lost-update" {
		t.Fatalf("found %v, %v", found, err)
	}
}
