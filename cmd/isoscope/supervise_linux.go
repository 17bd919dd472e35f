package main

import (
	"os"
	"syscall"
)

// forwarded are the signals the supervisor passes on to its child: every
// one that a process can catch and that asks it to end by default (not
// SIGPIPE, which a write to a closed pipe raises in the writer itself,
// nor the profiler's SIGPROF and SIGVTALRM, nor SIGURG, which Go's
// scheduler sends itself, nor SIGCHLD, SIGWINCH or the job-control
// signals).
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGXCPU, syscall.SIGXFSZ}

// dieWithParent has the kernel kill the child with SIGKILL when the
// thread that started it ends (as the parent process does when killed).
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
