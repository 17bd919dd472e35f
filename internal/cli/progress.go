package cli

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// progressMin is the input size from which reading shows a progress bar.
const progressMin = 16 << 20

// StderrTerminalEnv, set to 1, says that standard error is a pipe to a
// supervising isoscope that passes it on to a terminal: progress is drawn
// as on the terminal itself.
const StderrTerminalEnv = "ISOSCOPE_STDERR_TERMINAL"

// terminal reports whether w is a terminal, where progress may be drawn.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if ok && f == os.Stderr && os.Getenv(StderrTerminalEnv) == "1" {
		return true
	}
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// withProgress wraps r, of the given size, in a progress bar drawn on
// standard error when it is a terminal and the input is large; done clears
// the bar.
func withProgress(std IO, r io.Reader, size int64, what string) (wrapped io.Reader, done func()) {
	if size < progressMin || !terminal(std.Stderr) {
		return r, func() {}
	}
	bar := progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(std.Stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return io.TeeReader(r, bar), func() { _ = bar.Finish() }
}
