// Package runplot draws the plots of a workload run (isoscope run
// --report): committed and aborted transactions per second over time, the
// latency percentiles (p50, p95, p99) of the committed transactions over
// time, and why transactions did not commit, each as SVG and PNG, drawn
// with gonum.org/v1/plot.
//
// Draw is pure: it takes plain data — every transaction's begin and end
// relative to the start of the run, its status and, when it did not
// commit, its abort reason — and returns the pictures. FromOutcomes makes
// that data of the outcomes a run recorded (internal/txnend); WriteFiles
// writes the pictures to a directory.
package runplot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/textfmt"
	"github.com/isoscope/isoscope/internal/txnend"
)

// Txn is one transaction of a run.
type Txn struct {
	// Begin and End are the transaction's first request and last response,
	// relative to the start of the run.
	Begin, End time.Duration
	// Status is committed, aborted or unknown.
	Status history.Status
	// Reason says why a transaction that did not commit ended ("deadlock",
	// "serialization failure", …); committed ones have none.
	Reason string
}

// Run is what the plots show: a run's transactions, in any order.
type Run struct {
	// Label, when set, is a second title line on every plot, saying what
	// ran where (e.g. "mt on PostgreSQL 15.20 at serializable, 8
	// sessions"), so that the pictures stand alone.
	Label string
	// Elapsed is the run's length; 0 means until the last transaction
	// ended.
	Elapsed time.Duration
	Txns    []Txn
	// Reasons are the abort reasons the bar chart shows even when no
	// transaction gave them, in this order; other reasons found in Txns
	// follow, the most frequent first.
	Reasons []string
	// Faults are the faults injected during the run, drawn as shaded
	// windows on the throughput and latency plots.
	Faults []Window
}

// Window is a stretch of a run (relative to its start) named by Label: a
// fault from its beginning to its healing.
type Window struct {
	Start, End time.Duration
	Label      string
}

// AddFaults adds the faults (instants on the clock of the history) as
// windows relative to start, the instant the run started.
func (r *Run) AddFaults(start int64, faults []history.Fault) {
	for _, f := range faults {
		r.Faults = append(r.Faults, Window{Start: time.Duration(f.Begin - start), End: time.Duration(f.End - start), Label: f.Label()})
	}
}

// FromOutcomes returns a run's transactions as the plots take them: the
// instants of outs (on the clock of the history) relative to start, the
// instant the run started, and the abort class of each transaction that
// did not commit as its reason, with every class of
// txnend.AbortClasses among the Reasons. label is the plots' second
// title line, elapsed the run's length.
func FromOutcomes(label string, start int64, elapsed time.Duration, outs []txnend.Record) *Run {
	r := &Run{Label: label, Elapsed: elapsed, Txns: make([]Txn, len(outs))}
	for _, c := range txnend.AbortClasses {
		r.Reasons = append(r.Reasons, c.String())
	}
	for i, o := range outs {
		t := &r.Txns[i]
		t.Begin, t.End, t.Status = time.Duration(o.Begin-start), time.Duration(o.End-start), o.Status
		if o.Status != history.Committed {
			t.Reason = o.Abort.String()
		}
	}
	return r
}

// The figures' names: the base names of their files.
const (
	Throughput = "throughput"
	Latency    = "latency"
	Aborts     = "aborts"
)

// Figure is one plot, drawn.
type Figure struct {
	// Name is the base name of the figure's files (Throughput, Latency or
	// Aborts).
	Name string
	// Title is the plot's title; Caption says how to read it (bucket
	// width, totals).
	Title, Caption string
	// SVG is a standalone SVG document; PNG the same picture as a PNG
	// image.
	SVG, PNG []byte
}

// The size of every figure and the resolution of its PNG.
const (
	width  = 8 * vg.Inch
	height = 3.6 * vg.Inch
	pngDPI = 120
)

// Draw draws the run's plots: Throughput, Latency and Aborts, in that
// order.
func Draw(r *Run) ([]Figure, error) {
	bs := r.buckets()
	bw := formatDuration(bs[0].width)
	committed, aborted, unknown := 0, 0, 0
	for i := range bs {
		committed += bs[i].committed
		aborted += bs[i].aborted
		unknown += bs[i].unknown
	}
	reasons := r.reasons()
	figs := []struct {
		name, title, caption string
		plot                 func(title string) (*plot.Plot, error)
	}{
		{Throughput, "Transactions per second",
			fmt.Sprintf("Committed, aborted and unknown transactions per second, counted in %s buckets by the instant each ended (%s committed, %s aborted, %s unknown in %s).",
				bw, textfmt.Thousands(committed), textfmt.Thousands(aborted), textfmt.Thousands(unknown), formatDuration(r.elapsed())),
			func(t string) (*plot.Plot, error) { return throughputPlot(t, r, bs) }},
		{Latency, "Latency of committed transactions",
			fmt.Sprintf("p50, p95 and p99 of the time from the first request to the commit's acknowledgement, per %s bucket of commit instants; log scale. A bucket with fewer than 100 transactions shows its slowest as p99.", bw),
			func(t string) (*plot.Plot, error) { return latencyPlot(t, r, bs) }},
		{Aborts, "Why transactions did not commit",
			fmt.Sprintf("Transactions the database aborted, and those whose outcome is unknown (the connection broke or the run ended during COMMIT), by reason: %s of %s.",
				textfmt.Thousands(aborted+unknown), textfmt.Thousands(committed+aborted+unknown)),
			func(t string) (*plot.Plot, error) { return abortPlot(t, r, reasons) }},
	}
	out := make([]Figure, 0, len(figs))
	for _, f := range figs {
		title := f.title
		if r.Label != "" {
			title += "\n" + r.Label
		}
		p, err := f.plot(title)
		if err != nil {
			return nil, fmt.Errorf("runplot: %s: %w", f.name, err)
		}
		svg, png, err := render(p)
		if err != nil {
			return nil, fmt.Errorf("runplot: %s: %w", f.name, err)
		}
		out = append(out, Figure{Name: f.name, Title: f.title, Caption: f.caption, SVG: svg, PNG: png})
	}
	return out, nil
}

// WriteFiles writes each figure to dir as NAME.svg and NAME.png, creating
// dir if need be, and returns the files' names.
func WriteFiles(dir string, figs []Figure) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var names []string
	for _, f := range figs {
		for _, file := range []struct {
			ext  string
			data []byte
		}{{".svg", f.SVG}, {".png", f.PNG}} {
			name := filepath.Join(dir, f.Name+file.ext)
			if err := os.WriteFile(name, file.data, 0o644); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// render draws p as SVG and as PNG. gonum/plot panics on data it cannot
// draw; render turns that into an error.
func render(p *plot.Plot) (svg, png []byte, err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("drawing: %v", e)
		}
	}()
	// A margin all round: text at the edges is measured with the fonts'
	// metrics, which renderers do not follow to the point.
	margin := vg.Points(6)
	frame := func(c vg.CanvasSizer) draw.Canvas { return draw.Crop(draw.New(c), margin, -margin, margin, -margin) }
	sc := vgsvg.New(width, height)
	p.Draw(frame(sc))
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return nil, nil, err
	}
	ic := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(pngDPI))
	p.Draw(frame(ic))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return nil, nil, err
	}
	return sb.Bytes(), pb.Bytes(), nil
}

// formatDuration renders d briefly: 5 ms, 200 ms, 1 s, 2.5 s, 1m30s.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%.3g ms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.3g s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
