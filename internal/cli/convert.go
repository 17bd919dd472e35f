package cli

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/format/registry"
)

// convertCommand is `isoscope convert [flags] IN OUT`.
type convertCommand struct {
	io   IO
	From string
	To   string
}

func newConvertCommand(std IO) *cobra.Command {
	c := &convertCommand{io: std}
	cmd := &cobra.Command{
		Use:   "convert [flags] IN OUT",
		Short: "convert a history between formats",
		Long: fmt.Sprintf(`convert reads a history in any format isoscope reads (detected, or named with
--from) and writes it in the format named by --to (default isoscope). IN or OUT
may be "-" for standard input or output; an OUT name ending in .gz is compressed.
Formats: %s.

A conversion never changes a verdict: what the output format cannot record
(begin and end instants in dbcop, the database's timestamps, a white-box
version order, deletes and scans in Jepsen, …) is refused with exit status 2
and a message naming the transaction, operation or key. A non-empty initial
state is written to Jepsen as a first transaction that isoscope reads back as
the initial state, and a history without instants as completions alone, with
no real-time order.`, strings.Join(registry.Names(), ", ")),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args[0], args[1]) },
	}
	cmd.Flags().StringVar(&c.From, "from", "auto", "input format")
	cmd.Flags().StringVar(&c.To, "to", "isoscope", "output format")
	return cmd
}

// Run converts in to out.
func (c *convertCommand) Run(_ context.Context, in, out string) error {
	to, err := registry.Lookup(c.To)
	if err != nil {
		return badInput(err)
	}
	if to.Write == nil {
		return badInput(fmt.Errorf("isoscope cannot write format %s (it writes: %s)", to.Name, strings.Join(writable(), ", ")))
	}
	h, err := readHistory(c.io, in, c.From)
	if err != nil {
		return badInput(err)
	}
	var w io.Writer = c.io.Stdout
	var f *os.File
	if out != "-" {
		if f, err = os.Create(out); err != nil {
			return badInput(err)
		}
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var dst io.Writer = bw
	var zw *gzip.Writer
	if strings.HasSuffix(out, ".gz") {
		zw = gzip.NewWriter(bw)
		dst = zw
	}
	err = to.Write(dst, h)
	if err != nil {
		err = badInput(fmt.Errorf("cannot convert %s to %s without changing what it says, so nothing was written: %w", in, to.Name, err))
	}
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out)
		}
	}
	return err
}

func writable() []string {
	var out []string
	for _, f := range registry.Formats() {
		if f.Write != nil {
			out = append(out, f.Name)
		}
	}
	return out
}
