// Command isoscope checks whether a database really gives the transaction
// isolation it promises. See README.md and `isoscope --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/isoscope/isoscope/internal/cli"
)

func main() {
	// isoscope is a batch tool whose heap is mostly the history it keeps:
	// collecting less often halves the time of a large check, and less so
	// as the heap grows past gigabytes (tuneGC). GOGC still overrides it.
	if os.Getenv("GOGC") == "" {
		tuneGC()
	}
	if supervises(os.Args[1:]) {
		os.Exit(supervise(os.Args[1:]))
	}
	os.Exit(run(os.Args[1:]))
}

// run runs the command in this process; SIGINT, SIGTERM and SIGHUP end
// what it is doing (a check ends undecided, exit 3). SIGHUP ignored when
// isoscope started (nohup) stays ignored.
func run(args []string) int {
	ending := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		ending = append(ending, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), ending...)
	defer stop()
	signalReady()
	return cli.Main(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}
