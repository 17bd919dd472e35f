package native

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// miniHistory is a synthetic mini-transaction history: sessions sessions,
// keys integer keys, two reads and two writes per transaction, unique
// integer values, instants set.
func miniHistory(txns, sessions, keys int, unique bool) *history.History {
	rng := rand.New(rand.NewPCG(1, 2))
	h := history.New()
	h.Header.Present = true
	h.Header.UniqueValues = unique
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	for k := range keys {
		h.Key(history.IntValue(int64(k)))
	}
	last := make([]int64, keys)
	now := int64(1732266000000000000)
	for i := range txns {
		a, b := history.KeyID(rng.IntN(keys)), history.KeyID(rng.IntN(keys))
		if a == b {
			b = (a + 1) % history.KeyID(keys)
		}
		v := int64(i+1) * 2
		ops := []history.Op{
			{Kind: history.Read, Key: a, Value: history.IntValue(last[a])},
			{Kind: history.Read, Key: b, Value: history.IntValue(last[b])},
			{Kind: history.Write, Key: a, Value: history.IntValue(v)},
			{Kind: history.Write, Key: b, Value: history.IntValue(v + 1)},
		}
		last[a], last[b] = v, v+1
		now += int64(rng.IntN(100000))
		h.Txns = append(h.Txns, history.Txn{
			ID: history.IntValue(int64(i + 1)), Session: int32(rng.IntN(sessions)),
			Begin: now, End: now + int64(rng.IntN(500000)), HasTime: true, Ops: ops,
		})
	}
	return h
}

func benchRead(b *testing.B, unique bool) {
	const n = 100000
	var buf bytes.Buffer
	if err := Write(&buf, miniHistory(n, 24, 10000, unique)); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h, err := Read(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if len(h.Txns) != n {
			b.Fatalf("read %d transactions", len(h.Txns))
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "txns/s")
}

// BenchmarkRead reads 100,000 mini-transactions (24 sessions, 10,000 keys,
// two reads and two writes each, instants set).
func BenchmarkRead(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchRead(b, false) })
	b.Run("unique_values", func(b *testing.B) { benchRead(b, true) })
}

// BenchmarkWrite writes the same 100,000 mini-transactions.
func BenchmarkWrite(b *testing.B) {
	const n = 100000
	h := miniHistory(n, 24, 10000, true)
	var size int64
	{
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			b.Fatal(err)
		}
		size = int64(buf.Len())
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := Write(io.Discard, h); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "txns/s")
}
