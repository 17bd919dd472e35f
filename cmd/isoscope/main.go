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

// run runs the command in this process; SIGINT and SIGTERM end what it
// is doing (a check ends undecided, exit 3).
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Main(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}
