package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waiting is a run of the binary that waits on its input.
type waiting struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	done     chan struct{}
}

// startWaiting starts the binary with args; stdin, when set, is its
// standard input.
func startWaiting(t *testing.T, stdin *os.File, args ...string) *waiting {
	t.Helper()
	w := &waiting{cmd: exec.Command(binary(t), args...), done: make(chan struct{})}
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.err
	// A child left running holds the output pipes: do not wait for it.
	w.cmd.WaitDelay = time.Second
	if stdin != nil {
		w.cmd.Stdin = stdin
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	})
	return w
}

// end waits up to limit for the run to end and returns its exit status,
// failing the test when it is still running then.
func (w *waiting) end(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-w.done:
		return w.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("%s still running %v later\n%s%s", strings.Join(w.cmd.Args, " "), limit, w.out.String(), w.err.String())
		return -1
	}
}

// fifo makes a named pipe no process writes to.
func fifo(t *testing.T) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "history.fifo")
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A process still waiting to open it for reading (left by a
		// failing test) gets a writer that leaves at once: end of input.
		for range 20 {
			w, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				return
			}
			w.Close()
			time.Sleep(10 * time.Millisecond)
		}
	})
	return name
}

// heldPipe is a pipe whose writing end the test holds open, writing
// nothing, as `sleep 30 | isoscope check -` does.
func heldPipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r
}

// TestWaitingInputEnds: a check waiting on input — a named pipe no
// process opens for writing (the open itself waits), or standard input
// that is a pipe held open and silent — ends within a second or two of
// SIGINT, of SIGTERM or of its --timeout, exit 3, undecided, and says
// which. Before, the check on the named pipe ran until SIGKILL, and the
// one on the pipe outlived both signals and then said "empty input".
func TestWaitingInputEnds(t *testing.T) {
	inputs := []struct {
		name  string
		input func(t *testing.T) (stdin *os.File, arg string)
	}{
		{"fifo", func(t *testing.T) (*os.File, string) { return nil, fifo(t) }},
		{"pipe", func(t *testing.T) (*os.File, string) { return heldPipe(t), "-" }},
	}
	ends := []struct {
		name string
		sig  syscall.Signal // 0: --timeout 1s
		want string
	}{
		{"SIGINT", syscall.SIGINT, "interrupted while reading"},
		{"SIGTERM", syscall.SIGTERM, "interrupted while reading"},
		{"timeout", 0, "timed out while reading"},
	}
	for _, in := range inputs {
		for _, e := range ends {
			t.Run(in.name+"/"+e.name, func(t *testing.T) {
				stdin, arg := in.input(t)
				args := []string{"check", arg}
				if e.sig == 0 {
					args = []string{"check", "--timeout", "1s", arg}
				}
				w := startWaiting(t, stdin, args...)
				start := time.Now()
				if e.sig != 0 {
					// The supervisor catches signals from before it
					// starts its child: once there is a child, a signal
					// reaches the check however early it comes.
					waitChild(t, w)
					time.Sleep(200 * time.Millisecond)
					start = time.Now()
					if err := w.cmd.Process.Signal(e.sig); err != nil {
						t.Fatal(err)
					}
				} else {
					start = start.Add(time.Second)
				}
				code := w.end(t, 10*time.Second)
				late := time.Since(start)
				t.Logf("exit %d %v after the signal or deadline: %s%s", code, late, w.out.String(), w.err.String())
				if code != 3 || !strings.Contains(w.out.String(), "UNKNOWN: "+e.want) {
					t.Fatalf("exit %d, want 3 and %q\n%s%s", code, e.want, w.out.String(), w.err.String())
				}
				if late > 2*time.Second {
					t.Errorf("ended %v after the signal or deadline", late)
				}
			})
		}
	}
}

// TestWaitingReadersEnd: convert, report and publish waiting on a named
// pipe no process writes to end within a second or two of SIGINT or
// SIGTERM, exit 3, saying they were interrupted while reading. Before,
// each waited in the open until SIGKILL.
func TestWaitingReadersEnd(t *testing.T) {
	result := savedResult(t)
	commands := map[string]func(fifo string) []string{
		"convert": func(f string) []string { return []string{"convert", f, filepath.Join(filepath.Dir(f), "out.jsonl")} },
		"report-result": func(f string) []string {
			return []string{"report", "--out", filepath.Join(filepath.Dir(f), "report"), f, f}
		},
		"report-history": func(f string) []string {
			return []string{"report", "--out", filepath.Join(filepath.Dir(f), "report"), result, f}
		},
		"publish": func(f string) []string { return []string{"publish", f, "--nats", "nats://127.0.0.1:1"} },
	}
	for name, args := range commands {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(name+"/"+sig.String(), func(t *testing.T) {
				var (
					w     *waiting
					code  int
					late  time.Duration
					pause = 500 * time.Millisecond
				)
				for try := 1; ; try++ {
					w = startWaiting(t, nil, args(fifo(t))...)
					time.Sleep(pause)
					start := time.Now()
					if err := w.cmd.Process.Signal(sig); err != nil {
						t.Fatal(err)
					}
					code = w.end(t, 10*time.Second)
					late = time.Since(start)
					// Killed by the signal itself: it came before the
					// process had its handlers (a loaded machine), not
					// while it waited on its input. Again, later.
					ws, _ := w.cmd.ProcessState.Sys().(syscall.WaitStatus)
					if !ws.Signaled() || try == 3 {
						break
					}
					t.Logf("try %d: killed by %v %v after the start; again after %v", try, ws.Signal(), pause, 2*pause)
					pause *= 2
				}
				t.Logf("exit %d %v after %v: %s", code, late, sig, w.err.String())
				if code != 3 || !strings.Contains(w.err.String(), "interrupted while reading") {
					t.Fatalf("exit %d, want 3 and \"interrupted while reading\"\n%s%s", code, w.out.String(), w.err.String())
				}
				if late > 2*time.Second {
					t.Errorf("ended %v after %v", late, sig)
				}
			})
		}
	}
}

// TestEarlySignalEndsCheck: a signal that reaches the supervisor as its
// child starts, before the child has its handlers, still ends the check
// undecided (exit 3), held until the child can take it. Before, the
// supervisor passed it on at once and Go's default action killed the
// child: exit 130.
func TestEarlySignalEndsCheck(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			w := startWaiting(t, nil, "check", fifo(t))
			waitChild(t, w)
			if err := w.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			code := w.end(t, 10*time.Second)
			if code != 3 || !strings.Contains(w.out.String(), "UNKNOWN: interrupted") {
				t.Fatalf("exit %d, want 3 and \"UNKNOWN: interrupted\"\n%s%s", code, w.out.String(), w.err.String())
			}
		})
	}
}

// waitChild waits until the supervised run w has started its child.
func waitChild(t *testing.T, w *waiting) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if childOf(t, w.cmd.Process.Pid) != 0 {
			return
		}
	}
	t.Fatalf("no child of the supervisor %d", w.cmd.Process.Pid)
}

// savedResult is the JSON result of a check of a small history, as
// report reads it.
func savedResult(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	if err := os.WriteFile(hist, []byte(`{"id":1,"session":1,"ops":[["w","x",1]]}`+"\n"+`{"id":2,"session":2,"ops":[["r","x",1]]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary(t), "check", "--json", hist).Output()
	if err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	name := filepath.Join(dir, "result.json")
	if err := os.WriteFile(name, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestWaitingReadersTimeout: convert and report waiting on a named pipe
// no process writes to end within a second or two of their --timeout,
// exit 3, saying they timed out while reading.
func TestWaitingReadersTimeout(t *testing.T) {
	result := savedResult(t)
	commands := map[string]func(fifo string) []string{
		"convert": func(f string) []string {
			return []string{"convert", "--timeout", "1s", f, filepath.Join(filepath.Dir(f), "out.jsonl")}
		},
		"report-result": func(f string) []string {
			return []string{"report", "--timeout", "1s", "--out", filepath.Join(filepath.Dir(f), "report"), f, f}
		},
		"report-history": func(f string) []string {
			return []string{"report", "--timeout", "1s", "--out", filepath.Join(filepath.Dir(f), "report"), result, f}
		},
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			f := fifo(t)
			w := startWaiting(t, nil, args(f)...)
			start := time.Now()
			code := w.end(t, 10*time.Second)
			t.Logf("exit %d after %v: %s", code, time.Since(start), w.err.String())
			if code != 3 || !strings.Contains(w.err.String(), "timed out while reading") {
				t.Fatalf("exit %d, want 3 and \"timed out while reading\"\n%s%s", code, w.out.String(), w.err.String())
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("ended %v after the start, --timeout 1s", d)
			}
			if written, _ := filepath.Glob(filepath.Join(filepath.Dir(f), "*")); len(written) != 1 {
				t.Errorf("written beside the pipe: %v", written)
			}
		})
	}
}

// TestChildDiesWithSupervisor: a supervised check waiting on a named pipe
// dies within a second or two when its supervisor is killed with
// SIGKILL. Before, the child ran on, orphaned, until killed by hand.
func TestChildDiesWithSupervisor(t *testing.T) {
	w := startWaiting(t, nil, "check", fifo(t))
	child := 0
	for deadline := time.Now().Add(5 * time.Second); child == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		child = childOf(t, w.cmd.Process.Pid)
	}
	if child == 0 {
		t.Fatalf("no child of the supervisor %d", w.cmd.Process.Pid)
	}
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	w.end(t, 5*time.Second)
	start := time.Now()
	for alive(child) {
		if time.Since(start) > 2*time.Second {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the child %d still runs %v after its supervisor was killed", child, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the child %d ended %v after its supervisor", child, time.Since(start))
}

// TestSupervisorForwardsSignals: SIGHUP sent to the supervisor of a check
// waiting on a named pipe reaches the check, which ends undecided, exit 3.
// Before, only SIGINT and SIGTERM were passed on: SIGHUP killed the
// supervisor and left the child waiting.
func TestSupervisorForwardsSignals(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		// Started under nohup: a child would inherit SIGHUP ignored and
		// keep it so, by design. Catching it here gives the child
		// SIGHUP's default disposition, as from a terminal.
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGHUP)
		t.Cleanup(func() { signal.Stop(c) })
	}
	w := startWaiting(t, nil, "check", fifo(t))
	time.Sleep(500 * time.Millisecond)
	child := childOf(t, w.cmd.Process.Pid)
	if err := w.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	code := w.end(t, 10*time.Second)
	if child != 0 {
		t.Cleanup(func() {
			if alive(child) {
				_ = syscall.Kill(child, syscall.SIGKILL)
				t.Errorf("the child %d outlived its supervisor", child)
			}
		})
	}
	if code != 3 || !strings.Contains(w.out.String(), "UNKNOWN: interrupted while reading") {
		t.Fatalf("exit %d, want 3, interrupted\n%s%s", code, w.out.String(), w.err.String())
	}
}

// childOf is the process id of a child of process parent, or 0.
func childOf(t *testing.T, parent int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procState(pid); ppid == parent {
			return pid
		}
	}
	return 0
}

// alive reports whether process pid exists and is not a zombie (one that
// ended, waiting for a parent to collect its status).
func alive(pid int) bool {
	ppid, state := procState(pid)
	return ppid != 0 && state != "Z" && state != "X"
}

// procState reads a process's parent and state from /proc (0 and "" when
// it does not exist).
func procState(pid int) (ppid int, state string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}
