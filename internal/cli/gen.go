package cli

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/format/registry"
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
	// The causal store's options (gen.CausalConfig).
	Sync, Stale float64
	// The Boomslang workloads' options (gen.RangeConfig).
	Tombstones  bool
	Fault       float64
	Populate    float64
	Values      string
	ValueDomain int
	MinWidth    int
	MaxWidth    int
	MaxIter     int
	GlobalScans bool
	BlindWMixed bool
	// Database timestamps and the faults planted in them.
	Timestamps bool
	TSFault    string
	TSFaults   int
	// The list-append workload's options (gen.ListAppendConfig).
	AppendsPerKey int
	UnknownRatio  float64
	// FenceEvery runs fence transactions (mt, general, list-append).
	FenceEvery int
	// distSet says --dist was given: the Boomslang and list-append
	// workloads default to uniform keys, as in the paper and in Elle;
	// keysSet and opsSet say --keys and --ops were, which list-append
	// otherwise takes as 10 and 4.
	distSet, keysSet, opsSet bool
	// Events is --workload awdit's size in operations (AWDIT's --events);
	// sessionsSet and readRatioSet say --sessions and --read-ratio were
	// given, which awdit otherwise takes as AWDIT's generator does.
	Events                    int
	sessionsSet, readRatioSet bool
}

func newGenCommand(std IO) *cobra.Command {
	c := &genCommand{io: std}
	cmd := &cobra.Command{
		Use: "gen [flags]",
		Example: `  # 20,000 mini-transactions with a lost update and a write skew planted
  isoscope gen --txns 20000 --plant lost-update,write-skew -o history.jsonl

  # reads and blind writes from a causally consistent store, compressed
  isoscope gen --workload general --mode causal --txns 5000 -o causal.jsonl.gz

  # Boomslang's range workload with one corrupted scan in a hundred
  isoscope gen --workload randomrange --fault 0.01 --txns 2000 -o range.jsonl

  # Elle's list-append workload on snapshot isolation, with a planted G-single
  isoscope gen --workload list-append --mode si --txns 20000 --plant g-single -o la.jsonl

  # database timestamps with a planted early commit, for the chronos checker
  isoscope gen --ts-fault early-commit --txns 2000 -o ts.jsonl`,
		Short: "write a synthetic history from a simulated database (no database needed)",
		Long: `gen simulates a database running a workload and writes the history it records.
--mode serial gives a strictly serializable history, --mode si a snapshot-isolation
one.

--workload mt (the default) runs mini-transactions (MTC's read-modify-write
transactions with unique values); --plant adds small groups of transactions that
exhibit the named anomalies. --workload general runs Cobra-style reads and blind
writes, in serial mode or, with --mode causal, on a causally consistent store:
every session a replica that catches up with another session's view before a
transaction with chance --sync, its reads the latest versions its view holds
(histories that satisfy causal consistency, read atomic and rc-session, not
necessarily prefix consistency or SI; --stale makes that share of transactions
read one version older than their view holds).

--workload awdit runs the shape of AWDIT's history generator (awdit generate) on
that causal store: --events operations (or --txns transactions), transactions of
geometric size with mean --ops (5 unless given), each ending before it would
touch a key it wrote, --read-ratio reads (0.8 unless given), keys from AWDIT's
Pareto distribution (shape 1.16, a fifth of the keys taking four fifths of the
accesses, unless --dist is given) over --keys keys (8 unless given), and
⌈√events⌉ sessions unless --sessions is given. AWDIT's largest published
history (CockroachDB TPC-C: 50,577,782 events, 1,812,223 transactions, 50
sessions, 6,730,354 keys) has the proportions of --events 50577782 --sessions 50
--ops 28 --keys 6730354.

--workload randombench, randomrange, randomrmwrange and blindw run Boomslang's
benchmarks, with deletes, range scans and iterators: --ops logical operations per
transaction (a read-modify-write counts as one), integer keys 0..keys-1 (uniform
unless --dist says otherwise), ranges of --min-width to --max-width keys, iterators
asking for 1 to --max-iter pairs. RandomBench and RandomRange repeat values (from
1..--value-domain), RandomRMWRange and BlindW write unique ones (--values
overrides). --tombstones makes deletes leave tombstones, --populate starts with a
share of the keys present, and --fault corrupts one observation in that share of
the transactions (a stale or never-written value, or a scan that omits a key), so
that the history likely violates the level the mode gives. In si mode,
first-committer-wins losers are recorded as aborted.

--workload list-append runs Elle's list-append workload: each transaction has 1 to
--ops operations (4 unless given), each a read of a whole list (--read-ratio) or
an append of a unique element, over --keys keys in use at once (10 unless given;
uniform unless --dist says otherwise), each retired after --appends-per-key
appends; --abort-ratio and --unknown-ratio give failed and indeterminate
transactions. --plant takes g0, aborted-read (g1a), intermediate-read (g1b), g1c,
g-single, g2-item (write-skew), lost-update and internal.

--timestamps gives every transaction the simulated database's start_ts and
commit_ts (a logical clock ticking at each start and commit), for the chronos
checker. --ts-fault early-commit or skew (with --ts-faults N, default 1) then
corrupts them: early-commit lowers a writer's commit_ts below the start_ts of a
transaction that read the version it overwrote (the reader should have seen the
write), skew lowers a reader's start_ts below the commit_ts of the write it read
(a lagging clock). Where they went is printed on standard error.`,
		Args: wantArgs(0, 0, "", ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.distSet = cmd.Flags().Changed("dist")
			c.keysSet = cmd.Flags().Changed("keys")
			c.opsSet = cmd.Flags().Changed("ops")
			c.sessionsSet = cmd.Flags().Changed("sessions")
			c.readRatioSet = cmd.Flags().Changed("read-ratio")
			return c.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.Txns, "txns", 10000, "transactions to generate")
	f.IntVar(&c.Sessions, "sessions", 24, "client sessions")
	f.IntVar(&c.Keys, "keys", 1000, "keys")
	f.StringVar(&c.Dist, "dist", "zipfian", "key distribution: uniform, zipfian, hotspot, exponential (the Boomslang workloads default to uniform)")
	f.StringVar(&c.Mode, "mode", "serial", "simulated database: serial (strictly serializable), si (snapshot isolation) or, for --workload general, causal (a causally consistent store)")
	f.Float64Var(&c.ReadOnly, "read-only", 0.2, "share of read-only transactions")
	f.Float64Var(&c.AbortRatio, "abort-ratio", 0, "share of transactions the client aborts")
	f.Uint64Var(&c.Seed, "seed", 1, "random seed (the same seed gives the same history)")
	f.StringSliceVar(&c.Plant, "plant", nil, "anomaly kinds to plant, comma-separated (e.g. lost-update,write-skew)")
	f.StringVarP(&c.Out, "out", "o", "-", "output file (- for standard output; a .gz name compresses)")
	f.StringVar(&c.Workload, "workload", "mt", "mt (mini-transactions), general (reads and blind writes; serial mode only), list-append (Elle's), awdit (AWDIT's generator's shape, causal store), or Boomslang's randombench, randomrange, randomrmwrange, blindw")
	f.IntVar(&c.Ops, "ops", 8, "general and Boomslang workloads: operations per transaction; list-append: at most this many (default 4)")
	f.Float64Var(&c.ReadRatio, "read-ratio", 0.5, "general and list-append: share of reads")
	f.Float64Var(&c.Duplicates, "duplicates", 0, "general: share of keys whose values come from a small zipfian domain")
	f.Float64Var(&c.Sync, "sync", gen.DefaultSync, "general in causal mode: chance that a session catches up with another's view before a transaction")
	f.Float64Var(&c.Stale, "stale", 0, "general in causal mode: share of transactions with one read of an older version than their view holds (a fault)")
	f.BoolVar(&c.Tombstones, "tombstones", false, "Boomslang workloads: deletes leave tombstones that scans return as [k, null]")
	f.Float64Var(&c.Fault, "fault", 0, "Boomslang workloads: share of transactions with one corrupted read or range result")
	f.Float64Var(&c.Populate, "populate", 0, "Boomslang workloads: share of the keys present in the initial state")
	f.StringVar(&c.Values, "values", "default", "Boomslang workloads: written values: default (the workload's), unique or repeated")
	f.IntVar(&c.ValueDomain, "value-domain", gen.DefaultValueDomain, "Boomslang workloads: repeated values are drawn from 1..N (run's default is 8; gen's stays 5 so that a seed still gives the histories the benchmarks recorded)")
	f.IntVar(&c.MinWidth, "min-width", gen.DefaultMinWidth, "Boomslang workloads: smallest range width in keys")
	f.IntVar(&c.MaxWidth, "max-width", gen.DefaultMaxWidth, "Boomslang workloads: largest range width in keys (run's default is the paper's 100; gen's stays 20 so that a seed still gives the histories the benchmarks recorded, and simulated scans stay small)")
	f.IntVar(&c.MaxIter, "max-iter", gen.DefaultMaxIter, "randombench: an iterator asks for 1 to N pairs")
	f.BoolVar(&c.GlobalScans, "global-scans", false, "randomrmwrange: precede every range scan with a scan of every key, as the paper does (histories grow by O(keys) per scan)")
	f.BoolVar(&c.Timestamps, "timestamps", false, "give transactions the database's start_ts and commit_ts")
	f.StringVar(&c.TSFault, "ts-fault", "", "plant timestamp faults (implies --timestamps): early-commit (a commit_ts below a reader's start_ts that did not see it) or skew (a start_ts below the commit_ts of a write it read)")
	f.IntVar(&c.TSFaults, "ts-faults", 1, "how many --ts-fault faults to plant")
	f.IntVar(&c.AppendsPerKey, "appends-per-key", 100, "list-append: a key is retired after this many appends and a fresh one takes its place (0: never)")
	f.Float64Var(&c.UnknownRatio, "unknown-ratio", 0, "list-append: share of transactions whose outcome is unknown (append-only; each takes effect with even chance)")
	f.IntVar(&c.Events, "events", 0, "awdit: operations to generate (AWDIT's --events; 0: --txns transactions)")
	f.IntVar(&c.FenceEvery, "fence-every", 0, "mt, general and list-append: every session runs a fence transaction (read the fence key, then write or append to it; the header's fence_key) first, then after every N of its own transactions (0: no fences)")
	f.BoolVar(&c.BlindWMixed, "blindw-mixed", false, "blindw: Boomslang's variant (each operation a read or a blind write) instead of Cobra's (read-only or write-only transactions)")
	return cmd
}

// Run generates the history and writes it.
func (c *genCommand) Run(ctx context.Context) error {
	if err := c.checkSizes(); err != nil {
		return badInput(err)
	}
	dist, err := workload.ParseDistribution(c.Dist)
	if err != nil {
		return unknownChoice("--dist", "key distribution", c.Dist, distNames())
	}
	var fault gen.TSFault
	if c.TSFault != "" {
		if fault, err = gen.ParseTSFault(c.TSFault); err != nil {
			return unknownChoice("--ts-fault", "timestamp fault", c.TSFault, []string{gen.EarlyCommit.String(), gen.Skew.String()})
		}
		c.Timestamps = true
	}
	cfg := gen.Config{
		Txns: c.Txns, Sessions: c.Sessions, Keys: c.Keys, Dist: dist,
		ReadOnlyRatio: c.ReadOnly, AbortRatio: c.AbortRatio, Seed: c.Seed, Timestamps: c.Timestamps,
		FenceEvery: c.FenceEvery,
	}
	causal := false
	switch strings.ToLower(c.Mode) {
	case "serial", "ser", "sser":
		cfg.Mode = gen.Serial
	case "si", "snapshot-isolation":
		cfg.Mode = gen.SnapshotIsolation
	case "causal", "cc":
		causal = true
	default:
		return unknownChoice("--mode", "mode", c.Mode, []string{"serial", "si", "causal"})
	}
	if c.Workload == "awdit" {
		if cfg.Mode == gen.SnapshotIsolation || len(c.Plant) > 0 || c.Timestamps {
			return badInput(fmt.Errorf("--workload awdit runs on the causal store (--mode causal), without --plant or timestamps"))
		}
		return c.streamAWDIT(dist)
	}
	if causal && (c.Workload != "general" || len(c.Plant) > 0 || c.Timestamps) {
		return badInput(fmt.Errorf("--mode causal runs --workload general, without --plant or timestamps"))
	}
	if c.FenceEvery != 0 {
		switch {
		case c.FenceEvery < 0:
			return badInput(fmt.Errorf("--fence-every %d: want at least 0 (0: no fences)", c.FenceEvery))
		case causal || (c.Workload != "mt" && c.Workload != "general" && c.Workload != "list-append"):
			return badInput(fmt.Errorf("--fence-every runs with --workload mt, general or list-append (not --mode causal)"))
		}
	}
	var h *history.History
	var planted []gen.Planted
	if c.Workload == "list-append" {
		return c.streamListAppend(cfg.Mode, causal, dist)
	}
	for _, p := range c.Plant {
		k, ok := anomaly.ParseKind(strings.TrimSpace(p))
		if !ok || !gen.CanPlant(k) {
			return unknownChoice("--plant", "plantable anomaly", p, plantableNames())
		}
		cfg.Plant = append(cfg.Plant, k)
	}
	switch c.Workload {
	case "mt":
		h, planted, err = gen.Generate(cfg)
	case "general":
		if causal {
			h, err = gen.GenerateCausal(gen.CausalConfig{
				Txns: c.Txns, Sessions: c.Sessions, Keys: c.Keys, Dist: dist, Ops: c.Ops,
				ReadRatio: c.ReadRatio, Sync: c.Sync, Stale: c.Stale, Seed: c.Seed,
			})
			break
		}
		if cfg.Mode != gen.Serial || len(cfg.Plant) > 0 {
			return badInput(fmt.Errorf("--workload general runs in --mode serial without --plant"))
		}
		h, err = gen.GenerateGeneral(gen.GeneralConfig{
			Txns: c.Txns, Sessions: c.Sessions, Keys: c.Keys, Dist: dist, Ops: c.Ops,
			ReadRatio: c.ReadRatio, DuplicateKeys: c.Duplicates, Seed: c.Seed, Timestamps: c.Timestamps,
			FenceEvery: c.FenceEvery,
		})
	default:
		w, werr := gen.ParseRangeWorkload(c.Workload)
		if werr != nil {
			names := []string{"mt", "general", "list-append", "awdit"}
			for _, w := range gen.RangeWorkloads() {
				names = append(names, w.String())
			}
			return unknownChoice("--workload", "workload", c.Workload, names)
		}
		if len(cfg.Plant) > 0 || c.AbortRatio != 0 {
			return badInput(fmt.Errorf("--workload %s takes --fault, not --plant or --abort-ratio", w))
		}
		if !c.distSet {
			dist = workload.Uniform
		}
		rc := gen.RangeConfig{
			Workload: w, Mode: cfg.Mode, Txns: c.Txns, Sessions: c.Sessions, Keys: c.Keys, Dist: dist,
			Ops: c.Ops, MinWidth: c.MinWidth, MaxWidth: c.MaxWidth, MaxIter: c.MaxIter, ValueDomain: c.ValueDomain,
			Tombstones: c.Tombstones, Populate: c.Populate, GlobalScans: c.GlobalScans, BlindWMixed: c.BlindWMixed,
			Fault: c.Fault, Seed: c.Seed, Timestamps: c.Timestamps,
		}
		switch strings.ToLower(c.Values) {
		case "default", "":
		case "unique":
			rc.Values = gen.UniqueValues
		case "repeated":
			rc.Values = gen.RepeatedValues
		default:
			return unknownChoice("--values", "choice of values", c.Values, []string{"default", "unique", "repeated"})
		}
		h, err = gen.GenerateRange(rc)
	}
	if err != nil {
		return badInput(err)
	}
	var faults []gen.Planted
	if c.TSFault != "" {
		if faults, err = gen.InjectTimestampFaults(h, fault, c.TSFaults, c.Seed); err != nil {
			return badInput(err)
		}
	}
	return c.write(h, func() {
		for _, p := range planted {
			c.reportPlanted(h, p.Kind.String(), p.Txns)
		}
		for _, p := range faults {
			fmt.Fprintf(c.io.Stderr, "planted %s timestamp fault (%s expected): writer %s, reader %s\n",
				fault, p.Kind, h.TxnName(p.Txns[0]), h.TxnName(p.Txns[1]))
		}
	})
}

// streamListAppend generates a list-append history (listAppend) and
// writes each transaction to --out as it is recorded, so that memory does
// not grow with the transactions; then it says what was planted (ids are
// 1..n in file order).
func (c *genCommand) streamListAppend(mode gen.Mode, causal bool, dist workload.Distribution) error {
	w, err := registry.Create(c.Out, c.io.Stdout)
	if err != nil {
		return err
	}
	var sw *native.Writer
	var writeErr error
	emit := func(h *history.History, t *history.Txn) error {
		if sw == nil {
			if sw, writeErr = native.NewWriter(w, h); writeErr != nil {
				return writeErr
			}
		}
		writeErr = sw.WriteTxn(t)
		return writeErr
	}
	_, planted, err := c.listAppend(mode, causal, dist, emit)
	if err == nil && sw != nil {
		err = sw.Flush()
		writeErr = err
	}
	if err != nil {
		w.Abort()
		if writeErr != nil {
			return err
		}
		return badInput(err)
	}
	if err := w.Close(); err != nil {
		return err
	}
	for _, p := range planted {
		ids := make([]string, len(p.Txns))
		for i, t := range p.Txns {
			ids[i] = strconv.Itoa(int(t) + 1)
		}
		c.sayPlanted(p.Plant.String(), ids)
	}
	return nil
}

// write writes h to --out, then says what was planted.
func (c *genCommand) write(h *history.History, planted func()) error {
	w, err := registry.Create(c.Out, c.io.Stdout)
	if err != nil {
		return err
	}
	if err := native.Write(w, h); err != nil {
		w.Abort()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	planted()
	return nil
}

// reportPlanted says on standard error which transactions a planted
// anomaly took.
func (c *genCommand) reportPlanted(h *history.History, what string, txns []history.TxnID) {
	ids := make([]string, len(txns))
	for i, t := range txns {
		ids[i] = h.TxnName(t)
	}
	c.sayPlanted(what, ids)
}

// sayPlanted says on standard error which transactions, by id, a planted
// anomaly took.
func (c *genCommand) sayPlanted(what string, ids []string) {
	fmt.Fprintf(c.io.Stderr, "planted %s: transactions %s\n", what, strings.Join(ids, ", "))
}

// listAppend generates an Elle-style list-append history: --keys keys in
// use at once (10 unless given), each retired after --appends-per-key
// appends, 1 to --ops operations a transaction (4 unless given).
func (c *genCommand) listAppend(mode gen.Mode, causal bool, dist workload.Distribution,
	emit func(*history.History, *history.Txn) error) (*history.History, []gen.ListPlanted, error) {
	if causal || c.Timestamps {
		return nil, nil, fmt.Errorf("--workload list-append runs in --mode serial or si, without timestamps")
	}
	if !c.distSet {
		dist = workload.Uniform
	}
	lc := gen.ListAppendConfig{
		Txns: c.Txns, Sessions: c.Sessions, ActiveKeys: c.Keys, AppendsPerKey: c.AppendsPerKey, MaxOps: c.Ops,
		ReadRatio: c.ReadRatio, Dist: dist, Mode: mode, AbortRatio: c.AbortRatio, UnknownRatio: c.UnknownRatio, Seed: c.Seed,
		Emit: emit, FenceEvery: c.FenceEvery,
	}
	if !c.keysSet {
		lc.ActiveKeys = 10
	}
	if !c.opsSet {
		lc.MaxOps = 4
	}
	for _, p := range c.Plant {
		lp, err := gen.ParseListPlant(p)
		if err != nil {
			return nil, nil, err
		}
		lc.Plant = append(lc.Plant, lp)
	}
	return gen.GenerateListAppend(lc)
}

// checkSizes refuses a size below 1: a history of no transactions (which
// check refuses as empty), no sessions, keys or operations, no fault
// planted where one is asked for, an empty value domain, range or
// iterator.
// streamAWDIT generates --workload awdit: the shape of AWDIT's history
// generator (`awdit generate`) on the causal store: --events operations
// (or --txns transactions) in transactions of geometric size with mean
// --ops (5), each ending before it would touch a key it wrote, --read-ratio
// reads (0.8), keys from a Pareto distribution of shape 1.16 over --keys
// keys (8) unless --dist is given, and ⌈√events⌉ sessions unless
// --sessions is. Each transaction is written as it commits, so that
// memory is the keys' versions, not the history.
func (c *genCommand) streamAWDIT(dist workload.Distribution) error {
	if c.Events < 0 {
		return badInput(fmt.Errorf("--events %d: want at least 0 (operations to generate)", c.Events))
	}
	cc := gen.CausalConfig{Txns: c.Txns, Events: c.Events, Sessions: c.Sessions, Keys: c.Keys, Dist: dist, Ops: c.Ops,
		ReadRatio: c.ReadRatio, Sync: c.Sync, Stale: c.Stale, Seed: c.Seed, Geometric: true, Pareto: workload.AWDITAlpha}
	if c.distSet {
		cc.Pareto = 0
	}
	if !c.opsSet {
		cc.Ops = 5
	}
	if !c.readRatioSet {
		cc.ReadRatio = 0.8
	}
	if !c.keysSet {
		cc.Keys = 8
	}
	if !c.sessionsSet {
		n := c.Events
		if n == 0 {
			n = c.Txns * cc.Ops
		}
		cc.Sessions = max(1, int(math.Ceil(math.Sqrt(float64(n)))))
	}
	w, err := registry.Create(c.Out, c.io.Stdout)
	if err != nil {
		return err
	}
	var sw *native.Writer
	var writeErr error
	cc.Emit = func(h *history.History, t *history.Txn) error {
		if sw == nil {
			if sw, writeErr = native.NewWriter(w, h); writeErr != nil {
				return writeErr
			}
		}
		writeErr = sw.WriteTxn(t)
		return writeErr
	}
	h, err := gen.GenerateCausal(cc)
	if err == nil && sw == nil { // no transactions: the header alone
		sw, err = native.NewWriter(w, h)
		writeErr = err
	}
	if err == nil {
		err = sw.Flush()
		writeErr = err
	}
	if err != nil {
		w.Abort()
		if writeErr != nil {
			return err
		}
		return badInput(err)
	}
	return w.Close()
}

func (c *genCommand) checkSizes() error {
	for _, s := range []struct {
		flag string
		n    int
		what string
	}{
		{"txns", c.Txns, "transactions"},
		{"sessions", c.Sessions, "sessions"},
		{"keys", c.Keys, "keys"},
		{"ops", c.Ops, "operations a transaction"},
		{"ts-faults", c.TSFaults, "faults to plant"},
		{"value-domain", c.ValueDomain, "values to draw from"},
		{"min-width", c.MinWidth, "keys in the smallest range"},
		{"max-width", c.MaxWidth, "keys in the largest range"},
		{"max-iter", c.MaxIter, "pairs an iterator asks for"},
	} {
		if s.n < 1 {
			return fmt.Errorf("--%s %d: want at least 1 (%s)", s.flag, s.n, s.what)
		}
	}
	return nil
}
