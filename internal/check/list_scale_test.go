package check_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// scaleLists returns a list-append history of txns transactions over keys
// keys, committed one after another, each reading the latest lists of
// some keys and appending to others, and ending with three appends to key
// 0 that no read sees (an open key). With skew, every other pair of
// transactions reads one snapshot and each appends to a key the other
// read: a write skew, which snapshot isolation allows and serializability
// does not.
func scaleLists(txns, keys int, skew bool) *history.History {
	r := rand.New(rand.NewPCG(uint64(txns), uint64(keys)))
	h := history.New()
	for s := range 8 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.IntValue(int64(k)))
	}
	lists := make([][]history.Value, keys)
	next := int64(0)
	add := func(ops []history.Op) {
		h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(len(h.Txns) + 1)), Session: int32(len(h.Txns) % 8), Ops: ops})
	}
	read := func(k int) history.Op {
		return history.Op{Kind: history.ReadList, Key: key[k], List: slices.Clone(lists[k])}
	}
	appendTo := func(k int) history.Op {
		next++
		return history.Op{Kind: history.Append, Key: key[k], Value: history.IntValue(next)}
	}
	for len(h.Txns) < txns {
		if skew && r.IntN(2) == 0 {
			a, b := r.IntN(keys), r.IntN(keys)
			if a == b {
				b = (a + 1) % keys
			}
			ra, rb := read(a), read(b)
			wa, wb := appendTo(b), appendTo(a)
			add([]history.Op{ra, wa})
			add([]history.Op{rb, wb})
			lists[b] = append(lists[b], wa.Value)
			lists[a] = append(lists[a], wb.Value)
			continue
		}
		var ops []history.Op
		for range 1 + r.IntN(3) {
			ops = append(ops, read(r.IntN(keys)))
		}
		for range 1 + r.IntN(2) {
			k := r.IntN(keys)
			op := appendTo(k)
			ops = append(ops, op)
			lists[k] = append(lists[k], op.Value)
		}
		add(ops)
	}
	for range 3 {
		add([]history.Op{appendTo(0)})
	}
	return h
}

// TestListLevelsAtScale: on list-append histories of 5,000 transactions
// over 10 keys (hundreds of appenders a key, whose pairs the solver's
// encoding cannot hold in 64 MB), every level below serializability is
// decided on the lists' graph — PL-2+ directly, the others through the
// stronger level they follow from — within the bound and quickly; the
// history with write skews violates serializability and nothing that
// snapshot isolation implies.
func TestListLevelsAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("two 5,000-transaction histories at seven levels: not in short mode")
	}
	for _, skew := range []bool{false, true} {
		h := scaleLists(5000, 10, skew)
		for _, id := range []level.ID{level.PL2Plus, level.PLFCV, level.CursorStability, level.ReadAtomic, level.Causal, level.Prefix, level.Serializable} {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			start := time.Now()
			res, err := check.Run(ctx, h, level.Get(id), check.Options{Checker: "list-append", MemoryLimit: 64 << 20})
			cancel()
			t.Logf("skew %v, %s: %v in %v", skew, level.Get(id).Name, res.Outcome, time.Since(start))
			if err != nil {
				t.Fatalf("skew %v, %s: %v", skew, level.Get(id).Name, err)
			}
			want := check.Satisfied
			if skew && id == level.Serializable {
				want = check.Violated
			}
			if res.Outcome != want {
				t.Errorf("skew %v, %s: %v (%s), want %v", skew, level.Get(id).Name, res.Outcome, res.Reason, want)
			}
		}
	}
}
