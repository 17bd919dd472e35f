package knossos

import (
	"context"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestAnyValueNilReads: a read of nil after a completed write is a stale
// read as recorded, and consistent as Knossos's models take it (a read of
// any value); the parts of an independent history keep their
// transactions, renumbered, and a compare-and-set from nil stays.
func TestAnyValueNilReads(t *testing.T) {
	in := `[{:process 0, :type :invoke, :f :write, :value [1 5]}
 {:process 0, :type :ok, :f :write, :value [1 5]}
 {:process 1, :type :invoke, :f :read, :value [1 nil]}
 {:process 1, :type :ok, :f :read, :value [1 nil]}
 {:process 2, :type :invoke, :f :cas, :value [2 [nil 3]]}
 {:process 2, :type :ok, :f :cas, :value [2 [nil 3]]}
 {:process 3, :type :invoke, :f :read, :value [2 nil]}
 {:process 3, :type :ok, :f :read, :value [2 3]}
 {:process 1, :type :invoke, :f :read, :value [1 nil]}
 {:process 1, :type :ok, :f :read, :value [1 5]}]`
	sser := level.Get(level.StrictSerializable)
	verdicts := func(h *history.History) string {
		res, err := check.Run(context.Background(), h, sser, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range res.Parts {
			out = append(out, p.Key.String()+" "+p.Outcome.String())
		}
		return res.Outcome.String() + ": " + strings.Join(out, ", ")
	}
	h, err := Read(strings.NewReader(in), "nil.edn")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := verdicts(h), "violation: 1 violation, 2 satisfied"; got != want {
		t.Errorf("as recorded: %s, want %s", got, want)
	}
	if n := AnyValueNilReads(h); n != 1 || h.Skipped[SkippedNilRead] != 1 {
		t.Fatalf("left out %d reads (skipped %v), want 1", n, h.Skipped)
	}
	if got, want := history.Notation(h), "t1: s0: @1-2: w 1 5 | t3: s2: @5-6: r 2 _ w 2 3 | t4: s3: @7-8: r 2 3 | t5: s1: @9-10: r 1 5"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := verdicts(h), "satisfied: 1 satisfied, 2 satisfied"; got != want {
		t.Errorf("as Knossos reads nil: %s, want %s", got, want)
	}
	for i, p := range h.Parts {
		for _, tx := range p.Txns {
			if int(tx) >= len(h.Txns) || h.KeyName(h.Txns[tx].Ops[0].Key) != p.Key.String() {
				t.Errorf("part %d (key %s) holds transaction %d", i, p.Key, tx)
			}
		}
	}
}
