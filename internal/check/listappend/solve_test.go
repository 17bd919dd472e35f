package listappend

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/check/reference"
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
	if len(a.open) != 1 {
		t.Fatal("two unobserved appenders of x leave a choice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if found, err := a.solve(ctx, si, checker.Options{}); !errors.Is(err, context.Canceled) || len(found) != 0 {
		t.Fatalf("a cancelled solve: %v, %v", found, err)
	}
	if _, err := check(ctx, history.NewIndex(h), si, checker.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled check: %v", err)
	}
	found, err := a.solve(context.Background(), si, checker.Options{})
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
	found, err := check(context.Background(), history.NewIndex(h), si, checker.Options{})
	if err != nil || len(found) != 1 || found[0].Kind.String() != "lost-update" {
		t.Fatalf("found %v, %v", found, err)
	}
}

// staleHistory is a small list-append history from a store whose
// transactions read a random old snapshot and append at the end of the
// current lists at commit (some abort).
func staleHistory(r *rand.Rand) *history.History {
	h := history.New()
	txns, keys := 2+r.IntN(5), 1+r.IntN(2)
	for s := range 2 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := []history.KeyID{h.Key(history.StringValue("x")), h.Key(history.StringValue("y"))}
	states := [][][]history.Value{make([][]history.Value, keys)}
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(2))}
		snap := states[r.IntN(len(states))]
		own := make([][]history.Value, keys)
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			if r.IntN(2) == 0 {
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: key[k], List: append(slices.Clone(snap[k]), own[k]...)})
				continue
			}
			own[k] = append(own[k], history.IntValue(next))
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: key[k], Value: history.IntValue(next)})
			next++
		}
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		} else {
			cur, after := states[len(states)-1], make([][]history.Value, keys)
			for k := range keys {
				after[k] = append(slices.Clip(cur[k]), own[k]...)
			}
			states = append(states, after)
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// TestGuessAndSolveAgainstOracle: on the histories that reach the search
// (no cycle in the partial graph, sound lists, an open key), the solver's
// verdict is the oracle's at snapshot isolation, and a successful guess
// is never wrong. Check mostly guesses right, so the solver is tested here
// on its own.
func TestGuessAndSolveAgainstOracle(t *testing.T) {
	si := level.Get(level.SnapshotIsolation)
	searched, guessed, violated := 0, 0, 0
	for seed := range uint64(3000) {
		h := staleHistory(rand.New(rand.NewPCG(seed, 61)))
		a := newAnalysis(h, si)
		a.resolve()
		a.reads()
		g := a.graph(si)
		if len(a.found) > 0 || len(a.open) == 0 {
			continue
		}
		order, acyclic := splitOrder(g)
		if !acyclic {
			s := a.split(g)
			if found, _ := dsg.FindCycles(context.Background(), h, s.G, s.Mask, s.Nodes); len(found) == 0 {
				t.Fatalf("seed %d: the split graph has a cycle, and FindCycles none", seed)
			}
			continue
		}
		want, err := reference.Check(h, level.SnapshotIsolation)
		if err != nil {
			t.Fatal(err)
		}
		searched++
		if !want {
			violated++
		}
		found, err := a.solve(context.Background(), si, checker.Options{})
		if err != nil || (len(found) == 0) != want {
			t.Fatalf("seed %d: solver found %v (%v), oracle says %v\n%s", seed, found, err, want, history.Notation(h))
		}
		ok, err := a.guess(context.Background(), si, g, order)
		if err != nil || ok && !want {
			t.Fatalf("seed %d: the guess witnesses a violated history (%v)\n%s", seed, err, history.Notation(h))
		}
		if ok {
			guessed++
		}
	}
	if searched < 100 || violated < searched/10 || violated == searched {
		t.Errorf("%d histories searched, %d violated: too few to test", searched, violated)
	}
	t.Logf("%d histories searched, %d violated, %d guessed", searched, violated, guessed)
}
