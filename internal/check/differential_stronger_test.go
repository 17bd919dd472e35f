package check_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// siStore builds a register history from a store that gives snapshot
// isolation, first committer wins: each transaction reads keys from a
// snapshot no older than its session's last commit, then writes fresh
// values to one or two, and aborts when another transaction committed a write of a key it
// writes since its snapshot. Write skews make many of them not
// serializable.
func siStore(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	h.Header.UniqueValues = true
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.StringValue(string(rune('x' + k))))
	}
	states := [][]history.Value{make([]history.Value, keys)} // committed states, oldest first
	lastWrite := make([]int, keys)                           // the state each key was last written in
	since := make([]int, sessions)                           // each session's last commit
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions))}
		snap := since[t.Session] + r.IntN(len(states)-since[t.Session])
		own := map[int]history.Value{}
		conflict := false
		for k := range keys { // read the keys, then write one or two
			if r.IntN(4) > 0 {
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k], Value: states[snap][k]})
			}
		}
		for range 1 + r.IntN(2) {
			k := r.IntN(keys)
			own[k] = history.IntValue(next)
			next++
			t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: own[k]})
			conflict = conflict || lastWrite[k] > snap
		}
		if conflict {
			t.Status = history.Aborted
		} else if len(own) > 0 {
			after := append([]history.Value(nil), states[len(states)-1]...)
			for k, v := range own {
				after[k] = v
				lastWrite[k] = len(states)
			}
			states = append(states, after)
			since[t.Session] = len(states) - 1
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// TestDifferentialStrongerFirst: cursor stability, PL-2+, PL-FCV and
// repeatable read are first checked at stronger levels (serializability,
// then snapshot isolation; serializability alone for repeatable read),
// which decide them when one holds. On stale-snapshot register histories
// (many satisfy the stronger levels, many violate them and still satisfy
// the weak one, many violate both) and on histories from a
// snapshot-isolation store (write skews: snapshot isolation holds where
// serializability does not), the automatic check agrees with the oracle,
// a verdict reached through a stronger level is one the oracle gives that
// level too, and every way of deciding is taken often.
func TestDifferentialStrongerFirst(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 300
	}
	weak := []level.ID{level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead}
	viaStronger, weakOnly, violations := 0, 0, 0
	at := map[level.ID]int{} // the stronger levels that decided
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 67))
		var h *history.History
		if seed%2 == 0 {
			h = staleRegisters(r, 2+r.IntN(5), 1+r.IntN(3), 1+r.IntN(3), int(seed%3))
		} else {
			h = siStore(r, 2+r.IntN(5), 1+r.IntN(3), 1+r.IntN(3))
		}
		for _, id := range weak {
			want, err := reference.Check(h, id)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{})
			if err != nil {
				t.Fatalf("seed %d %s: %v\n%s", seed, id, err, history.Notation(h))
			}
			if got := res.Outcome == check.Satisfied; got != want {
				t.Fatalf("seed %d %s (%s): satisfied=%v, oracle %v; %s\n%s", seed, id, res.Checker, got, want, kinds(res), history.Notation(h))
			}
			if !want {
				violations++
				continue
			}
			if res.CheckedAt == nil {
				weakOnly++
				continue
			}
			viaStronger++
			at[res.CheckedAt.ID]++
			if !res.CheckedAt.Implies(id) {
				t.Fatalf("seed %d %s: decided at %s, which does not imply it", seed, id, res.CheckedAt.Name)
			}
			strong, err := reference.Check(h, res.CheckedAt.ID)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			if !strong {
				t.Fatalf("seed %d %s: decided through %s, which the oracle refutes\n%s", seed, id, res.CheckedAt.Name, history.Notation(h))
			}
		}
	}
	total := n * len(weak)
	if viaStronger < total/10 || weakOnly < total/40 || violations < total/20 {
		t.Errorf("unbalanced generator: of %d verdicts %d decided at the stronger level, %d holding only at their own, %d violations", total, viaStronger, weakOnly, violations)
	}
	if at[level.Serializable] < total/20 || at[level.SnapshotIsolation] < total/100 {
		t.Errorf("the stronger levels decided %v: want both serializability and snapshot isolation often", at)
	}
	t.Logf("%d verdicts: %d decided at the stronger level (%v), %d holding only at their own, %d violations", total, viaStronger, at, weakOnly, violations)
}
