// Command isoscope checks whether a database really gives the transaction
// isolation it promises. See README.md and `isoscope --help`.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/isoscope/isoscope/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
