package online

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestAbortsDoNotHoldTheWindow: in a fenced list-append stream where a
// tenth of the transactions and a fifth of the fences abort (as on a
// database that refuses some at SERIALIZABLE), most transactions are
// forgotten at SER and SI, where fences settle them (at read committed
// the lists' orders alone do, and unseen appends are held). Before, an aborted transaction was never
// forgotten and its session order held every later transaction of its
// session, and an aborted fence stood for its session's next fence,
// whose position no read ever shows: of 30,000 transactions 25 were
// forgotten.
func TestAbortsDoNotHoldTheWindow(t *testing.T) {
	for _, l := range []level.ID{level.Serializable, level.SnapshotIsolation} {
		r := rand.New(rand.NewPCG(7, 35))
		g, _, err := gen.GenerateListAppend(gen.ListAppendConfig{Txns: 20000, Sessions: 8, ActiveKeys: 20, AppendsPerKey: 20,
			MaxOps: 4, ReadRatio: 0.5, AbortRatio: 0.1, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		h := withFences(r, g, 50, 0.2)
		res, err := stream(t, r, h, level.Get(l), true, 2048, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := disagree(h, level.Get(l), res); d != "" {
			t.Fatalf("%s: %s", level.Get(l).Name, d)
		}
		t.Logf("%s: %d of %d forgotten", level.Get(l).Name, res.Stats.Forgotten, res.Stats.Arrived)
		if st := res.Stats; st.Forgotten < st.Arrived/2 {
			t.Errorf("%s: %d of %d transactions forgotten, want half at least", level.Get(l).Name, st.Forgotten, st.Arrived)
		}
	}
}

// TestLateAbortedRead: a committed read of an element whose aborted
// appender was forgotten rounds before is an aborted read (G1a), as the
// offline checker says; the checker keeps the forgotten transaction's
// elements for that.
func TestLateAbortedRead(t *testing.T) {
	for _, l := range levels {
		r := rand.New(rand.NewPCG(8, 35))
		g, _, err := gen.GenerateListAppend(gen.ListAppendConfig{Txns: 6000, Sessions: 4, ActiveKeys: 10, AppendsPerKey: 20,
			MaxOps: 4, ReadRatio: 0.5, Seed: 8})
		if err != nil {
			t.Fatal(err)
		}
		h := withFences(r, g, 20, 0)
		k := h.Key(history.StringValue("late"))
		x := history.IntValue(1 << 50)
		ab := history.Txn{ID: history.IntValue(1 << 50), Session: 0, Status: history.Aborted,
			Ops: []history.Op{{Kind: history.Append, Key: k, Value: x}}}
		rd := history.Txn{ID: history.IntValue(1<<50 + 1), Session: 1,
			Ops: []history.Op{{Kind: history.ReadList, Key: k, List: []history.Value{x}}}}
		// The aborted append early in session 0, the read at the end of
		// session 1.
		txns := []history.Txn{}
		placed := false
		for _, tx := range h.Txns {
			if !placed && tx.Session == 0 {
				txns = append(txns, ab)
				placed = true
			}
			txns = append(txns, tx)
		}
		h.Txns = append(txns, rd)
		res, err := stream(t, r, h, level.Get(l), true, 512, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d := disagree(h, level.Get(l), res); d != "" {
			t.Fatalf("%s: %s", level.Get(l).Name, d)
		}
		if res.Outcome != check.Violated {
			t.Fatalf("%s: %s, want violated", level.Get(l).Name, res.Outcome)
		}
		found := false
		for _, f := range res.Findings {
			found = found || f.Anomaly.Kind == anomaly.AbortedRead
		}
		if !found || res.Stats.Forgotten == 0 {
			t.Errorf("%s: no aborted read among %d findings (%d forgotten)", level.Get(l).Name, len(res.Findings), res.Stats.Forgotten)
		}
	}
}
