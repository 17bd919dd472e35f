package check_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// spinning runs f with every core kept busy by spinning goroutines (twice
// as many as there are cores), and with GOMAXPROCS set to procs when it
// is positive.
func spinning(procs int, f func()) {
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

// TestVerdictIndependentOfLoad: a history over the solver's encoding
// bound, which only the unsat search refutes, checked with the weaker
// levels that still hold, gets the same outcome, the same counterexample
// and the same list of levels that hold on an idle machine and with
// GOMAXPROCS=1 among spinning goroutines. Before the budgets were
// counted in work, the unsat search stopped after 20 s and each "still
// holds" search after 1 s of wall-clock time, so a loaded or slower
// machine could leave the history undecided, or claim fewer levels.
func TestVerdictIndependentOfLoad(t *testing.T) {
	// T3 read x=1, which T1 and T2 both wrote, and y from before both:
	// only the solver finds the cycle; around it, serial
	// read-modify-writes of z with repeated values make the whole
	// encoding large.
	var b strings.Builder
	b.WriteString("init: x=0 y=0 z=0")
	cur := 0
	for i := range 80 {
		if i == 40 {
			b.WriteString(" | s0: w x 1 w y 1 | s1: w x 1 w y 1 | s2: r x 1 r y 0")
		}
		next := 1 + i%2
		fmt.Fprintf(&b, " | s%d: r z %d w z %d", 3+i%4, cur, next)
		cur = next
	}
	h, err := history.Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	ser := level.Get(level.Serializable)
	limits := checker.Limits{MaxDerived: 1 << 17}
	res, err := check.Run(context.Background(), h, ser, check.Options{Checker: "sat", Limits: limits, Tuning: checker.Tuning{NoUnsatSearch: true}})
	if err != nil || res.Outcome != check.Undecided || !strings.Contains(res.Reason, "more than the") {
		t.Fatalf("without the unsat search: %v %v %q", err, res.Outcome, res.Reason)
	}
	run := func() string {
		res, err := check.Run(context.Background(), h, ser, check.Options{Checker: "sat", Holds: true, Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		var holds []string
		for _, l := range res.Holds {
			holds = append(holds, l.Short)
		}
		return fmt.Sprintf("%v %+v holds %v", res.Outcome, res.Anomalies, holds)
	}
	want := run()
	if !strings.HasPrefix(want, "violation") || strings.HasSuffix(want, "holds []") {
		t.Fatalf("idle: %s", want)
	}
	t.Log(want)
	// One processor among spinners: the slowest the check can be made
	// here (the searches count work, not time, so any load gives the
	// same). Minutes under the race detector: not in short mode.
	if testing.Short() {
		return
	}
	var got string
	spinning(1, func() { got = run() })
	if got != want {
		t.Errorf("busy, GOMAXPROCS 1:\n got %s\nwant %s", got, want)
	}
}

// TestWeakHoldsIndependentOfLoad: on a 600-transaction history recorded
// from Badger (blind writers of a key both commit: snapshot isolation is
// violated by its own timestamps), the search for the weaker levels that
// still hold meets solver encodings (generalized SI and prefix
// consistency hold black-box, and imply the rest; before those levels
// existed it was a PL-2+ encoding whose time went to the acyclicity
// theory's searches between conflicts). The bounds count that work too,
// so the levels claimed are the same on an idle machine, a busy one and
// one processor; with a wall-clock net under a conflict count, the list
// depended on the machine (and without any net, the pass took minutes).
func TestWeakHoldsIndependentOfLoad(t *testing.T) {
	h := readBlindW600(t)
	si := level.Get(level.SnapshotIsolation)
	run := func() string {
		res, err := check.Run(context.Background(), h, si, check.Options{Holds: true})
		if err != nil {
			t.Fatal(err)
		}
		var holds []string
		for _, l := range res.Holds {
			holds = append(holds, l.Short)
		}
		return fmt.Sprintf("%v %d anomalies, first %+v; holds %v", res.Outcome, len(res.Anomalies), res.Anomalies[0], holds)
	}
	start := time.Now()
	want := run()
	if !strings.HasPrefix(want, "violation") || !strings.HasSuffix(want, "holds [gsi pc]") {
		t.Fatalf("idle: %s", want)
	}
	t.Logf("%s (%v)", want, time.Since(start))
	// Once with every core busy (with one core, the spinners would make
	// this test five times slower and show nothing more: the searches count
	// work, not time). Minutes under the race detector: not in short mode.
	if testing.Short() {
		return
	}
	var got string
	spinning(0, func() { got = run() })
	if got != want {
		t.Errorf("busy:\n got %s\nwant %s", got, want)
	}
}

// readBlindW600 reads testdata/badger-blindw-600.jsonl.gz: 600 blind-write
// transactions a Badger run recorded, which violate snapshot isolation and
// need the solver.
func readBlindW600(t *testing.T) *history.History {
	t.Helper()
	f, err := os.Open("testdata/badger-blindw-600.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	h, err := native.Read(zr, "badger-blindw-600.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return h
}
