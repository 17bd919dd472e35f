package checktest

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// List-append histories with the database's start and commit timestamps.

// TimestampedLists builds a small random list-append history with random
// timestamps: appends of fresh elements and list reads over a few keys.
// Each list read returns, with probability honest, what the timestamps say
// (NaiveList), and otherwise that list with its last element dropped or
// another key's appended element added.
func TimestampedLists(r *rand.Rand, txns, keys, sessions int, honest float64, ser bool) *history.History {
	h, key := skeleton(sessions, keys)
	next := int64(1)
	for i := range txns {
		t := timestampedTxn(r, i, txns, sessions)
		for range 1 + r.IntN(4) {
			k := key[r.IntN(keys)]
			if r.IntN(2) == 0 {
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: k})
				continue
			}
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: k, Value: history.IntValue(next)})
			next++
		}
		h.Txns = append(h.Txns, t)
	}
	for i := range h.Txns {
		views := map[history.KeyID][]history.Value{}
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			v, touched := views[op.Key]
			if !touched {
				v = NaiveList(h, i, op.Key, ser)
			}
			if op.Kind == history.Append {
				views[op.Key] = append(slices.Clip(v), op.Value)
				continue
			}
			if r.Float64() >= honest {
				if len(v) > 0 && r.IntN(2) == 0 {
					v = v[:len(v)-1]
				} else {
					v = append(slices.Clip(v), history.IntValue(1+r.Int64N(next)))
				}
			}
			op.List = slices.Clone(v)
			views[op.Key] = op.List
		}
	}
	return h
}

// TimestampedListsAborts builds a small random list-append history with random
// timestamps (ties included) and some aborted transactions: appends of
// fresh elements and list reads over a few keys. A read returns, mostly,
// the appends of the committed transactions that committed before its
// snapshot in commit order followed by its own since; otherwise that list
// with its last element dropped, or with an element of any transaction
// added (an aborted one's, a later one's, its own later one's).
func TimestampedListsAborts(r *rand.Rand, txns, keys, sessions int, ser bool) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	for k := range keys {
		h.Key(history.IntValue(int64(k)))
	}
	next := int64(1)
	for i := range txns {
		t := timestampedTxn(r, i, txns, sessions)
		for range 1 + r.IntN(4) {
			k := history.KeyID(r.IntN(keys))
			switch r.IntN(5) {
			case 0, 1:
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: k})
			case 2:
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: k}) // a read of an absent list
			default:
				t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: k, Value: history.IntValue(next)})
				next++
			}
		}
		h.Txns = append(h.Txns, t)
	}
	snapOf := func(t *history.Txn) uint64 {
		if ser {
			return t.CommitTS
		}
		return t.StartTS
	}
	for i := range h.Txns {
		t := &h.Txns[i]
		views := map[history.KeyID][]history.Value{}
		for j := range t.Ops {
			op := &t.Ops[j]
			v, touched := views[op.Key]
			if !touched {
				var ws []*history.Txn
				for w := range h.Txns {
					if u := &h.Txns[w]; w != i && u.Status == history.Committed && u.CommitTS < snapOf(t) {
						ws = append(ws, u)
					}
				}
				slices.SortStableFunc(ws, func(a, b *history.Txn) int { return cmp.Compare(a.CommitTS, b.CommitTS) })
				for _, u := range ws {
					for _, o := range u.Ops {
						if o.Kind == history.Append && o.Key == op.Key {
							v = append(v, o.Value)
						}
					}
				}
			}
			switch op.Kind {
			case history.Append:
				views[op.Key] = append(slices.Clip(v), op.Value)
				continue
			case history.Read:
				continue
			}
			if r.IntN(4) == 0 {
				if len(v) > 0 && r.IntN(2) == 0 {
					v = v[:len(v)-1]
				} else {
					v = append(slices.Clip(v), history.IntValue(1+r.Int64N(next)))
				}
			}
			op.List = slices.Clone(v)
			if op.List == nil {
				op.List = []history.Value{}
			}
			views[op.Key] = op.List
		}
	}
	return h
}

// timestampedTxn draws transaction i of txns (id i+1) in a random one
// of sessions, with small random timestamps (so that ties occur), a
// commit at most five after its start, and one chance in ten of having
// aborted.
func timestampedTxn(r *rand.Rand, i, txns, sessions int) history.Txn {
	t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
	t.StartTS = uint64(r.IntN(3 * txns))
	t.CommitTS = t.StartTS + uint64(r.IntN(6))
	if r.IntN(10) == 0 {
		t.Status = history.Aborted
	}
	return t
}
