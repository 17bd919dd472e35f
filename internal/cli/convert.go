package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/history"
)

// convertCommand is `isoscope convert [flags] IN OUT`.
type convertCommand struct {
	io   IO
	From string
	To   string
	// Drop lists what to leave out of the output knowingly: "instants",
	// "timestamps", "version-order".
	Drop []string
	// Timeout bounds the conversion (0: no bound).
	Timeout time.Duration
}

func newConvertCommand(std IO) *cobra.Command {
	c := &convertCommand{io: std}
	cmd := &cobra.Command{
		Use: "convert [flags] IN OUT",
		Example: `  # an isoscope history as Elle's EDN (rw-register or list-append)
  isoscope convert --to jepsen history.jsonl history.edn

  # a compressed history, without the begin and end instants (so without real time)
  isoscope convert --drop instants history.jsonl plain.jsonl.gz

  # any readable format back to isoscope's JSON Lines
  isoscope convert history.edn again.jsonl`,
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
no real-time order. --drop leaves out, on request, instants (strict
serializability can then not be checked), timestamps or a version order.`, strings.Join(registry.Names(), ", ")),
		Args: wantArgs(2, 2, "two files, IN and OUT", "(- for standard input or output)"),
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args[0], args[1]) },
	}
	cmd.Flags().StringVar(&c.From, "from", "auto", "input format")
	cmd.Flags().DurationVar(&c.Timeout, "timeout", 0, "give up reading the input after this long, writing nothing, exit 3 (e.g. 90s; 0: no limit)")
	cmd.Flags().StringVar(&c.To, "to", "isoscope", "output format")
	cmd.Flags().StringSliceVar(&c.Drop, "drop", nil, "leave out what the output format cannot record, knowing that checks of the output cannot use it: instants, timestamps, version-order")
	return cmd
}

// Run converts in to out.
func (c *convertCommand) Run(ctx context.Context, in, out string) error {
	if err := checkFormatFlag("--from", c.From); err != nil {
		return err
	}
	to, err := registry.Lookup(c.To)
	if err != nil {
		return unknownChoice("--to", "format", c.To, writable())
	}
	if to.Write == nil {
		return badInput(fmt.Errorf("isoscope cannot write format %s (it writes: %s)", to.Name, strings.Join(writable(), ", ")))
	}
	for _, d := range c.Drop {
		if !slices.Contains(droppable, d) {
			return badInput(fmt.Errorf("--drop %s: can drop %s", d, strings.Join(droppable, ", ")))
		}
	}
	ctx, cancel := withTimeout(ctx, c.Timeout)
	defer cancel()
	h, err := readHistory(ctx, c.io, in, c.From)
	if err != nil {
		return readError(ctx, in, err)
	}
	if len(h.Parts) > 0 {
		// Checked as one history, the keys' transactions would be ordered
		// with each other (by their sessions), where each key is a history
		// of its own: the verdict could change.
		return badInput(fmt.Errorf("%s: a history of %d independent keys (jepsen.independent), which no output format records as such; check it as it is", in, len(h.Parts)))
	}
	for _, d := range c.Drop {
		if drop(h, d) {
			fmt.Fprintf(c.io.Stderr, "isoscope: convert: %s dropped as asked (%s)\n", d, dropNotes[d])
		}
	}
	w, err := registry.Create(out, c.io.Stdout)
	if err != nil {
		return badInput(err)
	}
	if err := to.Write(w, h); err != nil {
		w.Abort()
		hint := ""
		if le := (*format.LossError)(nil); errors.As(err, &le) {
			hint = fmt.Sprintf(" (--drop %s writes it without them: %s)", le.What, dropNotes[le.What])
		}
		return badInput(fmt.Errorf("cannot convert %s to %s without changing what it says, so nothing was written: %w%s", in, to.Name, err, hint))
	}
	return w.Close()
}

// droppable is what --drop leaves out, and dropNotes what checks of the
// output then cannot do.
var (
	droppable = []string{"instants", "timestamps", "version-order"}
	dropNotes = map[string]string{
		"instants":      "strict serializability cannot be checked on the output",
		"timestamps":    "the timestamp checkers cannot be used on the output",
		"version-order": "checkers must infer the order of writes on the output",
	}
)

// drop leaves d out of h and reports whether h had any.
func drop(h *history.History, d string) bool {
	had := false
	switch d {
	case "instants":
		for i := range h.Txns {
			t := &h.Txns[i]
			had = had || t.HasTime
			t.HasTime, t.Begin, t.End = false, 0, 0
		}
	case "timestamps":
		for i := range h.Txns {
			t := &h.Txns[i]
			had = had || t.HasStartTS || t.HasCommitTS
			t.HasStartTS, t.HasCommitTS, t.StartTS, t.CommitTS = false, false, 0, 0
		}
	case "version-order":
		had = len(h.Header.VersionOrder) > 0
		h.Header.VersionOrder = nil
	}
	return had
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
