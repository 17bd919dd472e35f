package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/testbin"
)

// binary is the isoscope binary, built once per test run.
func binary(t *testing.T) string { return testbin.Isoscope(t) }

// blindWrites writes the blind-write history to a file: n transactions in 100
// sessions, the even ones blind writes of i%3 to one key, the odd ones
// reads of a random one of those values. The register checker (linear)
// decides it in a fraction of a second, so the tests of the solver's
// bounds name the solver (--checker sat).
func blindWrites(t *testing.T, n int) string {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 18))
	var b bytes.Buffer
	for i := range n {
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"id":%d,"session":%d,"ops":[["w","x",%d]]}`+"\n", i, i%100, i%3)
		} else {
			fmt.Fprintf(&b, `{"id":%d,"session":%d,"ops":[["r","x",%d]]}`+"\n", i, i%100, r.IntN(3))
		}
	}
	name := filepath.Join(t.TempDir(), fmt.Sprintf("blind%d.jsonl", n))
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// result is how a run of the binary ended.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration // from the start
	afterSignal    time.Duration // from the signal, if one was sent
	maxRSS         int64         // peak resident memory, bytes
}

// runBinary runs the binary with args, sending SIGTERM after signalAfter
// when it is positive, and kills it after limit.
func runBinary(t *testing.T, limit, signalAfter time.Duration, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var signalled time.Time
	var sig <-chan time.Time
	if signalAfter > 0 {
		sig = time.After(signalAfter)
	}
	kill := time.After(limit)
	for {
		select {
		case <-sig:
			signalled = time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			sig = nil
			continue
		case <-kill:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("isoscope %s still running after %v\n%s%s", strings.Join(args, " "), limit, out.String(), errb.String())
		case <-done:
		}
		break
	}
	res := result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if !signalled.IsZero() {
		res.afterSignal = time.Since(signalled)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.maxRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	return res
}

// TestTimeoutBlindWrites: the 5,000-transaction blind-write history
// with --timeout 2s ends within the timeout and a second, exit 3, outcome
// unknown. Before, it was still running at 240 s with --timeout 10s.
func TestTimeoutBlindWrites(t *testing.T) {
	name := blindWrites(t, 5000)
	res := runBinary(t, 30*time.Second, 0, nil, "check", "--checker", "sat", "--timeout", "2s", name)
	t.Logf("exit %d after %v, peak RSS %d MB: %s", res.code, res.elapsed, res.maxRSS>>20, res.stdout)
	if res.code != 3 || !strings.Contains(res.stdout, "UNKNOWN: timed out before a verdict") {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res.elapsed > 3*time.Second {
		t.Errorf("ended %v after the start, more than --timeout 2s and a second", res.elapsed)
	}
}

// TestSIGTERMMidConstruction: SIGTERM to a check of the blind-write history
// while the solver builds and prunes (no --timeout) ends it within a
// second, exit 3, outcome unknown, interrupted — sent to the supervisor
// (which forwards it) or to an unsupervised check. Before, SIGTERM was
// ignored until the construction ended, minutes later.
func TestSIGTERMMidConstruction(t *testing.T) {
	name := blindWrites(t, 5000)
	for i, after := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 1500 * time.Millisecond} {
		var env []string
		if i == 2 {
			env = []string{supervisedEnv + "=1"}
		}
		res := runBinary(t, 60*time.Second, after, env, "check", "--checker", "sat", name)
		t.Logf("SIGTERM after %v: exit %d %v later: %s", after, res.code, res.afterSignal, res.stdout)
		if res.code != 3 || !strings.Contains(res.stdout, "UNKNOWN: interrupted before a verdict") {
			t.Fatalf("SIGTERM after %v: exit %d\n%s%s", after, res.code, res.stdout, res.stderr)
		}
		if res.afterSignal > time.Second {
			t.Errorf("SIGTERM after %v: ended %v after it", after, res.afterSignal)
		}
	}
}

// TestMemoryBound: the 50,000-transaction blind-write history (12–15
// minutes and 8.2 GB before) under --memory-mb 1024 and --timeout 60s ends
// within the timeout, undecided for the memory it needs, and the process's
// peak resident memory stays under the bound (measured on the checking
// process itself, unsupervised). It needs about a gigabyte for a few
// seconds: skipped with -short.
func TestMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("needs 1 GB of memory for a few seconds")
	}
	name := blindWrites(t, 50000)
	res := runBinary(t, 90*time.Second, 0, []string{supervisedEnv + "=1"}, "check", "--checker", "sat", "--timeout", "60s", "--memory-mb", "1024", name)
	t.Logf("exit %d after %v, peak RSS %d MB: %s", res.code, res.elapsed, res.maxRSS>>20, res.stdout)
	if res.code != 3 || !strings.Contains(res.stdout, "UNKNOWN") || !strings.Contains(res.stdout, "MB") {
		t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res.elapsed > 61*time.Second {
		t.Errorf("ended %v after the start, more than --timeout 60s and a second", res.elapsed)
	}
	if res.maxRSS > 1024<<20 {
		t.Errorf("peak resident memory %d MB, more than --memory-mb 1024", res.maxRSS>>20)
	}
}

// TestOutOfMemoryIsUndecided: a check that runs out of memory anyway —
// here no --memory-mb and a 2.5 GB address-space ulimit, below what the
// 50,000-transaction blind-write history needs — dies in Go's runtime,
// and the supervisor says "undecided: resource limit", exit 3, instead
// of the runtime's exit 2, which the contract reserves for bad input. It
// needs up to 2.5 GB for a few seconds: skipped with -short.
func TestOutOfMemoryIsUndecided(t *testing.T) {
	if testing.Short() {
		t.Skip("needs up to 2.5 GB of memory for a few seconds")
	}
	name := blindWrites(t, 50000)
	cmd := exec.Command("sh", "-c", `ulimit -v 2500000 && exec "$0" check --checker sat --memory-mb 0 --timeout 60s "$1"`, binary(t), name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	_ = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	t.Logf("exit %d after %v", code, time.Since(start))
	if code != 3 || !strings.Contains(errb.String(), "isoscope: undecided: resource limit: the check ran out of memory") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), tail(errb.String(), 2000))
	}
	if !strings.Contains(errb.String(), "out of memory") {
		t.Fatalf("the runtime's message was not passed on:\n%s", tail(errb.String(), 2000))
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// TestGCPercent: small heaps collect at 400%, large ones when they have
// grown by half, and the percentage never rises as the heap grows.
func TestGCPercent(t *testing.T) {
	if got := gcPercent(100 << 20); got != maxGCPercent {
		t.Errorf("100 MB live: %d%%, want %d%%", got, maxGCPercent)
	}
	if got := gcPercent(8 << 30); got != minGCPercent {
		t.Errorf("8 GB live: %d%%, want %d%%", got, minGCPercent)
	}
	prev := maxGCPercent
	for live := uint64(1 << 20); live < 64<<30; live += live / 8 {
		p := gcPercent(live)
		if p > prev || p < minGCPercent {
			t.Fatalf("%d MB live: %d%% after %d%%", live>>20, p, prev)
		}
		prev = p
	}
}

// TestTuneGCSetsPercent: after a collection the tuner has set the
// percentage the live heap asks for.
func TestTuneGCSetsPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuneGC()
	debug.SetGCPercent(17)
	for range 50 {
		runtime.GC()
		if p := debug.SetGCPercent(17); p != 17 {
			if p != maxGCPercent {
				t.Fatalf("after a collection: %d%%, want %d%% for a small heap", p, maxGCPercent)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no collection set the percentage")
}
