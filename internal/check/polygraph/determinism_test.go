package polygraph

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// busy runs f with every core kept busy by spinning goroutines (twice as
// many as there are cores), and with GOMAXPROCS set to procs when it is
// positive.
func busy(procs int, f func()) {
	if procs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := uint64(1)
			for !stop.Load() {
				for range 1000 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	defer wg.Wait()
	defer stop.Store(true)
	f()
}

// overBound returns a history whose whole encoding is over the bound on
// derived anti-dependencies while a window of it violates
// serializability, and that bound: only the unsat search decides it. T3
// (in the middle) read x=1, which T1 and T2 both wrote, and y from before
// both of them — only the solver finds that every choice of its writer is
// a cycle — amid a long serial run of read-modify-writes of another key
// with repeated values, which makes the encoding large.
func overBound(t *testing.T) (*history.Index, int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("init: x=0 y=0 z=0")
	cur := 0
	rmw := func(from, to int) {
		for i := from; i < to; i++ {
			next := 1 + i%2
			fmt.Fprintf(&b, " | s%d: r z %d w z %d", 3+i%4, cur, next)
			cur = next
		}
	}
	rmw(0, 40)
	b.WriteString(" | s0: w x 1 w y 1 | s1: w x 1 w y 1 | s2: r x 1 r y 0")
	rmw(40, 80)
	h, err := history.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	ix := history.NewIndex(h)
	ser := level.Get(level.Serializable)
	for bound := 1 << 18; bound >= 1; bound /= 2 {
		_, _, err := Checker{NoUnsatSearch: true, Limits: checker.Limits{MaxDerived: bound}}.Run(context.Background(), ix, ser)
		var tooLarge *TooLargeError
		if !errors.As(err, &tooLarge) {
			continue
		}
		found, _, err := Checker{Limits: checker.Limits{MaxDerived: bound}}.Run(context.Background(), ix, ser)
		if err != nil || len(found) == 0 {
			t.Fatalf("bound %d: the unsat search found no violation: %v", bound, err)
		}
		return ix, bound
	}
	t.Fatal("the history never passed the bound")
	return nil, 0
}

// outcome is what a check said, in full, for comparison.
func outcome(found []anomaly.Anomaly, err error) string {
	return fmt.Sprintf("%+v %v", found, err)
}

// TestUnsatSearchDeterministic: a history over the encoding bound, which
// only the unsat search refutes, gets the same outcome and the same
// counterexample (cycle, transactions, core, minimality) on an idle
// machine, on one whose every core is busy, and with GOMAXPROCS=1 — with
// the default budgets and with budgets small enough to stop the search
// midway. With the wall-clock budget the search had before, a loaded
// machine tried fewer sub-histories in the same time, so it could return
// a larger core, or none and leave the history undecided.
func TestUnsatSearchDeterministic(t *testing.T) {
	ix, bound := overBound(t)
	ser := level.Get(level.Serializable)
	full := Checker{Limits: checker.Limits{MaxDerived: bound}}
	run := func(c Checker) string {
		found, _, err := c.Run(context.Background(), ix, ser)
		return outcome(found, err)
	}
	base, _, err := full.Run(context.Background(), ix, ser)
	if err != nil || len(base) == 0 || len(base[0].Core) == 0 {
		t.Fatalf("idle: %v %v", base, err)
	}
	// A budget that stops the search midway: less work than the search to
	// a 1-minimal core takes, yet enough for the window that violates.
	var cut Checker
	var cutFound []anomaly.Anomaly
	for work := int64(1 << 13); work > 1 && cutFound == nil; work /= 2 {
		c := full
		c.ShrinkWork = work
		found, _, err := c.Run(context.Background(), ix, ser)
		if err == nil && len(found) > 0 && outcome(found, nil) != outcome(base, nil) {
			cut, cutFound = c, found
		}
	}
	if cutFound == nil {
		t.Fatal("no budget stops the search midway with a violation")
	}
	t.Logf("bound %d; full search: core of %d (minimal %v); work %d: core of %d", bound, len(base[0].Core), base[0].Minimal, cut.ShrinkWork, len(cutFound[0].Core))
	for _, c := range []Checker{full, cut} {
		want := run(c)
		for _, procs := range []int{0, 1} {
			var got string
			busy(procs, func() { got = run(c) })
			if got != want {
				t.Errorf("work %d, busy, GOMAXPROCS %d:\n got %s\nwant %s", c.ShrinkWork, procs, got, want)
			}
		}
		for range 3 {
			if got := run(c); got != want {
				t.Errorf("work %d, run again:\n got %s\nwant %s", c.ShrinkWork, got, want)
			}
		}
	}
}
