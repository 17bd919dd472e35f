package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// An online check (run --online, serve --checker blackbox) holds its
// process's resident memory under --memory-mb. What Go does not manage
// counts in it too: the program's code and read-only data, mapped from
// its file and resident once touched, and anything else the process
// holds outside Go's heap. memoryHold sets Go's soft memory limit to
// --memory-mb less that part, and watches the part as the process runs
// (it grows as code is first run), lowering the limit as it grows. The
// online checkers are held to half of Go's limit by the live heap
// (serve.BlackBoxConfig.HeapTarget): the other half is room for each
// round's garbage between collections.

// memoryHoldEvery is how often memoryHold looks at the process's
// resident memory.
const memoryHoldEvery = 500 * time.Millisecond

// goFloor is the least of Go's memory an online check runs in: the
// service, the run's sessions and drivers, the checker's window and a
// round's garbage.
const goFloor = 48 << 20

// memoryHold is the hold memoryHoldFor sets up.
type memoryHold struct {
	bound int64
	// reserve is the most of the resident memory seen outside what Go
	// manages, with the code's whole mapping counted from the start.
	reserve int64
	// limit is Go's soft limit now.
	limit   atomic.Int64
	prev    int64
	done    chan struct{}
	stopped sync.WaitGroup
	samples []metrics.Sample
}

// memoryHoldFor holds the process under mb MiB of resident memory for an
// online check, or says, naming the least that works, that mb is below
// what the program itself takes (flag names the flag for the message).
// With GOMEMLIMIT set, Go's limit is the user's and nothing is held: nil,
// nil.
func memoryHoldFor(flag string, mb int64) (*memoryHold, error) {
	if mb <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return nil, nil
	}
	h := &memoryHold{bound: mb << 20, done: make(chan struct{}),
		samples: []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}}
	h.reserve = codeBytes()
	if least := minOnlineMB(h.reserve); mb < least {
		return nil, fmt.Errorf("%s %d is below %d, the least an online check holds its resident memory under here: the program's code takes %d MiB of it, and Go's heap needs %d MiB at least",
			flag, mb, least, (h.reserve+1<<20-1)>>20, goFloor>>20)
	}
	h.prev = debug.SetMemoryLimit(-1)
	h.step()
	h.stopped.Add(1)
	go func() {
		defer h.stopped.Done()
		t := time.NewTicker(memoryHoldEvery)
		defer t.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-t.C:
				h.step()
			}
		}
	}()
	return h, nil
}

// minOnlineMB is the least --memory-mb an online check takes with
// reserve bytes outside Go: the reserve, the margin, and goFloor.
func minOnlineMB(reserve int64) int64 {
	least := reserve + goFloor
	return (least + holdMargin(least) + 1<<20 - 1) >> 20
}

// holdMargin is the room left between Go's limit and a bound of b bytes
// beside the reserve: the memory Go takes between two looks, and pages
// the kernel counts that neither side sees.
func holdMargin(b int64) int64 { return 4<<20 + b/32 }

// step measures the memory outside Go and sets Go's limit to what is
// left of the bound.
func (h *memoryHold) step() {
	if file, anon, ok := residentMemory(); ok {
		metrics.Read(h.samples)
		goHeld := int64(h.samples[0].Value.Uint64() - h.samples[1].Value.Uint64())
		h.reserve = max(h.reserve, file+max(anon-goHeld, 0))
	}
	limit := max(h.bound-h.reserve-holdMargin(h.bound), goFloor/2)
	if limit != h.limit.Load() {
		h.limit.Store(limit)
		debug.SetMemoryLimit(limit)
	}
}

// heapTarget is the live heap the online checkers are held under: half
// of Go's limit.
func (h *memoryHold) heapTarget() int64 { return h.limit.Load() / 2 }

// checkerBound is the bound of an online checker's estimate under the
// hold: half of Go's limit at the start (the checker drops idle keys'
// state from half of its bound on; the live heap's feedback lowers it
// further when the process holds more than the estimates say).
func (h *memoryHold) checkerBound() int64 { return h.limit.Load() / 2 }

// stop ends the watch and gives Go back its previous limit.
func (h *memoryHold) stop() {
	if h == nil {
		return
	}
	close(h.done)
	h.stopped.Wait()
	debug.SetMemoryLimit(h.prev)
}

// residentMemory returns the process's resident memory mapped from files
// and anonymous (/proc/self/status RssFile + RssShmem, RssAnon), where
// the system says.
func residentMemory() (file, anon int64, ok bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var seen int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "RssFile", "RssShmem":
			file += kb << 10
			seen++
		case "RssAnon":
			anon = kb << 10
			seen++
		}
	}
	return file, anon, seen == 3
}

// codeBytes is the size of the program's own mappings of its executable
// (code, read-only data, initialised data: what can be resident of the
// file), from /proc/self/maps; where the system does not say, 64 MiB.
func codeBytes() int64 {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return 64 << 20
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 64 << 20
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && b > a {
			total += int64(b - a)
		}
	}
	if total == 0 {
		return 64 << 20
	}
	return total
}

// gcOwners counts the commands running that set the collector's
// percentage (GOGC) themselves; gcMu orders them with the tuner's
// changes.
var (
	gcMu     sync.Mutex
	gcOwners int
)

// ownGC sets the collector's percentage to p for a command that paces
// the collector itself (serve, run --online), unless GOGC is set; the
// returned function gives the tuner (TuneGCPercent) back its say.
func ownGC(p int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	gcMu.Lock()
	defer gcMu.Unlock()
	gcOwners++
	old := debug.SetGCPercent(p)
	return func() {
		gcMu.Lock()
		defer gcMu.Unlock()
		gcOwners--
		debug.SetGCPercent(old)
	}
}

// TuneGCPercent sets the collector's percentage to p, as the command's
// tuner (cmd/isoscope) computes it after each collection, unless a
// running command (serve, run --online) has set it itself, and says
// whether it did.
func TuneGCPercent(p int) bool {
	gcMu.Lock()
	defer gcMu.Unlock()
	if gcOwners > 0 {
		return false
	}
	debug.SetGCPercent(p)
	return true
}
