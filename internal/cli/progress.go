package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// progressMin is the input size from which reading shows a progress bar.
const progressMin = 16 << 20

// The --progress modes: auto draws a progress line, redrawn in place, on
// a terminal and nothing elsewhere; always writes a plain status line
// every progressInterval wherever standard error goes (CI logs, a pipe);
// never shows nothing.
const (
	progressAuto   = "auto"
	progressAlways = "always"
	progressNever  = "never"
)

// progressFlagHelp is the help of --progress.
const progressFlagHelp = "progress on standard error: auto (a line redrawn in place on a terminal, nothing elsewhere), always (a plain status line every 5 s and one as each phase ends, wherever standard error goes: CI logs, a pipe; " +
	progressIntervalEnv + " sets another interval, e.g. 500ms), never"

// progressIntervalEnv names the environment variable that sets how often
// --progress always writes its line (a Go duration such as 500ms).
const progressIntervalEnv = "ISOSCOPE_PROGRESS_INTERVAL"

// defaultProgressInterval is how often --progress always writes a line.
const defaultProgressInterval = 5 * time.Second

// checkProgress refuses a --progress mode that is not one of the three.
func checkProgress(mode string) error {
	switch mode {
	case progressAuto, progressAlways, progressNever:
		return nil
	}
	return fmt.Errorf("--progress %q: want auto, always or never", mode)
}

// progressInterval is how often --progress always writes its line:
// defaultProgressInterval, or what progressIntervalEnv says.
func progressInterval() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(progressIntervalEnv)); err == nil && d > 0 {
		return d
	}
	return defaultProgressInterval
}

// drawsProgress reports whether mode draws a progress line in place on w.
func drawsProgress(mode string, w io.Writer) bool {
	return mode == progressAuto && terminal(w)
}

// statusLines writes "isoscope: LINE (ELAPSED)" on its own line to w
// every progressInterval, LINE what line returns then, and once more when
// stop is called, so that a phase shorter than the interval still leaves
// its line (and its duration) in a log.
func statusLines(w io.Writer, line func() string) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		start := time.Now()
		t := time.NewTicker(progressInterval())
		defer t.Stop()
		for {
			ended := false
			select {
			case <-done:
				ended = true
			case <-t.C:
			}
			fmt.Fprintf(w, "isoscope: %s (%.1fs)\n", line(), time.Since(start).Seconds())
			if ended {
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// serialWriter is a writer several goroutines may write to at once: one
// write at a time.
type serialWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *serialWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// mib writes a size in bytes in MiB: "12.3 MiB".
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

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

// withProgress shows how much of r, of the given size (0: unknown), is
// read as mode says: under auto, a progress bar drawn on standard error
// when it is a terminal and the input is large; under always, status
// lines. done clears the bar or ends the lines.
func withProgress(std IO, mode string, r io.Reader, size int64, what string) (wrapped io.Reader, done func()) {
	if mode == progressAlways {
		cr := &countingReader{r: r}
		return cr, statusLines(std.Stderr, func() string {
			if size > 0 {
				return fmt.Sprintf("%s: %s of %s", what, mib(cr.n.Load()), mib(size))
			}
			return fmt.Sprintf("%s: %s", what, mib(cr.n.Load()))
		})
	}
	if size < progressMin || !drawsProgress(mode, std.Stderr) {
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

// withMeter shows on standard error what a check running under the
// returned context is doing — its phase and, while the solver searches,
// the encoding's size and the search's conflicts — until done is called:
// under auto on a terminal, after a second, a line refreshed in place
// (done clears it); under always, status lines.
func withMeter(ctx context.Context, std IO, mode string, what string) (context.Context, func()) {
	if mode != progressAlways && !drawsProgress(mode, std.Stderr) {
		return ctx, func() {}
	}
	m := &checker.Meter{}
	ctx = checker.WithMeter(ctx, m)
	if mode == progressAlways {
		return ctx, statusLines(std.Stderr, func() string { return meterLine(what, m) })
	}
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
