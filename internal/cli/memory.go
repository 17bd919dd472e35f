package cli

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/isoscope/isoscope/internal/check"
)

// defaultMemoryMB is --memory-mb's default: GOMEMLIMIT when it is set, or
// else three quarters of the machine's memory (of the cgroup's limit when
// that is lower), or 0 (no bound) when neither can be read.
func defaultMemoryMB() int {
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
		return int(max(lim>>20, 1))
	}
	total := physicalMemory()
	if c := cgroupMemory(); c > 0 && (total == 0 || c < total) {
		total = c
	}
	return int(total / 4 * 3 >> 20)
}

// physicalMemory returns MemTotal from /proc/meminfo in bytes, or 0.
func physicalMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupMemory returns the cgroup v2 memory limit in bytes, or 0 when
// there is none.
func cgroupMemory() int64 {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0 // "max"
	}
	return n
}

// memoryWatchEvery is how often boundMemory looks at the memory in use.
const memoryWatchEvery = 50 * time.Millisecond

// goShare is the part of --memory-mb left to what Go manages (its heap,
// stacks and metadata): one sixteenth stays for the rest of the process
// (its code and data, its threads, the C library).
func goShare(mb int) int64 { return int64(mb) << 20 / 16 * 15 }

// boundMemory bounds the process to mb megabytes while a check runs: it
// sets Go's soft memory limit to the bound's Go share (goShare), and
// watches the memory the runtime holds from the system; past that share
// it cancels the returned context with a *check.ResourceLimitError as its
// cause, so that the check ends undecided (exit 3) instead of growing
// until the system kills it. The returned function restores the previous
// limit and stops watching.
func boundMemory(ctx context.Context, mb int) (context.Context, func()) {
	limit := goShare(mb)
	old := debug.SetMemoryLimit(limit)
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(memoryWatchEvery)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(s)
			if held := int64(s[0].Value.Uint64() - s[1].Value.Uint64()); held > limit {
				cancel(&check.ResourceLimitError{What: fmt.Sprintf("memory: the check held %d MB, more than --memory-mb %d", held>>20, mb)})
				return
			}
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
		debug.SetMemoryLimit(old)
	}
}
