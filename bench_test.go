package isoscope_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// mtHistory returns the text of a generated mini-transaction history: 24
// sessions, 10,000 keys, zipfian (docs/benchmarks.md's mini-transaction job).
func mtHistory(b *testing.B, txns int) []byte {
	b.Helper()
	h, _, err := gen.Generate(gen.Config{
		Txns: txns, Sessions: 24, Keys: 10000, Dist: workload.Zipfian, Mode: gen.Serial, ReadOnlyRatio: 0.2, Seed: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := native.Write(&buf, h); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReadAndCheck measures the whole job of `isoscope check` on a
// mini-transaction history: parse the text, then check it, for SER, SI and
// SSER, at 10k, 100k and 1M transactions.
func BenchmarkReadAndCheck(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		text := mtHistory(b, n)
		for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation, level.StrictSerializable} {
			b.Run(fmt.Sprintf("%s/txns=%d", level.Get(id).Short, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					h, err := native.Read(bytes.NewReader(text), "bench")
					if err != nil {
						b.Fatal(err)
					}
					res, err := check.Run(context.Background(), h, level.Get(id), check.Options{})
					if err != nil {
						b.Fatal(err)
					}
					if res.Outcome != check.Satisfied {
						b.Fatalf("generated serial history: %s", res.Outcome)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "txns/s")
			})
		}
	}
}

// BenchmarkCheckOnly separates checking from parsing at 1M transactions.
func BenchmarkCheckOnly(b *testing.B) {
	text := mtHistory(b, 1_000_000)
	h, err := native.Read(bytes.NewReader(text), "bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, id := range []level.ID{level.Serializable, level.SnapshotIsolation, level.StrictSerializable, level.ReadCommitted} {
		b.Run(level.Get(id).Short, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := check.Run(context.Background(), h, level.Get(id), check.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
