// Package cli holds isoscope's commands. Each command is a struct with its
// options and a Run method; Main wires them to cobra and turns errors into
// the exit statuses of the CLI contract (0 holds, 1 violation, 2 bad usage
// or input, 3 undecided). Only this package chooses exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses of the CLI contract.
const (
	ExitHolds     = 0
	ExitViolation = 1
	ExitBadInput  = 2
	ExitUnknown   = 3
)

// exitError carries an exit status up to Main; its message, if any, goes to
// standard error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// badInput wraps err as bad usage or bad input (exit status 2).
func badInput(err error) error { return &exitError{code: ExitBadInput, err: err} }

// IO is where a command reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// rootExample is the examples of `isoscope --help`.
const rootExample = `  # run a workload on an embedded database and check what its clients saw
  isoscope run --txns 2000

  # check a recorded history at snapshot isolation
  isoscope check --level si history.jsonl

  # make a history with planted anomalies, then check it
  isoscope gen --txns 10000 --plant lost-update -o planted.jsonl
  isoscope check --level ser planted.jsonl`

// Main runs isoscope with args (without the program name) and returns the
// exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	std := IO{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	root := &cobra.Command{
		Use:   "isoscope",
		Short: "isoscope tells whether a database really gives the transaction isolation it promises",
		Long: `isoscope checks histories of database transactions against isolation levels
(strict serializability, serializability, snapshot isolation, read committed, …)
and explains every violation with a small cycle of named transactions.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionText(),
		Example:       rootExample,
		Args:          cobra.ArbitraryArgs,
		RunE:          unknownCommand,
	}
	root.SetVersionTemplate("{{.Version}}")
	var cpuProfile, memProfile string
	stopProfile := func() {}
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this `file` (for go tool pprof)")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write a heap profile at the command's end to this `file` (for go tool pprof; -sample_index=alloc_space shows every allocation)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if memProfile != "" {
			runtime.MemProfileRate = 64 << 10
		}
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return badInput(fmt.Errorf("--cpuprofile: %w", err))
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return badInput(fmt.Errorf("--cpuprofile: %w", err))
		}
		stopProfile = func() {
			pprof.StopCPUProfile()
			f.Close()
		}
		return nil
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(rootFlagError(args))
	root.SetUsageFunc(usage)
	root.AddCommand(newCheckCommand(std), newGenCommand(std), newConvertCommand(std), newReportCommand(std), newRunCommand(std), newServeCommand(std),
		newPublishCommand(std), newFindingsCommand(std), newClusterCommand(std), newVersionCommand(std))
	completeFlagValues(root)
	err := root.ExecuteContext(ctx)
	stopProfile()
	if memProfile != "" {
		if werr := writeHeapProfile(memProfile); werr != nil && err == nil {
			err = badInput(fmt.Errorf("--memprofile: %w", werr))
		}
	}
	if err == nil {
		return ExitHolds
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "isoscope: %v\n", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command, wrong number of arguments.
	fmt.Fprintf(stderr, "isoscope: %v\n", err)
	return ExitBadInput
}

// renamed keeps the old names of renamed flags working as hidden aliases:
// old[name] is the flag's name now. One idea has one name across the
// commands (gen's --max-width is run's, not --span); scripts written with
// the old names still run.
func renamed(f *pflag.FlagSet, old map[string]string) {
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if now, ok := old[name]; ok {
			name = now
		}
		return pflag.NormalizedName(name)
	})
}

// writeHeapProfile writes the heap profile to the file named path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile holds what the last collection saw
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
