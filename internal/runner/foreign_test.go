package runner

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestForeignReadsByConstruction builds random histories whose reads —
// point reads, list reads and range results — return either values the
// history's transactions (committed, aborted or unknown) wrote or
// appended, the initial state's, nulls, or values from outside (negative:
// none is ever written), and counts the outside ones as it builds them:
// ForeignReads finds exactly those, in the transactions that made them,
// and names the first.
func TestForeignReadsByConstruction(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		h := history.New()
		keys := make([]history.KeyID, 1+r.IntN(6))
		for i := range keys {
			keys[i] = h.Key(history.IntValue(int64(i)))
		}
		type kv struct {
			k history.KeyID
			v history.Value
		}
		var written []kv
		h.Header.Initial.Values = map[history.KeyID]history.Value{}
		if r.IntN(2) == 0 {
			h.Header.Initial.Values[keys[0]] = history.IntValue(1_000_000)
			written = append(written, kv{keys[0], history.IntValue(1_000_000)})
		}
		next := int64(1)
		// The writes come first in file order, so that every read below
		// may name any of them.
		n := 1 + r.IntN(10)
		for i := range n {
			k := keys[r.IntN(len(keys))]
			op := history.Op{Kind: history.Write, Key: k, Value: history.IntValue(next)}
			if r.IntN(3) == 0 {
				op.Kind = history.Append
			}
			next++
			written = append(written, kv{k, op.Value})
			h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(i + 1)), Status: history.Status(r.IntN(3)), Ops: []history.Op{op}})
		}
		wantReads, wantTxns, first := 0, 0, ""
		value := func(k history.KeyID, txn history.Value) history.Value {
			switch r.IntN(4) {
			case 0:
				wantReads++
				v := history.IntValue(-1 - r.Int64N(5))
				if first == "" {
					first = "transaction " + txn.String() + " read key " + h.KeyName(k) + " = " + v.String()
				}
				return v
			case 1:
				return history.NullValue
			}
			var own []history.Value
			for _, w := range written {
				if w.k == k {
					own = append(own, w.v)
				}
			}
			if len(own) == 0 {
				return history.NullValue
			}
			return own[r.IntN(len(own))]
		}
		for i := range 1 + r.IntN(10) {
			id := history.IntValue(int64(n + i + 1))
			before := wantReads
			var ops []history.Op
			for range 1 + r.IntN(4) {
				k := keys[r.IntN(len(keys))]
				switch r.IntN(3) {
				case 0:
					ops = append(ops, history.Op{Kind: history.Read, Key: k, Value: value(k, id)})
				case 1:
					op := history.Op{Kind: history.ReadList, Key: k}
					for range r.IntN(3) {
						if v := value(k, id); !v.IsNull() {
							op.List = append(op.List, v)
						}
					}
					ops = append(ops, op)
				default:
					op := history.Op{Kind: history.Scan, Key: history.NoKey, Range: &history.Range{}}
					for _, k := range keys {
						if r.IntN(2) == 0 {
							op.Range.Pairs = append(op.Range.Pairs, history.KV{Key: k, Value: value(k, id)})
						}
					}
					ops = append(ops, op)
				}
			}
			if wantReads > before {
				wantTxns++
			}
			h.Txns = append(h.Txns, history.Txn{ID: id, Status: history.Status(r.IntN(3)), Ops: ops})
		}
		got := ForeignReads(h)
		if got.Reads != wantReads || got.Txns != wantTxns || got.First != first {
			t.Fatalf("seed %d: got %+v, want %d reads in %d transactions, first %q", seed, got, wantReads, wantTxns, first)
		}
	}
}
