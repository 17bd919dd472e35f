package viper

import (
	"os"
	"testing"

	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/workload"
)

// BenchmarkReadDir reads a Viper directory of 20,000 transactions
// (RandomRMWRange, 8 operations each, 24 threads, as in Viper's paper's
// runs), written as ViperBench writes them.
func BenchmarkReadDir(b *testing.B) { benchReadDir(b) }

// BenchmarkReadDirDecoder reads it without the fast path: every line
// through the JSON decoder.
func BenchmarkReadDirDecoder(b *testing.B) {
	fastLines = false
	defer func() { fastLines = true }()
	benchReadDir(b)
}

func benchReadDir(b *testing.B) {
	h, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.RandomRMWRange, Mode: gen.SnapshotIsolation,
		Txns: 20000, Sessions: 24, Keys: 10000, Dist: workload.Uniform, Seed: 1, Populate: 0.2})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	writeViper(b, dir, h)
	var size int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			size += info.Size()
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		if _, err := ReadDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}
