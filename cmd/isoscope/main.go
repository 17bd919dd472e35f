// Command isoscope checks whether a database really gives the transaction
// isolation it promises. See README.md and `isoscope --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/isoscope/isoscope/internal/cli"
)

func main() {
	// isoscope is a batch tool whose heap is mostly the history it keeps:
	// collecting less often halves the time of a large check for about the
	// same peak memory (docs/benchmarks.md). GOGC still overrides it.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
