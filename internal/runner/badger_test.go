package runner

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestBadgerTimestamps runs every workload on Badger and checks the
// recorded timestamps against what the transactions saw: every committed
// transaction has both, an aborted one neither; a transaction that wrote
// commits after it starts, one that did not commits at its start; each
// session's timestamps increase; no two transactions share one; and
// every read, list read, scan and iterator returns exactly the state that
// the committed transactions with a commit timestamp below the reader's
// start timestamp left, applied in commit-timestamp order, followed by the
// reader's own earlier writes.
func TestBadgerTimestamps(t *testing.T) {
	for _, w := range workload.Workloads() {
		t.Run(w.String(), func(t *testing.T) {
			pc := workload.PlanConfig{Workload: w, Sessions: 6, Txns: 300, Keys: 30, Dist: workload.Zipfian}
			d := testservice.Open(t, db.BadgerMemory)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, h := runRecorded(t, ctx, Config{DB: d, Isolation: db.Serializable, Plan: newPlan(t, pc, 7)})
			if s := res.Summary; s.Done != s.Planned || len(s.Errors) > 0 || s.Committed < s.Planned/2 {
				t.Fatalf("run: %+v", s)
			}
			checkTimestamps(t, h)
			replayTimestamps(t, h)
		})
	}
}

// checkTimestamps checks the timestamps' shape: presence, start ≤ commit
// (equal exactly for transactions that wrote nothing), increasing per
// session, and no timestamp shared between transactions.
func checkTimestamps(t *testing.T, h *history.History) {
	t.Helper()
	owner := map[uint64]int{}
	for i := range h.Txns {
		tx := &h.Txns[i]
		if tx.Status != history.Committed {
			if tx.HasStartTS || tx.HasCommitTS {
				t.Fatalf("%s transaction %s has timestamps", tx.Status, tx.ID)
			}
			continue
		}
		if !tx.HasStartTS || !tx.HasCommitTS {
			t.Fatalf("committed transaction %s has no timestamps", tx.ID)
		}
		wrote := slices.ContainsFunc(tx.Ops, func(op history.Op) bool { return op.Kind.IsWrite() })
		if tx.StartTS > tx.CommitTS || (tx.StartTS < tx.CommitTS) != wrote {
			t.Fatalf("transaction %s (wrote: %v): start_ts %d, commit_ts %d", tx.ID, wrote, tx.StartTS, tx.CommitTS)
		}
		for _, ts := range []uint64{tx.StartTS, tx.CommitTS} {
			if j, ok := owner[ts]; ok && j != i {
				t.Fatalf("transactions %s and %s share timestamp %d", h.Txns[j].ID, tx.ID, ts)
			}
			owner[ts] = i
		}
	}
	for s, txns := range h.SessionOrder() {
		var last uint64
		for _, id := range txns {
			tx := &h.Txns[id]
			if tx.Status != history.Committed {
				continue
			}
			if tx.StartTS <= last {
				t.Fatalf("session %s: transaction %s starts at %d, not after the previous commit at %d", h.Sessions[s], tx.ID, tx.StartTS, last)
			}
			last = tx.CommitTS
		}
	}
}

// state is a key-value store's contents: values and lists by key.
type state struct {
	values map[history.KeyID]history.Value
	lists  map[history.KeyID][]history.Value
}

func (s state) clone() state {
	c := state{values: make(map[history.KeyID]history.Value, len(s.values)), lists: make(map[history.KeyID][]history.Value, len(s.lists))}
	for k, v := range s.values {
		c.values[k] = v
	}
	for k, l := range s.lists {
		c.lists[k] = slices.Clone(l)
	}
	return c
}

// apply applies op's writes to s.
func (s state) apply(op history.Op) {
	switch op.Kind {
	case history.Write:
		s.values[op.Key] = op.Value
	case history.Delete:
		delete(s.values, op.Key)
	case history.Append:
		s.lists[op.Key] = append(s.lists[op.Key], op.Value)
	}
}

// replayTimestamps replays the committed transactions in timestamp order
// and checks every observation against the state at the reader's start.
func replayTimestamps(t *testing.T, h *history.History) {
	t.Helper()
	type event struct {
		ts     uint64
		commit bool
		txn    int
	}
	var events []event
	for i := range h.Txns {
		if tx := &h.Txns[i]; tx.Status == history.Committed {
			events = append(events, event{tx.StartTS, false, i}, event{tx.CommitTS, true, i})
		}
	}
	// At one timestamp (a read-only transaction), its start comes first.
	slices.SortFunc(events, func(a, b event) int {
		if a.ts != b.ts {
			return cmp.Compare(a.ts, b.ts)
		}
		if a.commit == b.commit {
			return 0
		}
		if a.commit {
			return 1
		}
		return -1
	})
	db := state{values: map[history.KeyID]history.Value{}, lists: map[history.KeyID][]history.Value{}}
	observed := 0
	for _, e := range events {
		tx := &h.Txns[e.txn]
		if e.commit {
			for _, op := range tx.Ops {
				db.apply(op)
			}
			continue
		}
		own := db.clone()
		for j, op := range tx.Ops {
			where := fmt.Sprintf("transaction %s (start_ts %d) op %d", tx.ID, tx.StartTS, j)
			switch op.Kind {
			case history.Read:
				want, ok := own.values[op.Key]
				if !ok {
					want = history.NullValue
				}
				if op.Value != want {
					t.Fatalf("%s: read key %s = %s, the state at its start holds %s", where, h.KeyName(op.Key), op.Value, want)
				}
				observed++
			case history.ReadList:
				if want := own.lists[op.Key]; !slices.Equal(op.List, want) {
					t.Fatalf("%s: read list %s = %v, the state at its start holds %v", where, h.KeyName(op.Key), op.List, want)
				}
				observed++
			case history.Scan, history.Iter:
				var want []history.KV
				for k, v := range own.values {
					if n := h.Keys[k].N; n >= op.Range.Lo.N && (op.Range.HiOpen || n < op.Range.Hi.N) {
						want = append(want, history.KV{Key: k, Value: v})
					}
				}
				slices.SortFunc(want, func(a, b history.KV) int { return cmp.Compare(h.Keys[a.Key].N, h.Keys[b.Key].N) })
				if op.Kind == history.Iter && len(op.Range.Pairs) <= len(want) {
					want = want[:len(op.Range.Pairs)]
				}
				if !slices.Equal(op.Range.Pairs, want) {
					t.Fatalf("%s: %s [%s, %s) = %v, the state at its start holds %v", where, op.Kind, op.Range.Lo, op.Range.Hi, op.Range.Pairs, want)
				}
				observed++
			default:
				own.apply(op)
			}
		}
	}
	if observed == 0 {
		t.Fatal("no observation to check")
	}
}

// TestBadgerLevels checks what Badger is, on the workloads that show it:
// serializable and snapshot isolation on read-modify-writes; not
// serializable once range scans miss a concurrent insert (a phantom:
// Badger validates the keys an iterator returned, not the range).
func TestBadgerLevels(t *testing.T) {
	cases := []struct {
		pc      workload.PlanConfig
		holds   []string
		violate string // a level violated within 5 runs
	}{
		{workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 8, Txns: 600, Keys: 10, Dist: workload.Zipfian}, []string{"sser", "ser", "si"}, ""},
		{workload.PlanConfig{Workload: workload.ListAppend, Sessions: 8, Txns: 400, Keys: 10, Dist: workload.Zipfian}, []string{"ser", "si"}, ""},
		{workload.PlanConfig{Workload: workload.Range, Sessions: 8, Txns: 400, Keys: 20, Dist: workload.Zipfian}, nil, "ser"},
	}
	for _, c := range cases {
		t.Run(c.pc.Workload.String(), func(t *testing.T) {
			found := false
			for run := uint64(1); run <= 5 && !found; run++ {
				d := testservice.Open(t, db.BadgerMemory)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, h := runRecorded(t, ctx, Config{DB: d, Isolation: db.Serializable, Plan: newPlan(t, c.pc, run)})
				cancel()
				if s := res.Summary; s.Done != s.Planned || len(s.Errors) > 0 {
					t.Fatalf("run %d: %+v", run, s)
				}
				for _, l := range c.holds {
					if r := verdict(t, h, l); r.Outcome != check.Satisfied {
						t.Fatalf("run %d: %s %s (checker %s): %v", run, l, r.Outcome, r.Checker, r.Anomalies)
					}
				}
				if c.violate != "" {
					found = verdict(t, h, c.violate).Outcome == check.Violated
				}
			}
			if c.violate != "" && !found {
				t.Errorf("%s held in 5 runs", c.violate)
			}
		})
	}
}
