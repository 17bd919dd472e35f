package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/textfmt"
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

// meterAfter is how long a check runs before its progress is shown.
const meterAfter = time.Second

// withMeter shows, on standard error when it is a terminal, what a check
// running under the returned context is doing: after a second, a line
// with its phase and, while the solver searches, the encoding's size and
// the search's conflicts, refreshed until done (which clears it) is
// called. Elsewhere it shows nothing.
func withMeter(ctx context.Context, std IO, what string) (context.Context, func()) {
	if !terminal(std.Stderr) {
		return ctx, func() {}
	}
	m := &checker.Meter{}
	ctx = checker.WithMeter(ctx, m)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		start := time.Now()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		var bar *progressbar.ProgressBar
		for {
			select {
			case <-done:
				if bar != nil {
					_ = bar.Finish()
				}
				return
			case <-t.C:
			}
			if time.Since(start) < meterAfter {
				continue
			}
			if bar == nil {
				bar = progressbar.NewOptions(-1,
					progressbar.OptionSetWriter(std.Stderr),
					progressbar.OptionSpinnerType(14),
					progressbar.OptionClearOnFinish(),
					progressbar.OptionSetElapsedTime(true),
				)
			}
			bar.Describe(meterLine(what, m))
			_ = bar.Add(1)
		}
	}()
	return ctx, func() { close(done); <-stopped }
}

// meterLine describes m's state: "checking h.jsonl: serializable, checker
// sat: solving 120,000 variables, 480,000 clauses: 3,456 conflicts".
func meterLine(what string, m *checker.Meter) string {
	s := what
	if p := m.Phase(); p != "" {
		s += ": " + p
	}
	if n := m.Solves.Load(); n > 0 {
		s += fmt.Sprintf(" (search %d: %s variables, %s clauses, %s conflicts)", n,
			textfmt.Thousands(int(m.Vars.Load())), textfmt.Thousands(int(m.Clauses.Load())), textfmt.Thousands(int(m.Conflicts.Load())))
	}
	return s
}
