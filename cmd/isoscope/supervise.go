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
	"strconv"
	"syscall"

	"github.com/isoscope/isoscope/internal/cli"
	"github.com/mattn/go-isatty"
)

// supervisedEnv marks the child process a supervisor runs.
const supervisedEnv = "ISOSCOPE_SUPERVISED"

// readyFDEnv names, in the child's environment, the file descriptor on
// which the child says it has installed its signal handlers (one byte,
// then it closes it). Until then the supervisor holds the signals it
// catches: forwarded earlier, SIGINT or SIGTERM would find Go's default
// action and kill the child, exit 130 instead of an undecided check.
const readyFDEnv = "ISOSCOPE_READY_FD"

// signalReady tells a supervisor, if this process is a supervised child,
// that its signal handlers are installed, and forgets the descriptor so
// that nothing started from here inherits it.
func signalReady() {
	fd := os.Getenv(readyFDEnv)
	if fd == "" {
		return
	}
	os.Unsetenv(readyFDEnv)
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return
	}
	f := os.NewFile(uintptr(n), "supervisor-ready")
	_, _ = f.Write([]byte{1})
	f.Close()
}

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
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return run(args)
	}
	cmd.ExtraFiles = []*os.File{readyW} // the child's descriptor 3
	cmd.Env = append(cmd.Env, readyFDEnv+"=3")
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
		readyR.Close()
		readyW.Close()
		return run(args)
	}
	readyW.Close()
	ready := make(chan struct{})
	go func() {
		// A byte when the child's handlers are in place; end of file if
		// it ended before that.
		var b [1]byte
		_, _ = readyR.Read(b[:])
		readyR.Close()
		close(ready)
	}()
	go forward(sigs, ready, cmd.Process)
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

// forward passes the signals that come on sigs to the child p, holding
// those that come before ready is closed and passing them on then, in
// order.
func forward(sigs <-chan os.Signal, ready <-chan struct{}, p *os.Process) {
	var held []os.Signal
	for {
		select {
		case s := <-sigs:
			held = append(held, s)
		case <-ready:
			for _, s := range held {
				_ = p.Signal(s)
			}
			for s := range sigs {
				_ = p.Signal(s)
			}
			return
		}
	}
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
