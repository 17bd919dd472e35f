package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

// checkCommand is `isoscope check [flags] FILE…`.
type checkCommand struct {
	io      IO
	Level   string
	Checker string
	Format  string
	JSON    bool
	Timeout time.Duration
	PerKind int
	NoHolds bool
	Report  string
	Dot     string
	modelFlags
}

func newCheckCommand(std IO) *cobra.Command {
	c := &checkCommand{io: std}
	cmd := &cobra.Command{
		Use:   "check [flags] FILE…",
		Short: "check histories against an isolation level",
		Long: `check reads one or more histories ("-" is standard input) and checks each
against an isolation level. Exit status: 0 every history satisfies the level,
1 a violation was found, 2 bad usage or input, 3 undecided (timeout).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args) },
	}
	f := cmd.Flags()
	f.StringVar(&c.Level, "level", "ser", "isolation level: strict-serializable (sser), serializable (ser), snapshot-isolation (si), repeatable-read (rr), pl-fcv, pl-2+, cursor-stability (cs), read-committed (rc), read-uncommitted (ru)")
	f.StringVar(&c.Checker, "checker", "auto", fmt.Sprintf("algorithm: auto or one of %v", check.Names()))
	f.StringVar(&c.Format, "format", "auto", fmt.Sprintf("input format: auto or one of %v", registry.Names()))
	f.BoolVar(&c.JSON, "json", false, "print the result as JSON (one object per history, one per line)")
	f.DurationVar(&c.Timeout, "timeout", 0, "give up after this long with outcome unknown (e.g. 90s; 0: no limit)")
	f.IntVar(&c.PerKind, "max-shown", 3, "how many anomalies of each kind the text output shows")
	f.BoolVar(&c.NoHolds, "no-holds", false, "on a violation, do not check which weaker levels still hold")
	f.StringVar(&c.Report, "report", "", "write an HTML report (index.html, result.json, cycles.dot) to this directory")
	c.modelFlags.register(f)
	f.StringVar(&c.Dot, "dot", "", "write the anomalies' cycles to this file as Graphviz DOT: one digraph, a cluster per cycle (the first 25 of each kind)")
	return cmd
}

// Run checks every file; output is written only once every file has been
// read and checked, so bad input anywhere gives an error and no verdict.
func (c *checkCommand) Run(ctx context.Context, files []string) error {
	lvl, err := level.Lookup(c.Level)
	if err != nil {
		return badInput(err)
	}
	opts := check.Options{Checker: c.Checker, Holds: !c.NoHolds}
	if err := c.modelFlags.options(&opts); err != nil {
		return badInput(err)
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var out bytes.Buffer
	var all []*report.Checked // kept for --report and --dot
	worst := ExitHolds
	for _, name := range files {
		h, err := c.read(name)
		if err != nil {
			return badInput(err)
		}
		start := time.Now()
		res, err := check.Run(ctx, h, lvl, opts)
		if err != nil {
			return badInput(fmt.Errorf("%s: %w", name, err))
		}
		checked := &report.Checked{File: name, History: h, Result: res, Elapsed: time.Since(start)}
		if c.JSON {
			err = report.JSON(&out, checked, len(files) > 1)
		} else {
			err = report.Text(&out, checked, report.TextOptions{PerKind: c.PerKind, ShowFile: len(files) > 1})
		}
		if err != nil {
			return err
		}
		if c.Report != "" || c.Dot != "" {
			all = append(all, checked)
		}
		switch {
		case res.Outcome == check.Violation:
			worst = ExitViolation
		case res.Outcome == check.Unknown && worst == ExitHolds:
			worst = ExitUnknown
		}
	}
	if err := writeCheckArtifacts(c.Report, c.Dot, all); err != nil {
		return badInput(err)
	}
	if _, err := out.WriteTo(c.io.Stdout); err != nil {
		return err
	}
	if worst != ExitHolds {
		return &exitError{code: worst}
	}
	return nil
}

// read opens name ("-" for standard input) and reads it in the chosen or
// detected format.
func (c *checkCommand) read(name string) (*history.History, error) {
	return readHistory(c.io, name, c.Format)
}

func readHistory(std IO, name, formatName string) (*history.History, error) {
	wrap := func(r io.Reader, size int64) (io.Reader, func()) {
		return withProgress(std, r, size, "reading "+name)
	}
	return registry.Open(name, formatName, std.Stdin, wrap)
}
