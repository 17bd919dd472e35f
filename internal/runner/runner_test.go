package runner

import (
	"context"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestSQLiteWorkloads runs every workload on the embedded database, which
// is serial: whatever checker decides the history must find it
// serializable (strictly, where real time is checked).
func TestSQLiteWorkloads(t *testing.T) {
	for _, c := range []struct {
		w      workload.Workload
		levels []string
	}{
		{workload.MiniTxn, []string{"ser", "si", "sser"}},
		{workload.General, []string{"ser"}},
		{workload.ListAppend, []string{"ser", "sser"}},
		{workload.LWT, []string{"sser", "ser"}},
		{workload.Range, nil},
	} {
		t.Run(c.w.String(), func(t *testing.T) {
			p := newPlan(t, workload.PlanConfig{Workload: c.w, Sessions: 6, Txns: 600, Keys: 12, Dist: workload.Zipfian}, 1)
			res, h := runRecorded(t, context.Background(), Config{DB: sqlite(t), Isolation: db.Serializable, Plan: p, Source: "test"})
			s := res.Summary
			if s.Done != 600 || s.Committed < 600 || s.Unknown != 0 || len(s.Errors) != 0 || s.Interrupted {
				t.Fatalf("summary %+v", s)
			}
			if got := len(h.Txns); got != s.Committed+s.Aborted {
				t.Errorf("%d transactions recorded, %d run", got, s.Committed+s.Aborted)
			}
			checkOutcomes(t, res, h)
			for _, name := range c.levels {
				if r := verdict(t, h, name); r.Outcome != check.Satisfied {
					t.Errorf("%s: %s on SQLite (checker %s): %v", name, r.Outcome, r.Checker, r.Anomalies)
				}
			}
		})
	}
}

// TestSerialReplay runs the workloads with deletes, scans and iterators
// (range and Boomslang's) in one session, where the order of transactions
// is known, and replays them: every point read, scan and iterator must
// return what the writes and deletes before it left, and a delete traced
// as a locking read of null must have found its key absent.
func TestSerialReplay(t *testing.T) {
	for _, w := range []workload.Workload{workload.Range, workload.RandomBench, workload.RandomRange, workload.RandomRMWRange, workload.BlindW} {
		t.Run(w.String(), func(t *testing.T) {
			p := newPlan(t, workload.PlanConfig{Workload: w, Sessions: 1, Txns: 400, Keys: 20, Dist: workload.Uniform}, 2)
			_, h := runRecorded(t, context.Background(), Config{DB: sqlite(t), Isolation: db.Serializable, Plan: p})
			seen := replay(t, h)
			switch w {
			case workload.RandomBench, workload.Range:
				if seen[history.Scan] == 0 || seen[history.Iter] == 0 || seen[history.Delete] == 0 || seen[numKinds] == 0 {
					t.Errorf("%v scans, iterators, deletes and deletes of absent keys: the workload should have all four", seen)
				}
			case workload.RandomRange:
				if seen[history.Scan] == 0 || seen[history.Iter] != 0 || seen[history.Delete] == 0 {
					t.Errorf("%v scans, iterators and deletes: the workload should have scans and deletes, no iterators", seen)
				}
			case workload.RandomRMWRange:
				if seen[history.Scan] == 0 || seen[history.Iter]+seen[history.Delete]+seen[numKinds] != 0 {
					t.Errorf("%v scans, iterators and deletes: the workload should have scans only", seen)
				}
			}
		})
	}
}

// numKinds indexes, in replay's counts, deletes traced as locking reads.
const numKinds = history.Iter + 1

// replay replays a history of one session against a map and returns how
// many operations of each kind it saw (deletes of absent keys at
// numKinds).
func replay(t *testing.T, h *history.History) map[history.OpKind]int {
	t.Helper()
	state := map[int64]int64{}
	seen := map[history.OpKind]int{}
	for i := range h.Txns {
		tx := &h.Txns[i]
		if tx.Status != history.Committed {
			t.Fatalf("transaction %s %s in a single session", tx.ID, tx.Status)
		}
		for _, op := range tx.Ops {
			seen[op.Kind]++
			switch op.Kind {
			case history.Write:
				state[h.Keys[op.Key].N] = op.Value.N
			case history.Delete:
				k := h.Keys[op.Key].N
				if _, ok := state[k]; !ok {
					t.Fatalf("transaction %s deleted %d, which was absent", tx.ID, k)
				}
				delete(state, k)
			case history.Read:
				if op.Lock {
					seen[numKinds]++
				}
				v, ok := state[h.Keys[op.Key].N]
				if got := op.Value; got.IsNull() == ok || (ok && got.N != v) {
					t.Fatalf("transaction %s read %s=%s, state has %d (present %v)", tx.ID, h.KeyName(op.Key), got, v, ok)
				}
			case history.Scan, history.Iter:
				lo, hi := op.Range.Lo.N, op.Range.Hi.N
				var want []history.KV
				for k := lo; k < hi; k++ {
					if v, ok := state[k]; ok {
						want = append(want, history.KV{Key: history.KeyID(k), Value: history.IntValue(v)})
					}
				}
				if op.Kind == history.Iter {
					want = want[:min(len(want), len(op.Range.Pairs))]
				}
				if len(want) != len(op.Range.Pairs) {
					t.Fatalf("transaction %s: %s [%d, %d) returned %d pairs, want %d", tx.ID, op.Kind, lo, hi, len(op.Range.Pairs), len(want))
				}
				for j, kv := range op.Range.Pairs {
					if h.Keys[kv.Key].N != int64(want[j].Key) || kv.Value != want[j].Value {
						t.Fatalf("transaction %s: %s pair %d is %s=%s, want %d=%s", tx.ID, op.Kind, j, h.KeyName(kv.Key), kv.Value, want[j].Key, want[j].Value)
					}
				}
			}
		}
	}
	return seen
}

// TestNoTrace runs without recording: the same work, no history.
func TestNoTrace(t *testing.T) {
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 4, Txns: 400, Keys: 10}, 3)
	var prog Progress
	res, err := Run(context.Background(), Config{DB: sqlite(t), Isolation: db.Serializable, Plan: p, NoTrace: true, Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if res.History != nil || res.Summary.Committed < 400 || prog.Done.Load() != 400 || prog.Committed.Load() != int64(res.Summary.Committed) {
		t.Errorf("history %v, summary %+v, progress done %d", res.History != nil, res.Summary, prog.Done.Load())
	}
	if res.Summary.Throughput() <= 0 {
		t.Error("no throughput")
	}
	if len(res.Outcomes) != res.Summary.Committed+res.Summary.Aborted || res.Start == 0 {
		t.Errorf("%d outcomes untraced, start %d", len(res.Outcomes), res.Start)
	}
}

// TestRejects checks what Run refuses before it starts.
func TestRejects(t *testing.T) {
	p := newPlan(t, workload.PlanConfig{Workload: workload.MiniTxn, Sessions: 1, Txns: 1, Keys: 1}, 1)
	if _, err := Run(context.Background(), Config{DB: sqlite(t), Isolation: db.RepeatableRead, Plan: p}); err == nil {
		t.Error("SQLite ran at repeatable read")
	}
	if _, err := Run(context.Background(), Config{Plan: p}); err == nil {
		t.Error("ran without a database")
	}
}
