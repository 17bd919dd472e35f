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

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// genCommand is `isoscope gen [flags]`.
type genCommand struct {
	io         IO
	Txns       int
	Sessions   int
	Keys       int
	Dist       string
	Mode       string
	ReadOnly   float64
	AbortRatio float64
	Seed       uint64
	Plant      []string
	Out        string
	Workload   string
	Ops        int
	ReadRatio  float64
	Duplicates float64
}

func newGenCommand(std IO) *cobra.Command {
	c := &genCommand{io: std}
	cmd := &cobra.Command{
		Use:   "gen [flags]",
		Short: "write a synthetic mini-transaction history (no database needed)",
		Long: `gen simulates a database running mini-transactions (MTC's read-modify-write
transactions with unique values) and writes the history it records. --mode serial
gives a strictly serializable history, --mode si a snapshot-isolation one; --plant
adds small groups of transactions that exhibit the named anomalies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.Run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.IntVar(&c.Txns, "txns", 10000, "transactions to generate")
	f.IntVar(&c.Sessions, "sessions", 24, "client sessions")
	f.IntVar(&c.Keys, "keys", 1000, "keys")
	f.StringVar(&c.Dist, "dist", "zipfian", "key distribution: uniform, zipfian, hotspot, exponential")
	f.StringVar(&c.Mode, "mode", "serial", "simulated database: serial (strictly serializable) or si (snapshot isolation)")
	f.Float64Var(&c.ReadOnly, "read-only", 0.2, "share of read-only transactions")
	f.Float64Var(&c.AbortRatio, "abort-ratio", 0, "share of transactions the client aborts")
	f.Uint64Var(&c.Seed, "seed", 1, "random seed (the same seed gives the same history)")
	f.StringSliceVar(&c.Plant, "plant", nil, "anomaly kinds to plant, comma-separated (e.g. lost-update,write-skew)")
	f.StringVarP(&c.Out, "out", "o", "-", "output file (- for standard output; a .gz name compresses)")
	f.StringVar(&c.Workload, "workload", "mt", "mt (mini-transactions) or general (reads and blind writes; serial mode only)")
	f.IntVar(&c.Ops, "ops", 8, "general: operations per transaction")
	f.Float64Var(&c.ReadRatio, "read-ratio", 0.5, "general: share of reads")
	f.Float64Var(&c.Duplicates, "duplicates", 0, "general: share of keys whose values come from a small zipfian domain")
	return cmd
}

// Run generates the history and writes it.
func (c *genCommand) Run(ctx context.Context) error {
	dist, err := workload.ParseDistribution(c.Dist)
	if err != nil {
		return badInput(err)
	}
	cfg := gen.Config{
		Txns: c.Txns, Sessions: c.Sessions, Keys: c.Keys, Dist: dist,
		ReadOnlyRatio: c.ReadOnly, AbortRatio: c.AbortRatio, Seed: c.Seed,
	}
	switch strings.ToLower(c.Mode) {
	case "serial", "ser", "sser":
		cfg.Mode = gen.Serial
	case "si", "snapshot-isolation":
		cfg.Mode = gen.SnapshotIsolation
	default:
		return badInput(fmt.Errorf("unknown --mode %q (serial or si)", c.Mode))
	}
	for _, p := range c.Plant {
		k, ok := anomaly.ParseKind(strings.TrimSpace(p))
		if !ok {
			return badInput(fmt.Errorf("unknown anomaly kind %q to plant", p))
		}
		cfg.Plant = append(cfg.Plant, k)
	}
	var h *history.History
	var planted []gen.Planted
	switch c.Workload {
	case "mt":
		h, planted, err = gen.Generate(cfg)
	case "general":
		if cfg.Mode != gen.Serial || len(cfg.Plant) > 0 {
			return badInput(fmt.Errorf("--workload general runs in --mode serial without --plant"))
		}
		h, err = gen.GenerateGeneral(gen.GeneralConfig{
			Txns: c.Txns, Sessions: c.Sessions, Keys: c.Keys, Dist: dist, Ops: c.Ops,
			ReadRatio: c.ReadRatio, DuplicateKeys: c.Duplicates, Seed: c.Seed,
		})
	default:
		err = fmt.Errorf("unknown --workload %q (mt or general)", c.Workload)
	}
	if err != nil {
		return badInput(err)
	}
	var w io.Writer = c.io.Stdout
	var closeFile func() error
	if c.Out != "-" {
		f, err := os.Create(c.Out)
		if err != nil {
			return err
		}
		closeFile = f.Close
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var zw *gzip.Writer
	var dst io.Writer = bw
	if strings.HasSuffix(c.Out, ".gz") {
		zw = gzip.NewWriter(bw)
		dst = zw
	}
	err = native.Write(dst, h)
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if closeFile != nil {
		if cerr := closeFile(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	for _, p := range planted {
		ids := make([]string, len(p.Txns))
		for i, t := range p.Txns {
			ids[i] = h.TxnName(t)
		}
		fmt.Fprintf(c.io.Stderr, "planted %s: transactions %s\n", p.Kind, strings.Join(ids, ", "))
	}
	return nil
}
