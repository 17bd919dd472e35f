package pipeline

import (
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/isoscope/isoscope/internal/runner"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// showProgress shows the run's progress on standard error while the
// workload runs: the progress bar when Config.Progress is set, the losses
// of the database in lines otherwise. The returned function stops it.
func (r *run) showProgress(p *runner.Progress) func() {
	if r.StatusLines != nil {
		total := r.Plan.Len()
		if r.Endless != nil {
			total = 0
		}
		stopLines := r.StatusLines(func() string { return statusLine(p, total) })
		stopOutages := r.watchOutages(p)
		return func() { stopLines(); stopOutages() }
	}
	if !r.Progress {
		return r.watchOutages(p)
	}
	total := r.Plan.Len()
	if r.Endless != nil {
		total = -1 // a spinner: no end known
	}
	return r.progressBar(p, total)
}

// progressBar draws a bar of finished transactions with the committed
// and aborted counts on standard error; the returned function stops and
// clears it.
func (r *run) progressBar(p *runner.Progress, total int) func() {
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(r.io.Stderr),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("txn"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			desc := fmt.Sprintf("committed %d, aborted %d", p.Committed.Load(), p.Aborted.Load())
			if u := p.Unknown.Load(); u > 0 {
				desc += fmt.Sprintf(", unknown %d", u)
			}
			if n := p.Reconnecting.Load(); n > 0 {
				desc += fmt.Sprintf(", %s reconnecting", textfmt.Count(int(n), "session"))
			}
			bar.Describe(desc)
			_ = bar.Set64(p.Done.Load())
			select {
			case <-done:
				_ = bar.Finish()
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// watchOutages says on standard error, where no progress bar shows it,
// when sessions lose the database and when it answers them all again;
// the returned function stops watching.
func (r *run) watchOutages(p *runner.Progress) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var since time.Time
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			n := p.Reconnecting.Load()
			switch {
			case n > 0 && since.IsZero():
				since = time.Now()
				fmt.Fprintf(r.io.Stderr, "%s lost the database: %s reconnecting (for up to %s)\n", since.Format("15:04:05.0"), textfmt.Count(int(n), "session"), r.ReconnectFor)
			case n == 0 && !since.IsZero():
				fmt.Fprintf(r.io.Stderr, "%s the database answers again, %s after the loss was noticed\n", time.Now().Format("15:04:05.0"), time.Since(since).Round(100*time.Millisecond))
				since = time.Time{}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// statusLine says how far the run is: transactions done (of total, when
// known), committed, aborted, unknown, and sessions reconnecting.
func statusLine(p *runner.Progress, total int) string {
	of := ""
	if total > 0 {
		of = fmt.Sprintf(" of %d", total)
	}
	line := fmt.Sprintf("running: %d%s transactions done, committed %d, aborted %d", p.Done.Load(), of, p.Committed.Load(), p.Aborted.Load())
	if u := p.Unknown.Load(); u > 0 {
		line += fmt.Sprintf(", unknown %d", u)
	}
	if n := p.Reconnecting.Load(); n > 0 {
		line += fmt.Sprintf(", %s reconnecting", textfmt.Count(int(n), "session"))
	}
	return line
}
