package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/jepsen"
	"github.com/isoscope/isoscope/internal/format/knossos"
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
	// MemoryMB bounds the process's memory while it checks (0: no
	// bound; see boundMemory).
	MemoryMB int
	PerKind  int
	// Limits bound what reading takes in (--max-line-mb, --max-input-mb,
	// --max-gzip-ratio).
	Limits  format.Limits
	NoHolds bool
	Report  string
	Dot     string
	// InitialValue, when set, is the value every register starts at
	// (--initial-value).
	InitialValue string
	// KnossosNilReads takes a register read of nil as Knossos does, as a
	// read of any value (--knossos-nil-reads).
	KnossosNilReads bool
	// Progress is --progress: auto, always or never.
	Progress string
	modelFlags
	// levelSet says --level was given: a level the input format implies
	// (history.Header.Implies) is used only without it.
	levelSet bool
	// CompareResults prints the verdict of Jepsen's checkers from the
	// results.edn of the run (jepsenstore.go) beside isoscope's.
	CompareResults bool
	// stores holds what a Jepsen store adds to a file's result.
	stores map[*report.Checked]*storeExtra
}

func newCheckCommand(std IO) *cobra.Command {
	c := &checkCommand{io: std}
	cmd := &cobra.Command{
		Use: "check [flags] FILE…",
		Example: `  # a history at snapshot isolation (exit 1 and the cycles if it is violated)
  isoscope check --level si history.jsonl

  # as JSON, and an HTML report with a picture of each anomaly
  isoscope check --level ser --json history.jsonl
  isoscope check --level ser --report report history.jsonl

  # a history another tool recorded, the format detected; Elle's level names work too
  isoscope check --level strong-session-snapshot-isolation history.edn

  # the latest run of a Jepsen test, with Elle's or Knossos's verdict from its results.edn beside
  isoscope check --compare-results store/my-test/latest

  # stop after a minute or 2 GB, whatever is decided by then (exit 3: undecided)
  isoscope check --level ser --timeout 1m --memory-mb 2000 history.jsonl`,
		Short: "check histories against an isolation level",
		Long: `check reads one or more histories ("-" is standard input) and checks each
against an isolation level (default serializable; knossos and porcupine
register logs, whose own checkers judge linearizability, default to
strict-serializable). Exit status: 0 every history satisfies the level,
1 a violation was found, 2 bad usage or input, 3 undecided (timeout,
interrupted by SIGINT or SIGTERM, a resource limit such as --memory-mb,
or strict-serializable without begin and end instants and no
serializability violation). With several files each gets its own result, a file that
cannot be read or checked included, and the status is the most severe of
theirs: 1, then 2, then 3, then 0.

A directory that is a Jepsen store is read as its run: a run directory
(history.edn, or history.txt without it), a test directory or the store
itself through its latest link, or a test directory holding one run.
--compare-results also reads the run's results.edn and says whether
Jepsen's checkers agree; it never changes the exit status.`,
		Args: wantArgs(1, -1, "a history", "(a file, a directory of a Cobra or Viper log, a Jepsen store, or - for standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.levelSet = cmd.Flags().Changed("level")
			return c.Run(cmd.Context(), args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Level, "level", "ser", "isolation level: strict-serializable (sser), serializable (ser), plain-serializable (plain-ser, without session order), snapshot-isolation (si), generalized-snapshot-isolation (gsi, without session order), prefix (pc), causal (cc), read-atomic (ra), rc-session, repeatable-read (rr), pl-fcv, pl-2+, cursor-stability (cs), read-committed (rc), read-uncommitted (ru); docs/levels.md has the aliases")
	f.StringVar(&c.Checker, "checker", "auto", "algorithm: auto or one of "+strings.Join(check.Names(), ", "))
	f.StringVar(&c.Format, "format", "auto", "input format: auto or one of "+strings.Join(registry.Names(), ", "))
	f.BoolVar(&c.JSON, "json", false, "print the result as JSON (one object per history, one per line)")
	f.DurationVar(&c.Timeout, "timeout", 0, "give up after this long with outcome unknown (e.g. 90s; 0: no limit)")
	f.IntVar(&c.MemoryMB, "memory-mb", defaultMemoryMB(), "bound the check's memory to this many MB (Go's soft limit; the solver refuses to build past its share, and past the bound the check stops) with outcome unknown, exit 3; 0: no bound. Default: GOMEMLIMIT if set, else 3/4 of the machine's memory")
	f.Int64Var(&c.Limits.MaxLine, "max-line-mb", format.DefaultMaxLine>>20, "the longest line a line-oriented history may have, in MiB (longer: bad input naming the line); -1: no limit")
	f.Int64Var(&c.Limits.MaxDocument, "max-input-mb", format.DefaultMaxDocument>>20, "the largest history a format read as one document (TimeKiller, dbcop) may be, in MiB; -1: no limit")
	f.Int64Var(&c.Limits.MaxGzipRatio, "max-gzip-ratio", format.DefaultMaxGzipRatio, "how many times its compressed size a gzip history may expand to (checked past 64 MiB); -1: no limit")
	f.IntVar(&c.PerKind, "max-shown", 3, maxShownHelp)
	f.BoolVar(&c.NoHolds, "no-holds", false, "on a violation, do not check which weaker levels still hold")
	f.StringVar(&c.Report, "report", "", "write an HTML report (index.html, result.json, cycles.dot, and a picture of each anomaly as SVG and DOT, e.g. lost-update-1.svg) to this directory")
	inGroup(f, groupLimits, "max-line-mb", "max-input-mb", "max-gzip-ratio")
	c.modelFlags.register(f)
	inGroup(f, groupModel, "own-reads", "module")
	f.BoolVar(&c.CompareResults, "compare-results", false, "also read Jepsen's results.edn (in the store run given, or beside the history file) and print Elle's or Knossos's verdict beside isoscope's, saying whether they agree; the exit status is isoscope's alone")
	f.StringVar(&c.InitialValue, "initial-value", "", "the value every register of the history starts at, as an EDN value (0, \"0\", :a), where the history gives none: a knossos model such as (cas-register 0) starts at 0, and a read of it is then no thin-air read. Default: registers start absent (a read of nil). Not for list-append histories")
	f.BoolVar(&c.KnossosNilReads, "knossos-nil-reads", false, "in a knossos register history, take a read that returned nil as Knossos's models do, as a read of any value (it constrains nothing), not as a read of the register's absent state (after a completed write, a stale read)")
	inGroup(f, groupModel, "initial-value", "knossos-nil-reads")
	f.StringVar(&c.Progress, "progress", progressAuto, progressFlagHelp)
	f.StringVar(&c.Dot, "dot", "", "write the anomalies' cycles to this file as Graphviz DOT: one digraph, a cluster per cycle (the first 25 of each kind)")
	return cmd
}

// Run checks every file. Output is written once every file has been
// read and checked. With one file, bad input (or a history no checker
// decides) is an error and prints no result. With several, each file gets
// its own result: one that cannot be read or checked is reported as such
// (its error also goes to standard error at once) and the others are
// still checked; the exit status is then the most severe (severity).
func (c *checkCommand) Run(ctx context.Context, files []string) error {
	lvl, err := level.Lookup(c.Level)
	if err != nil {
		return blameFlag("--level", err)
	}
	if err := checkFormatFlag("--format", c.Format); err != nil {
		return err
	}
	if err := checkCheckerFlag(c.Checker); err != nil {
		return err
	}
	opts := check.Options{Checker: c.Checker, Holds: !c.NoHolds}
	if err := c.modelFlags.options(&opts); err != nil {
		return badInput(err)
	}
	if err := checkProgress(c.Progress); err != nil {
		return badInput(err)
	}
	shown, err := maxShown(c.PerKind)
	if err != nil {
		return badInput(err)
	}
	if c.MemoryMB < 0 {
		return badInput(fmt.Errorf("--memory-mb %d: want a number of megabytes, or 0 for no bound", c.MemoryMB))
	}
	ctx, cancel := withTimeout(ctx, c.Timeout)
	defer cancel()
	if c.MemoryMB > 0 {
		var release func()
		ctx, release = boundMemory(ctx, c.MemoryMB)
		defer release()
		opts.MemoryLimit = goShare(c.MemoryMB)
	}
	several := len(files) > 1
	var out bytes.Buffer
	var all []*report.Checked // kept for --report and --dot
	worst := ExitHolds
	for _, name := range files {
		checked, err := c.checkFile(ctx, name, lvl, opts)
		if err != nil {
			if !several {
				return badInput(err)
			}
			fmt.Fprintf(c.io.Stderr, "isoscope: %v\n", err)
			checked = &report.Checked{File: name, Result: check.Result{Level: lvl}, Err: err}
		}
		shown.ShowFile = several
		if err = c.writeResult(&out, checked, shown); err != nil {
			return err
		}
		if checked.Err != nil {
			worst = moreSevere(worst, ExitBadInput)
			continue
		}
		if c.Report != "" || c.Dot != "" {
			all = append(all, checked)
		}
		switch checked.Result.Outcome {
		case check.Violated:
			worst = moreSevere(worst, ExitViolation)
		case check.Undecided:
			worst = moreSevere(worst, ExitUnknown)
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

// severity ranks the exit statuses of several files' results, most
// severe first: the status of a check of several files is the most
// severe of theirs. A violation comes first: it is a finding about the
// database that a bad file elsewhere must not hide (a script that takes
// status 2 for a broken harness would miss it), and status 1 still means
// exactly what the contract says, that a violation was found. Bad input
// comes next, before undecided: a file was not checked at all, and a
// script that retries an undecided check with a longer timeout would not
// mend it. The results on standard output say which file gave which.
var severity = []int{ExitViolation, ExitBadInput, ExitUnknown, ExitHolds}

// moreSevere returns whichever of the exit statuses a and b is more
// severe (severity).
func moreSevere(a, b int) int {
	for _, s := range severity {
		if a == s || b == s {
			return s
		}
	}
	return a
}

// checkFile reads and checks one file at lvl, or at the level its format
// implies when --level was not given. The error names the file.
func (c *checkCommand) checkFile(ctx context.Context, name string, lvl level.Level, opts check.Options) (*report.Checked, error) {
	readStart := time.Now()
	name, run, err := storeRun(name, c.Format)
	if err != nil {
		return nil, err
	}
	var h *history.History
	if run != nil {
		h, err = c.readRun(ctx, run)
	} else {
		h, err = c.read(ctx, name)
	}
	if err != nil {
		if why := readStopped(ctx, "the history"); why != "" {
			// The deadline passed, or a signal came, while reading:
			// undecided, as in the check.
			return &report.Checked{File: name, History: history.New(), Elapsed: time.Since(readStart),
				Result: check.Result{Level: lvl, Outcome: check.Undecided, Reason: why}}, nil
		}
		if !strings.Contains(err.Error(), name) {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	if c.KnossosNilReads {
		if h.Header.ImpliedBy != "knossos" {
			return nil, fmt.Errorf("%s: --knossos-nil-reads: not a knossos register history", name)
		}
		knossos.AnyValueNilReads(h)
		if len(h.Txns) == 0 {
			return nil, fmt.Errorf("%s: no transactions: every operation is a read of nil, and --knossos-nil-reads leaves them out", name)
		}
	}
	if c.InitialValue != "" {
		if err := startAt(h, c.InitialValue); err != nil {
			return nil, fmt.Errorf("%s: --initial-value: %w", name, err)
		}
	}
	checked := &report.Checked{File: name, History: h}
	if !c.levelSet && h.Header.Implies != "" {
		implied, err := level.Lookup(h.Header.Implies)
		if err != nil {
			return nil, fmt.Errorf("%s: the %s format implies level %q: %w", name, h.Header.ImpliedBy, h.Header.Implies, err)
		}
		if implied.ID != lvl.ID {
			lvl, checked.ImpliedBy = implied, h.Header.ImpliedBy
		}
	}
	start := time.Now()
	ctx, stopMeter := withMeter(ctx, c.io, c.Progress, "checking "+name)
	res, err := check.Run(ctx, h, lvl, opts)
	stopMeter()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	checked.Result, checked.Elapsed = res, time.Since(start)
	if err := c.noteStore(checked, run); err != nil {
		return nil, err
	}
	return checked, nil
}

// read opens name ("-" for standard input) and reads it in the chosen or
// detected format, until ctx is done.
func (c *checkCommand) read(ctx context.Context, name string) (*history.History, error) {
	return readHistoryContext(ctx, c.io, name, c.Format, c.readLimits(), c.Progress)
}

// readLimits are the reading limits the flags give: a size in MiB turned
// into bytes (0 or a negative number keeps its meaning: the default, no
// limit).
func (c *checkCommand) readLimits() format.Limits {
	l := c.Limits
	for _, v := range []*int64{&l.MaxLine, &l.MaxDocument} {
		if *v > 0 {
			*v <<= 20
		}
	}
	return l
}

// withTimeout bounds ctx by a --timeout d (0 or less: no bound).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return ctx, func() {}
}

// maxShownHelp is the help of check's and run's --max-shown.
const maxShownHelp = "how many anomalies of each kind the text output shows (0: the counts only; -1: all)"

// maxShown turns --max-shown n into the text report's options: n
// anomalies of each kind, 0 the counts only, -1 all. Below -1 is bad
// input.
func maxShown(n int) (report.TextOptions, error) {
	switch {
	case n == 0:
		return report.TextOptions{CountsOnly: true}, nil
	case n < -1:
		return report.TextOptions{}, fmt.Errorf("--max-shown %d: want a number of anomalies, 0 for the counts only or -1 for all", n)
	}
	return report.TextOptions{PerKind: n}, nil
}

// readStopped says why reading what stopped when ctx is done (a read
// that fails then failed for that): "interrupted while reading the
// history" (a signal), "timed out while reading the history" (a
// deadline), or the cause ctx was cancelled with (a resource limit). It
// is "" while ctx is not done.
func readStopped(ctx context.Context, what string) string {
	switch cause := context.Cause(ctx); {
	case ctx.Err() == nil:
		return ""
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timed out while reading " + what
	case cause != nil && !errors.Is(cause, context.Canceled):
		return fmt.Sprintf("stopped while reading %s: %v", what, cause)
	}
	return "interrupted while reading " + what
}

// readError is the error of a command whose read of name failed: exit 3,
// undecided, when ctx stopped it (readStopped), else bad input.
func readError(ctx context.Context, name string, err error) error {
	if why := readStopped(ctx, name); why != "" {
		return &exitError{code: ExitUnknown, err: errors.New("undecided: " + why)}
	}
	return badInput(err)
}

// openInput opens name ("-": standard input) for reading until ctx is
// done (format.OpenContext, format.Interruptible); closeInput closes it.
func openInput(ctx context.Context, std IO, name string) (r io.Reader, closeInput func(), err error) {
	if name == "-" {
		if f, ok := std.Stdin.(*os.File); ok {
			r, release := format.Interruptible(ctx, f)
			return r, release, nil
		}
		return format.ContextReader(ctx, std.Stdin), func() {}, nil
	}
	return openFile(ctx, name)
}

// openFile opens the file name for reading until ctx is done
// (format.OpenContext, format.Interruptible); closeFile closes it.
func openFile(ctx context.Context, name string) (r io.Reader, closeFile func(), err error) {
	f, err := format.OpenContext(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	r, release := format.Interruptible(ctx, f)
	return r, func() { release(); f.Close() }, nil
}

// readInput reads the whole of name ("-": standard input) until ctx is
// done.
func readInput(ctx context.Context, std IO, name string) ([]byte, error) {
	r, closeInput, err := openInput(ctx, std, name)
	if err != nil {
		return nil, err
	}
	defer closeInput()
	return io.ReadAll(r)
}

// readHistory reads name ("-": standard input) until ctx is done, with
// the default limits.
func readHistory(ctx context.Context, std IO, name, formatName string) (*history.History, error) {
	return readHistoryContext(ctx, std, name, formatName, format.Limits{}, progressAuto)
}

// readHistoryContext reads name within limits (zero fields: the
// defaults), stopping when ctx is done, showing progress as the
// --progress mode says. A torn last line (the recorder died while writing it) is
// left out with a warning on standard error: the history before it is
// what the database did, and refusing it all would lose the run.
func readHistoryContext(ctx context.Context, std IO, name, formatName string, limits format.Limits, progress string) (*history.History, error) {
	wrap := func(r io.Reader, size int64) (io.Reader, func()) {
		return withProgress(std, progress, r, size, "reading "+name)
	}
	o, err := registry.OpenWith(name, formatName, registry.Options{Stdin: std.Stdin, Wrap: wrap, Context: ctx, AllowTorn: true, Limits: limits})
	if err != nil {
		return nil, err
	}
	for _, w := range o.Warnings {
		fmt.Fprintf(std.Stderr, "isoscope: warning: %v\n", w)
	}
	return o.History, nil
}

// startAt makes every key of h that has no initial value start at the
// value text (an EDN value); a list-append history's lists start empty.
func startAt(h *history.History, text string) error {
	v, err := jepsen.ParseValue(text)
	if err != nil {
		return err
	}
	if v.IsNull() {
		return fmt.Errorf("nil: registers start absent without the flag")
	}
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Append || op.Kind == history.ReadList {
				return fmt.Errorf("the history is of lists (list-append), which start empty; the flag gives registers a value")
			}
		}
	}
	if h.Header.Initial.Values == nil {
		h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(h.Keys))
	}
	for k := range h.Keys {
		if _, ok := h.Header.Initial.Values[history.KeyID(k)]; !ok {
			h.Header.Initial.Values[history.KeyID(k)] = v
		}
	}
	return nil
}
