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

// largeTxns builds a history of a few transactions of 33 to 56
// operations each on a handful of keys (past the size at which the
// shared checks and the solver's construction look a transaction's
// earlier reads and writes up in maps instead of scanning): reads and
// writes in any order, each read seeing the transaction's own last write
// of the key or the committed state of its snapshot — now and then of
// another snapshot, a non-repeatable read, or a value nobody wrote —
// writes of fresh values and now and then of a value the key had
// already (repeated values), some transactions aborted or unknown.
func largeTxns(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.IntValue(int64(k)))
	}
	states := [][]history.Value{make([]history.Value, keys)}
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions))}
		snap := len(states) - 1
		if r.IntN(3) == 0 {
			snap = r.IntN(len(states))
		}
		own := map[int]history.Value{}
		n := 33 + r.IntN(24)
		odd := -1 // the operation that, if a read, reads oddly
		if r.IntN(5) == 0 {
			odd = r.IntN(n)
		}
		for j := range n {
			k := r.IntN(keys)
			if r.IntN(2) == 0 {
				v, mine := own[k]
				switch {
				case j == odd && r.IntN(4) == 0:
					v = history.IntValue(999) // nobody wrote it
				case j == odd:
					v = states[r.IntN(len(states))][k]
				case !mine:
					v = states[snap][k]
				}
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k], Value: v})
				continue
			}
			v := history.IntValue(next)
			next++
			if r.IntN(10) == 0 && next > 2 {
				v = history.IntValue(1 + r.Int64N(next-1))
			}
			own[k] = v
			t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: v})
		}
		states = settle(r, &t, snap, states, own, 10)
		h.Txns = append(h.Txns, t)
	}
	return h
}

// TestDifferentialLargeTxns: the automatic choice and the solver agree
// with the oracle on histories of a few large transactions, at every
// level of the other differential tests and at cursor stability.
func TestDifferentialLargeTxns(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 100
	}
	levels := append([]level.ID{level.CursorStability}, differentialLevels...)
	violations, verdicts := 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 61))
		h := largeTxns(r, 2+r.IntN(3), 1+r.IntN(4), 1+r.IntN(2))
		for _, id := range levels {
			want, err := reference.Check(h, id)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			verdicts++
			if !want {
				violations++
			}
			for _, name := range []string{"auto", "sat"} {
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
				if err != nil {
					t.Fatalf("seed %d %s (%s): %v\n%s", seed, id, name, err, history.Notation(h))
				}
				if got := res.Outcome == check.Satisfied; got != want {
					t.Fatalf("seed %d %s (%s): satisfied=%v, oracle %v; %s\n%s", seed, id, res.Checker, got, want, kinds(res), history.Notation(h))
				}
			}
		}
	}
	if violations < verdicts/10 || violations > verdicts*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violations, verdicts)
	}
	t.Logf("%d histories, %d oracle verdicts (%d violations)", n, verdicts, violations)
}
