package check_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// blindWrites is the blind-write history: n transactions in 100 sessions, the
// even ones blind writes of i%3 to one key, the odd ones reads of a random
// one of those values; every read has a third of the writers as
// candidates, and the solver's set-up grows with their square.
func blindWrites(n int, seed uint64) *history.History {
	r := rand.New(rand.NewPCG(seed, 18))
	h := history.New()
	x := h.Key(history.StringValue("x"))
	for s := range 100 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	for i := range n {
		op := history.Op{Kind: history.Write, Key: x, Value: history.IntValue(int64(i % 3))}
		if i%2 == 1 {
			op = history.Op{Kind: history.Read, Key: x, Value: history.IntValue(r.Int64N(3))}
		}
		h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(i)), Session: int32(i % 100), Status: history.Committed, Ops: []history.Op{op}})
	}
	return h
}

// TestStopsPromptly: on the 5,000-transaction blind-write history, a check
// whose context ends at any moment — in the shared checks, the
// construction, pruning, the unsat search — returns within a second of
// it, undecided, with the reason (or decided as it came). Pruning once
// ran on for minutes whatever the context said.
//
// The 200-transaction one is encoded whole (330,000 conjunctions):
// there the context ends while encoding, lowering or solving.
func TestStopsPromptly(t *testing.T) {
	type at struct {
		n     int
		after time.Duration
	}
	for _, c := range []at{{5000, 0}, {5000, 20 * time.Millisecond}, {5000, 200 * time.Millisecond}, {5000, 700 * time.Millisecond}, {5000, 1500 * time.Millisecond},
		{200, 300 * time.Millisecond}, {200, 700 * time.Millisecond}, {200, 1200 * time.Millisecond}} {
		h, after := blindWrites(c.n, 1), c.after
		ctx, cancel := context.WithTimeout(context.Background(), after)
		start := time.Now()
		res, err := check.Run(ctx, h, level.Get(level.Serializable), check.Options{Checker: "sat", Holds: true})
		late := time.Since(start) - after
		cancel()
		if err != nil {
			t.Fatalf("stopped after %v: %v", after, err)
		}
		t.Logf("%d transactions stopped after %v: %v later, %s %s", c.n, after, late, res.Outcome, res.Reason)
		if late > time.Second {
			t.Errorf("stopped after %v: returned %v later", after, late)
		}
		if res.Outcome == check.Satisfied {
			continue // decided as the deadline came (the history holds)
		}
		if res.Outcome != check.Undecided || res.Reason != "timed out before a verdict" {
			t.Errorf("stopped after %v: %s (%s), want unknown, timed out", after, res.Outcome, res.Reason)
		}
	}
}

// TestMemoryLimitIsUndecided: a check whose memory bound leaves the
// solver's construction too little is undecided, saying how much it
// needed, and so is one whose context a memory watchdog cancels with a
// ResourceLimitError; interrupted is said so, not "timed out".
func TestMemoryLimitIsUndecided(t *testing.T) {
	h := blindWrites(400, 2)
	ser := level.Get(level.Serializable)
	res, err := check.Run(context.Background(), h, ser, check.Options{Checker: "sat", MemoryLimit: 1})
	if err != nil || res.Outcome != check.Undecided || !strings.Contains(res.Reason, "needs more than") {
		t.Fatalf("a 1-byte bound: %v, %s (%s)", err, res.Outcome, res.Reason)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&check.ResourceLimitError{What: "memory: the check held 2000 MB, more than --memory-mb 1900"})
	res, err = check.Run(ctx, h, ser, check.Options{Checker: "sat"})
	if err != nil || res.Outcome != check.Undecided || res.Reason != "resource limit: memory: the check held 2000 MB, more than --memory-mb 1900" {
		t.Fatalf("a watchdog's cancel: %v, %s (%s)", err, res.Outcome, res.Reason)
	}
	ctx, cancel2 := context.WithCancel(context.Background())
	cancel2()
	res, err = check.Run(ctx, h, ser, check.Options{Checker: "sat"})
	if err != nil || res.Outcome != check.Undecided || res.Reason != "interrupted before a verdict" {
		t.Fatalf("interrupted: %v, %s (%s)", err, res.Outcome, res.Reason)
	}
}
