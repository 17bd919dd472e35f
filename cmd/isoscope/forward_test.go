package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestForwardHoldsUntilReady: forward passes a signal that came before
// ready only once ready is closed, then the ones that come after. The
// child here is a sleep: SIGTERM ends it, so its end says when the signal
// reached it.
func TestForwardHoldsUntilReady(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep(1), which every supported system has: %v", err)
	}
	ended := make(chan *os.ProcessState, 1)
	go func() { _ = cmd.Wait(); ended <- cmd.ProcessState }()
	sigs := make(chan os.Signal, 4)
	ready := make(chan struct{})
	go forward(sigs, ready, cmd.Process)
	sigs <- syscall.SIGTERM
	select {
	case <-ended:
		t.Fatal("the child got the signal before it was ready")
	case <-time.After(300 * time.Millisecond):
	}
	close(ready)
	select {
	case st := <-ended:
		if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("the child ended %v, want killed by SIGTERM", st)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the held signal never reached the child")
	}
}
