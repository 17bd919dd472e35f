//go:build unix

package format

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// releaseOpen ends a wait to open the named pipe at path for reading: a
// writer opens it without waiting (it fails when no reader waits) and
// leaves at once, so that the reader sees the end of its input.
func releaseOpen(path string) {
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}

// reopenPollable opens the pipe or terminal f reads again, in
// non-blocking mode, which Go polls: a file of its own that reads the
// same input, and whose reads a deadline can end. It returns nil for
// other files or when that fails (no /proc).
func reopenPollable(f *os.File, mode os.FileMode) *os.File {
	if mode&(os.ModeNamedPipe|os.ModeCharDevice) == 0 {
		return nil
	}
	g, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	if g.SetReadDeadline(time.Time{}) != nil {
		g.Close()
		return nil
	}
	return g
}
