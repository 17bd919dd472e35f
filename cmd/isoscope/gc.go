package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	"github.com/isoscope/isoscope/internal/cli"
)

// gcPercent is the collector's percentage (GOGC) for a live heap of live
// bytes: 400 while the heap is small, where collecting less often halves
// the time of a check for little memory, and less as it grows, so that
// the heap collects when it has grown by half or by gcHeadroom, whichever
// is more: a check whose history holds gigabytes peaks at about one and a
// half times what it keeps, not five times.
func gcPercent(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	p := int(100 * max(live/2, gcHeadroom) / live)
	return min(max(p, minGCPercent), maxGCPercent)
}

const (
	maxGCPercent = 400
	minGCPercent = 50
	gcHeadroom   = 1536 << 20
)

// gcSentinel is an object the collector frees at each cycle: its
// finalizer then sets the percentage for the live heap the cycle left.
type gcSentinel struct{ _ [16]byte }

// tuneGC sets the collector's percentage after every collection from the
// live heap (gcPercent), except while a command that sets it itself runs
// (cli.TuneGCPercent).
func tuneGC() {
	debug.SetGCPercent(maxGCPercent)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				// A command that paces the collector itself (serve, run
				// --online) keeps its percentage while it runs.
				cli.TuneGCPercent(gcPercent(sample[0].Value.Uint64()))
			}
			arm()
		})
	}
	arm()
}
