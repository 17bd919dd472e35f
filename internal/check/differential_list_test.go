package check_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// staleLists simulates a list store whose transactions often read an old
// snapshot and append on top of whatever is committed when they commit —
// the shape of a lost update — and records a small list-append history:
// txns transactions (in commit order) over keys keys in sessions sessions.
// Each transaction reads one snapshot (the latest, or with probability
// 1/2 an older one; now and then each read takes its own, as at read
// committed), reads and appends fresh elements (a read returns the
// snapshot's list followed by the transaction's own appends), and commits
// (its appends go at the end of the current lists), aborts (nothing is
// installed) or ends unknown (installed or not). Instants follow the
// snapshot and commit times loosely, so real time is sometimes violated.
func staleLists(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.StringValue(string(rune('x' + k))))
	}
	states := [][][]history.Value{make([][]history.Value, keys)} // committed states, oldest first
	next := make([]int64, keys)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasTime: true}
		snapshot := func() int {
			if r.IntN(2) == 0 {
				return len(states) - 1
			}
			return r.IntN(len(states))
		}
		snap := snapshot()
		perRead := r.IntN(8) == 0
		own := make([][]history.Value, keys)
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			if r.IntN(2) == 0 {
				s := snap
				if perRead {
					s = snapshot()
				}
				list := append(slices.Clone(states[s][k]), own[k]...)
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: key[k], List: list})
				continue
			}
			next[k]++
			e := history.IntValue(next[k])
			own[k] = append(own[k], e)
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: key[k], Value: e})
		}
		t.Begin = int64(2*snap + r.IntN(3))
		t.End = int64(2*len(states) + r.IntN(2))
		t.End = max(t.End, t.Begin)
		installed := true
		switch r.IntN(12) {
		case 0:
			t.Status, installed = history.Aborted, false
		case 1:
			t.Status, installed = history.Unknown, r.IntN(2) == 0
		}
		if installed {
			cur := states[len(states)-1]
			after := make([][]history.Value, keys)
			for k := range keys {
				after[k] = append(slices.Clip(cur[k]), own[k]...)
			}
			states = append(states, after)
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// listLevels are the levels the list-append checker decides.
var listLevels = []level.ID{level.ReadCommitted, level.SnapshotIsolation, level.Serializable, level.StrictSerializable,
	level.GSI, level.PlainSerializable, level.RCSession, level.ReadAtomic, level.Causal, level.Prefix,
	level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead}

// TestDifferentialListAppend: on thousands of small list-append histories
// from a store with stale snapshots, the list-append checker (named, and
// chosen by auto) agrees with the brute-force oracle at RC, SI, SER and
// SSER (with session order and without) and at the axiomatic levels
// (rc-session, read atomic, causal, prefix: the oracle applies the lists'
// appends in commit order), and every cycle it reports connects.
func TestDifferentialListAppend(t *testing.T) {
	n := differentialRuns
	if testing.Short() {
		n = 500
	}
	violations, verdicts, mismatches, other := 0, 0, 0, 0
	perLevel := map[level.ID]int{}
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 53))
		h := staleLists(r, 2+r.IntN(5), 1+r.IntN(3), 1+r.IntN(3))
		for _, id := range listLevels {
			want, err := reference.Check(h, id)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			if !want {
				violations++
				perLevel[id]++
			}
			for _, name := range []string{"list-append", "auto"} {
				verdicts++
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
				if err != nil {
					t.Fatalf("seed %d %s (%s): %v\n%s", seed, id, name, err, history.Notation(h))
				}
				if res.Checker != "list-append" {
					// Chronos decides, vacuously, histories in which no
					// transaction took effect.
					other++
				}
				if got := res.Outcome == check.Satisfied; got != want {
					mismatches++
					if mismatches <= 5 {
						t.Errorf("seed %d %s (%s): satisfied=%v, oracle %v; %s\n%s", seed, id, name, got, want, kinds(res), history.Notation(h))
					}
				}
				cyclesConnect(t, res)
			}
		}
	}
	if mismatches > 0 {
		t.Errorf("%d of %d verdicts disagree with the oracle", mismatches, verdicts)
	}
	if other > verdicts/100 {
		t.Errorf("auto chose another checker than list-append for %d of %d verdicts", other, verdicts)
	}
	// Guard against a generator that only makes trivial cases.
	if total := n * len(listLevels); violations < total/10 || violations > total*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violations, total)
	}
	for _, id := range listLevels {
		if id == level.ReadCommitted {
			continue // a store of snapshots never reads an aborted or intermediate state, nor closes a cycle of writes and reads
		}
		if v := perLevel[id]; v < n/100 || v > n*99/100 {
			t.Errorf("unbalanced generator at %v: %d violations in %d histories", id, v, n)
		}
	}
	t.Logf("%d histories, %d verdicts compared, %d oracle violations (per level: %v)", n, verdicts, violations, perLevel)
}
