package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/isoscope/isoscope/internal/cli"
	"github.com/mattn/go-isatty"
)

// supervisedEnv marks the child process a supervisor runs.
const supervisedEnv = "ISOSCOPE_SUPERVISED"

// supervises reports whether this process should run the command in a
// supervised child: `check`, unless it is that child already. A check
// that runs out of memory despite --memory-mb (the system refuses memory
// below the bound: a ulimit, a cgroup, other processes) dies in Go's
// runtime with exit status 2, which the contract reserves for bad input;
// only a parent can see that and say "undecided: resource limit" (exit 3)
// instead.
func supervises(args []string) bool {
	return len(args) > 0 && args[0] == "check" && os.Getenv(supervisedEnv) == ""
}

// supervise runs this executable again with args as a child that shares
// standard input and output, passes its standard error on, forwards every
// signal it can catch to it (forwarded), and returns its exit status —
// except when it ran out of memory (Go's "fatal error: … out of memory",
// or killed by SIGKILL, as the kernel's out-of-memory killer does): then
// it says so on standard error and returns 3, undecided for a resource
// limit. The child dies with the supervisor (dieWithParent), so killing
// the supervisor with SIGKILL leaves no check behind.
func supervise(args []string) int {
	self, err := os.Executable()
	if err != nil {
		return run(args)
	}
	// The parent-death signal comes when the thread that started the
	// child ends: this goroutine keeps its thread until the child ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(self, args...)
	cmd.SysProcAttr = dieWithParent()
	cmd.Env = append(os.Environ(), supervisedEnv+"=1")
	if isatty.IsTerminal(os.Stderr.Fd()) {
		// The child's standard error is a pipe: progress is drawn all the same.
		cmd.Env = append(cmd.Env, cli.StderrTerminalEnv+"=1")
	}
	cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return run(args)
	}
	sigs := make(chan os.Signal, 4)
	for _, sig := range forwarded {
		// SIGINT and SIGTERM end a check always, as in run; another
		// signal ignored at start (nohup's SIGHUP) stays ignored, in
		// the child as here.
		if sig == os.Interrupt || sig == syscall.SIGTERM || !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return run(args)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	oom := make(chan bool, 1)
	go func() { oom <- passOn(stderr, os.Stderr) }()
	outOfMemory := <-oom
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintf(os.Stderr, "isoscope: %v\n", err)
		return cli.ExitBadInput
	}
	st := cmd.ProcessState
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		fmt.Fprintln(os.Stderr, "isoscope: undecided: resource limit: the check was killed (SIGKILL, as the kernel's out-of-memory killer does); lower --memory-mb below what the system can give")
		return cli.ExitUnknown
	}
	if outOfMemory && st.ExitCode() == 2 {
		fmt.Fprintln(os.Stderr, "isoscope: undecided: resource limit: the check ran out of memory before --memory-mb (the system gave less: a ulimit, a cgroup, other processes); lower --memory-mb or free memory")
		return cli.ExitUnknown
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// Killed by a signal we forwarded or another: as the shell would.
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// passOn copies r to w as it comes (progress lines end in carriage
// returns, not newlines) and reports whether Go's runtime said it ran out
// of memory.
func passOn(r io.Reader, w io.Writer) bool {
	oom := false
	buf := make([]byte, 32<<10)
	var tail []byte // the end of what came before, for a message split between reads
	for {
		n, err := r.Read(buf)
		if n > 0 {
			seen := append(tail, buf[:n]...)
			if bytes.Contains(seen, []byte("runtime: out of memory")) || bytes.Contains(seen, []byte("fatal error: out of memory")) {
				oom = true
			}
			tail = append(tail[:0], seen[max(len(seen)-64, 0):]...)
			_, _ = w.Write(buf[:n])
		}
		if err != nil {
			return oom
		}
	}
}
