package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/report/htmlreport"
	"github.com/isoscope/isoscope/internal/report/runplot"
	"github.com/isoscope/isoscope/internal/runner"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// check checks the recorded history and prints the verdict as `check`
// does. A run that was interrupted is still checked (the history is
// complete), without the interrupted context.
func (r *run) check(ctx context.Context, res *runner.Result, cut bool) (Result, error) {
	if res.Summary.Interrupted {
		ctx = context.WithoutCancel(ctx)
	}
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	start := time.Now()
	opts := r.Check
	lvl := r.Level
	stopMeter := func() {}
	if r.CheckMeter != nil {
		ctx, stopMeter = r.CheckMeter(ctx)
	}
	result, err := check.Run(ctx, res.History, lvl, opts)
	stopMeter()
	var unsupported *check.UnsupportedError
	if errors.As(err, &unsupported) && !r.LevelChosen {
		if err := r.writeReport(res, nil); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(r.io.Stdout, "%s not checked: %v\n(the history is in %s; --level chooses another level)\n",
			lvl.Name, strings.ReplaceAll(err.Error(), "\n", "\n  "), r.Out)
		return cutShort(cut), nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", r.Out, err)
	}
	checked := &report.Checked{File: r.Out, History: res.History, Result: result, Elapsed: time.Since(start)}
	if err := r.writeReport(res, checked); err != nil {
		return Result{}, err
	}
	var innodb *InnoDBVerdict
	if InnoDBApplies(r.kind, r.Isolation, opts, &result) {
		innodb = CheckInnoDB(ctx, checked, opts, r.version, lvl)
	}
	if r.JSON {
		enc := json.NewEncoder(r.io.Stdout)
		enc.SetEscapeHTML(false)
		err = enc.Encode(Document{Document: report.NewDocument(checked), InnoDBRR: innodb})
	} else if err = report.Text(r.io.Stdout, checked, r.Shown); err == nil && innodb != nil {
		printInnoDB(r.io.Stdout, innodb)
	}
	if err != nil {
		return Result{}, err
	}
	switch result.Outcome {
	case check.Violated:
		return Result{Status: Violated}, nil
	case check.Undecided:
		return Result{Status: Undecided}, nil
	}
	return cutShort(cut), nil
}

// writeReport writes the HTML report when Config.Report asks for one:
// the run's plots as SVG and PNG files, and the page showing the run, its
// plots and, when the history was checked, the verdict (with result.json
// and cycles.dot).
func (r *run) writeReport(res *runner.Result, checked *report.Checked) error {
	if r.Report == "" {
		return nil
	}
	rp := runplot.FromOutcomes(r.label, res.Start, res.Summary.Elapsed, res.Outcomes)
	rp.AddFaults(res.Start, res.Faults)
	figs, err := runplot.Draw(rp)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if _, err := runplot.WriteFiles(r.Report, figs); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	run := &htmlreport.Run{Description: r.described, Stats: runStats(&res.Summary)}
	for _, f := range figs {
		run.Plots = append(run.Plots, htmlreport.Plot{ID: "plot-" + f.Name, Title: f.Title, Caption: f.Caption, SVG: f.SVG,
			Links: []htmlreport.Link{{Text: "SVG", Href: f.Name + ".svg"}, {Text: "PNG", Href: f.Name + ".png"}}})
	}
	var secs []htmlreport.Section
	var result []byte
	if checked != nil {
		secs = []htmlreport.Section{htmlreport.FromChecked(checked)}
		var b bytes.Buffer
		if err := report.JSON(&b, checked); err != nil {
			return err
		}
		result = b.Bytes()
	}
	if err := htmlreport.WriteDir(r.Report, secs, result, htmlreport.Options{Title: "isoscope run report", Run: run}); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	fmt.Fprintf(r.io.Stderr, "report: %s\n", filepath.Join(r.Report, htmlreport.PageFile))
	return nil
}

// runStats are the run's figures the report shows.
func runStats(s *runner.Summary) []htmlreport.Stat {
	st := []htmlreport.Stat{
		{Label: "elapsed", Value: s.Elapsed.Round(time.Millisecond).String()},
		{Label: "committed", Value: textfmt.Thousands(s.Committed)},
		{Label: "committed/s", Value: textfmt.Thousands(int(math.Round(s.Throughput())))},
		{Label: "aborted", Value: textfmt.Thousands(s.Aborted)},
		{Label: "abort rate", Value: fmt.Sprintf("%.1f%%", 100*s.AbortRate())},
		{Label: "unknown", Value: textfmt.Thousands(s.Unknown)},
	}
	if s.GaveUp > 0 {
		st = append(st, htmlreport.Stat{Label: "given up", Value: textfmt.Thousands(s.GaveUp)})
	}
	if s.Reconnects > 0 {
		st = append(st, htmlreport.Stat{Label: "reconnections", Value: textfmt.Thousands(s.Reconnects)})
	}
	if len(s.Outages) > 0 {
		var longest time.Duration
		for _, o := range s.Outages {
			longest = max(longest, o.Duration())
		}
		st = append(st, htmlreport.Stat{Label: "outages", Value: fmt.Sprintf("%d (longest %s)", len(s.Outages), longest.Round(10*time.Millisecond))})
	}
	return st
}
