package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/report/htmlreport"
)

// reportPage is the report directory's page.
const reportPage = htmlreport.PageFile

// reportCommand is `isoscope report RESULT.json HISTORY… [--out DIR]`.
type reportCommand struct {
	io      IO
	Out     string
	Format  string
	PerKind int
	// Timeout bounds the reading (0: no bound).
	Timeout time.Duration
}

// newReportCommand returns the report command, which renders the HTML
// report of a saved JSON result and the histories it is about.
func newReportCommand(std IO) *cobra.Command {
	c := &reportCommand{io: std}
	cmd := &cobra.Command{
		Use: "report [flags] RESULT.json HISTORY…",
		Example: `  # an HTML page for a result check --json wrote, beside its history
  isoscope report --out report result.json history.jsonl`,
		Short: "render the HTML report of a saved result",
		Long: `report renders the HTML report that check --report writes, from a result
saved with check --json (or a report's result.json) and the histories it is
about, so that CI jobs can keep the JSON and render later. With several
histories, each is matched to the result's document of the same file name.
It writes DIR/index.html, DIR/result.json, when there are cycles
DIR/cycles.dot, and a picture of each anomaly shown, as SVG and DOT
(DIR/lost-update-1.svg, DIR/lost-update-1.dot). Exit status: 0 the report was written (whatever the
verdict), 2 bad usage or input, 3 reading was interrupted (SIGINT, SIGTERM,
SIGHUP) or timed out (--timeout), and nothing was written.`,
		Args: wantArgs(2, -1, "a result and the histories it judged", "(the result.json of check --json, then the history files in its order)"),
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args[0], args[1:]) },
	}
	f := cmd.Flags()
	f.StringVar(&c.Out, "out", "isoscope-report", "the directory to write the report to")
	f.StringVar(&c.Format, "format", "auto", "input format of the histories: auto or a format name (see check --help)")
	f.DurationVar(&c.Timeout, "timeout", 0, "give up reading the result and the histories after this long, writing nothing, exit 3 (e.g. 90s; 0: no limit)")
	f.IntVar(&c.PerKind, "max-shown", htmlreport.DefaultPerKind, "how many anomalies of each kind the page shows (0: the counts only; -1: all)")
	return cmd
}

// Run reads the result and the histories, resolves each document against
// its history into the checked result it was rendered from, and writes
// the report directory as check --report does.
func (c *reportCommand) Run(ctx context.Context, resultFile string, files []string) error {
	if err := checkFormatFlag("--format", c.Format); err != nil {
		return err
	}
	shown, err := maxShown(c.PerKind)
	if err != nil {
		return badInput(err)
	}
	ctx, cancel := withTimeout(ctx, c.Timeout)
	defer cancel()
	raw, err := readInput(ctx, c.io, resultFile)
	if err != nil {
		return readError(ctx, resultFile, err)
	}
	docs, err := report.ReadDocuments(bytes.NewReader(raw))
	if err != nil {
		return badInput(fmt.Errorf("%s: %w", resultFile, err))
	}
	secs := make([]htmlreport.Section, 0, len(files))
	for _, name := range files {
		d, err := matchDocument(docs, name, len(files))
		if err != nil {
			return badInput(fmt.Errorf("%s: %w", resultFile, err))
		}
		h, err := readHistory(ctx, c.io, name, c.Format)
		if err != nil {
			return readError(ctx, name, err)
		}
		c, err := report.Resolve(name, h, d)
		if err != nil {
			return badInput(fmt.Errorf("%s with %s: %w", resultFile, name, err))
		}
		secs = append(secs, htmlreport.FromChecked(c))
	}
	if err := htmlreport.WriteDir(c.Out, secs, raw, htmlreport.Options{PerKind: shown.PerKind, CountsOnly: shown.CountsOnly}); err != nil {
		return badInput(err)
	}
	fmt.Fprintf(c.io.Stderr, "isoscope: report written to %s\n", filepath.Join(c.Out, reportPage))
	return nil
}

// matchDocument finds the document of history name: the only one when one
// result goes with one history, else the one whose file is name (or has
// its base name).
func matchDocument(docs []*report.Document, name string, histories int) (*report.Document, error) {
	if len(docs) == 1 && histories == 1 {
		return docs[0], nil
	}
	for _, d := range docs {
		if d.File == name {
			return d, nil
		}
	}
	var found *report.Document
	for _, d := range docs {
		if d.File != "" && filepath.Base(d.File) == filepath.Base(name) {
			if found != nil {
				return nil, fmt.Errorf("several documents are about a file named %s", filepath.Base(name))
			}
			found = d
		}
	}
	if found == nil {
		var names []string
		for _, d := range docs {
			names = append(names, d.File)
		}
		return nil, fmt.Errorf("no document for %s (the result is about %q)", name, names)
	}
	return found, nil
}

// writeCheckArtifacts writes what check's --report and --dot ask for, for
// the histories it has just checked. The report's result.json is what
// --json prints for them.
func writeCheckArtifacts(reportDir, dotFile string, checked []*report.Checked) error {
	if reportDir == "" && dotFile == "" {
		return nil
	}
	secs := make([]htmlreport.Section, len(checked))
	var result bytes.Buffer
	for i, c := range checked {
		secs[i] = htmlreport.FromChecked(c)
		if err := report.JSON(&result, c); err != nil {
			return err
		}
	}
	if dotFile != "" {
		var b bytes.Buffer
		if err := htmlreport.WriteDOT(&b, secs, htmlreport.Options{}); err != nil {
			return err
		}
		if err := os.WriteFile(dotFile, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--dot: %w", err)
		}
	}
	if reportDir != "" {
		if err := htmlreport.WriteDir(reportDir, secs, result.Bytes(), htmlreport.Options{}); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
	}
	return nil
}
