package chronos_test

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/precheck"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// cpu returns the process's user and system CPU time so far, in seconds:
// on a shared machine a steadier figure than wall time.
func cpu(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// measure runs f b.N times and reports, besides wall time, the CPU
// seconds per run.
func measure(b *testing.B, f func()) {
	b.ReportAllocs()
	c0 := cpu(b)
	for b.Loop() {
		f()
	}
	b.ReportMetric((cpu(b)-c0)/float64(b.N), "cpu-s/op")
}

// benchHistory is the timestamped benchmark history: n transactions of 8
// operations (reads and blind writes, Boomslang's mixed BlindW) from the
// snapshot-isolation simulator with timestamps, 24 sessions, 10,000
// uniform keys.
func benchHistory(b *testing.B, n int) *history.History {
	b.Helper()
	h, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.BlindW, BlindWMixed: true, Mode: gen.SnapshotIsolation,
		Txns: n, Sessions: 24, Keys: 10000, Dist: workload.Uniform, Ops: 8, Seed: 1, Timestamps: true})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// BenchmarkChronos measures the parts of a check — the index every check
// builds, the shared checks, chronos alone (the replay, on an index built
// once) — the whole in-process check (index, shared checks, chronos) and
// the whole job of `isoscope check` (parse the text, then check), at SI
// and SER, on 1,000,000 transactions of 8 operations.
func BenchmarkChronos(b *testing.B) {
	const n = 1_000_000
	h := benchHistory(b, n)
	var text bytes.Buffer
	if err := native.Write(&text, h); err != nil {
		b.Fatal(err)
	}
	b.Run("index", func(b *testing.B) {
		measure(b, func() { history.NewIndex(h) })
	})
	ix := history.NewIndex(h)
	b.Run("precheck/si", func(b *testing.B) {
		measure(b, func() { precheck.Run(ix, level.Get(level.SnapshotIsolation)) })
	})
	for _, id := range []level.ID{level.SnapshotIsolation, level.Serializable} {
		l := level.Get(id)
		b.Run(fmt.Sprintf("replay/%s", l.Short), func(b *testing.B) {
			measure(b, func() {
				if _, err := checkWith(context.Background(), ix, l); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "txns/s")
		})
		b.Run(fmt.Sprintf("check/%s", l.Short), func(b *testing.B) {
			measure(b, func() {
				res, err := check.Run(context.Background(), h, l, check.Options{})
				if err != nil || res.Checker != "chronos" {
					b.Fatal(err, res.Checker)
				}
				if id == level.SnapshotIsolation && res.Outcome != check.Satisfied {
					b.Fatalf("generated SI history: %s", res.Outcome)
				}
			})
		})
		b.Run(fmt.Sprintf("read+check/%s", l.Short), func(b *testing.B) {
			b.SetBytes(int64(text.Len()))
			measure(b, func() {
				h, err := native.Read(bytes.NewReader(text.Bytes()), "bench")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := check.Run(context.Background(), h, l, check.Options{}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
