// Package checktest holds the random histories the checkers' differential
// tests share, each shaped to provoke one kind of checker, and the naive
// timestamp oracle the timestamp checkers' tests are held to.
package checktest

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
)

// skeleton returns an empty history with sessions 0..sessions-1 and keys
// 0..keys-1, and the keys' ids.
func skeleton(sessions, keys int) (*history.History, []history.KeyID) {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.IntValue(int64(k)))
	}
	return h, key
}

// EveryShape makes transactions of every shape a piece carries: integer
// and string ids, keys and values, nulls, deletes, appends, list reads,
// locking reads, aborted and unknown ones without timestamps.
func EveryShape(r *rand.Rand, n int, stringKeys bool) *history.History {
	h := history.New()
	value := func() history.Value {
		switch r.IntN(4) {
		case 0:
			return history.NullValue
		case 1:
			return history.StringValue(strings.Repeat("v\"é", r.IntN(3)))
		}
		return history.IntValue(r.Int64N(1<<40) - 1<<39)
	}
	for i := range 3 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(i)))
	}
	h.Sessions = append(h.Sessions, history.StringValue("s x"))
	for i := range n {
		t := history.Txn{ID: history.IntValue(int64(i)), Session: int32(r.IntN(len(h.Sessions))), StartTS: r.Uint64N(1 << 50), HasStartTS: true, HasCommitTS: true}
		if r.IntN(5) == 0 {
			t.ID = history.StringValue("t \"" + strconv.Itoa(i))
		}
		t.CommitTS = t.StartTS + r.Uint64N(100)
		switch r.IntN(8) {
		case 0:
			t.Status, t.HasStartTS, t.HasCommitTS = history.Aborted, r.IntN(2) == 0, false
		case 1:
			t.Status, t.HasCommitTS = history.Unknown, false
		}
		for range 1 + r.IntN(8) {
			// Keys below 25 hold values, the others lists (a reader of
			// JSON tells a read of a list by the key's other operations).
			k := r.IntN(50)
			key := history.IntValue(int64(k))
			if stringKeys {
				key = history.StringValue("k" + strconv.Itoa(k))
			}
			kinds := []history.OpKind{history.Read, history.Write, history.Delete}
			if k >= 25 {
				kinds = []history.OpKind{history.Append, history.ReadList}
			}
			o := history.Op{Key: h.Key(key), Kind: kinds[r.IntN(len(kinds))]}
			switch o.Kind {
			case history.Delete:
			case history.ReadList:
				for range r.IntN(3) {
					o.List = append(o.List, value())
				}
			default:
				o.Value = value()
			}
			o.Lock = o.Kind == history.Read && r.IntN(4) == 0
			t.Ops = append(t.Ops, o)
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}
