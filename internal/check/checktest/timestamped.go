package checktest

import (
	"math/rand/v2"

	"github.com/isoscope/isoscope/internal/history"
)

// Key-value histories with the database's start and commit timestamps, for
// the timestamp checkers.

// Timestamped builds a small random key-value history with random timestamps
// (small, so that ties occur): reads, writes of fresh values and deletes
// over a few keys, some transactions aborted, some with commit_ts below
// start_ts. Each read returns, with probability honest, what the
// timestamps say it must (NaiveSnapshot under ser or SI), and otherwise the
// initial value or any written one.
func Timestamped(r *rand.Rand, txns, keys, sessions int, honest float64, ser bool) *history.History {
	h, key := skeleton(sessions, keys)
	h.Header.Initial.Values = map[history.KeyID]history.Value{}
	for _, k := range key {
		h.Header.Initial.Values[k] = history.IntValue(0)
	}
	next := int64(1)
	var written [][]history.Value = make([][]history.Value, keys)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		t.StartTS = uint64(r.IntN(3 * txns))
		t.CommitTS = t.StartTS + uint64(r.IntN(6))
		if r.IntN(12) == 0 {
			t.CommitTS = uint64(r.IntN(int(t.StartTS) + 1)) // maybe below the start
		}
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			switch x := r.IntN(10); {
			case x < 5:
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k]})
			case x < 9:
				v := history.IntValue(next)
				next++
				written[k] = append(written[k], v)
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: v})
			default:
				t.Ops = append(t.Ops, history.Op{Kind: history.Delete, Key: key[k]})
			}
		}
		h.Txns = append(h.Txns, t)
	}
	// Fill in the reads, transaction by transaction in file order: a
	// read's honest value depends only on writes, which are fixed.
	for i := range h.Txns {
		own := map[history.KeyID]history.Value{}
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			switch op.Kind {
			case history.Write:
				own[op.Key] = op.Value
			case history.Delete:
				own[op.Key] = history.NullValue
			case history.Read:
				v, mine := own[op.Key]
				if !mine {
					v = NaiveSnapshot(h, history.TxnID(i), op.Key, ser)
				}
				if r.Float64() >= honest {
					k := int(op.Key)
					if n := len(written[k]); n > 0 && r.IntN(4) > 0 {
						v = written[k][r.IntN(n)]
					} else {
						v = history.IntValue(0)
					}
				}
				op.Value = v
				own[op.Key] = v
			}
		}
	}
	return h
}

// CommittedTimestamped builds a small committed history with random timestamps
// (small, so that ties occur, and some commit_ts below start_ts), reads
// returning the initial value or some transaction's final write, each
// transaction writing a key at most once and reading a key before any
// write of it, so that only the timestamp axioms are at stake.
func CommittedTimestamped(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	h.Header.Initial.Values = map[history.KeyID]history.Value{}
	for k := range keys {
		h.Header.Initial.Values[h.Key(history.IntValue(int64(k)))] = history.IntValue(0)
	}
	var written [][]history.Value = make([][]history.Value, keys)
	next := int64(1)
	for i := range txns {
		tx := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		tx.StartTS = uint64(r.IntN(3 * txns))
		tx.CommitTS = tx.StartTS + uint64(r.IntN(6))
		if r.IntN(15) == 0 {
			tx.CommitTS = uint64(r.IntN(int(tx.StartTS) + 1))
		}
		used := map[int]bool{}
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			if used[k] {
				continue
			}
			used[k] = true
			switch x := r.IntN(12); {
			case x >= 10:
				// Two writes of the key: the first is intermediate.
				for range 2 {
					v := history.IntValue(next)
					next++
					tx.Ops = append(tx.Ops, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: v})
					written[k] = append(written[k], v)
				}
			case x < 5:
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Read, Key: history.KeyID(k)})
			case x < 7:
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Read, Key: history.KeyID(k)})
				v := history.IntValue(next)
				next++
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: v})
				written[k] = append(written[k], v)
			default:
				v := history.IntValue(next)
				next++
				tx.Ops = append(tx.Ops, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: v})
				written[k] = append(written[k], v)
			}
		}
		if r.IntN(12) == 0 {
			tx.Status = history.Aborted
		}
		h.Txns = append(h.Txns, tx)
	}
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			o := &h.Txns[i].Ops[j]
			if o.Kind != history.Read {
				continue
			}
			own := false
			if j+1 < len(h.Txns[i].Ops) {
				own = h.Txns[i].Ops[j+1].Key == o.Key
			}
			ws := written[o.Key]
			o.Value = history.IntValue(0)
			if n := r.IntN(len(ws) + 1); n < len(ws) && !(own && h.Txns[i].Ops[j+1].Value == ws[n] && r.IntN(8) != 0) {
				o.Value = ws[n]
			}
		}
	}
	h.Header.UniqueValues = true
	return h
}
