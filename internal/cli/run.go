package cli

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/natsshard"
	"github.com/isoscope/isoscope/internal/pipeline"
	"github.com/isoscope/isoscope/internal/runner"
	"github.com/isoscope/isoscope/internal/workload"
)

// runCommand is `isoscope run [flags]`: its flags, which Run turns into
// a pipeline.Config.
type runCommand struct {
	io IO
	// DBs are the --db addresses: one database, or the nodes of one
	// cluster; ReadDBs, nodes that only take reads (hot standbys).
	DBs, ReadDBs []string
	clusterFlags
	Isolation string
	Table     string
	Workload  string
	Sessions  int
	Txns      int
	// Duration bounds the run in time (0: none); without --txns given
	// the plan is endless and the run ends when it has passed.
	Duration   time.Duration
	txnsSet    bool
	Keys       int
	Dist       string
	ReadRatio  float64
	Ops        int
	Duplicates float64
	Span       int
	Values     int
	LockRMW    bool
	Seed       uint64
	Retries    int
	Out        string
	NoTrace    bool
	Level      string
	LevelSet   bool
	Checker    string
	JSON       bool
	Timeout    time.Duration
	PerKind    int
	// Progress is --progress: auto, always or never.
	Progress string
	NoHolds  bool
	Report   string
	// Collector is --collector and the flags that go with it.
	Collector pipeline.Collector
	modelFlags
	// StmtTimeout bounds each statement (and the wait for its answer);
	// ReconnectFor, how long a session seeks the database it lost.
	StmtTimeout, ReconnectFor time.Duration
	// hooks are where tests plant faults in the run.
	hooks pipeline.Hooks
	// FenceEvery runs fences; Online checks online (black-box) in
	// OnlineMemoryMB, writing the violations' JSON lines to
	// OnlineFindings too.
	FenceEvery     int
	AppendsPerKey  int
	Online         bool
	OnlineMemoryMB int64
	OnlineFindings string
}

// DefaultOnlineFenceEvery is run --online's fence interval unless
// --fence-every says otherwise.
const DefaultOnlineFenceEvery = 100

func newRunCommand(std IO) *cobra.Command { return runCommandFor(&runCommand{io: std}) }

// runCommandFor wires c's flags and Run to a cobra command.
func runCommandFor(c *runCommand) *cobra.Command {
	cmd := &cobra.Command{
		Use: "run [flags]",
		Example: `  # mini-transactions on an embedded SQLite database, checked at serializability
  isoscope run --txns 2000

  # for five seconds of wall-clock time instead of a number of transactions
  isoscope run --duration 5s

  # PostgreSQL at REPEATABLE READ: checked at snapshot isolation, with an HTML report
  isoscope run --db postgres://postgres@127.0.0.1:5432/test --isolation repeatable-read --txns 1000 --report run-report

  # MariaDB's REPEATABLE READ, judged by what InnoDB actually does
  isoscope run --db mysql://root@127.0.0.1:3306/test --isolation repeatable-read --level rr --module innodb-rr --txns 500

  # Elle's list-append on the embedded Badger store
  isoscope run --db badger::memory: --workload list-append --txns 1000`,
		Short: "run a workload against a database, record its history, and check it",
		Long: `run creates (or resets) a table, runs a workload on --sessions concurrent
sessions with envelope tracing, streams the history to --out as transactions
finish, and checks it at --level: by default the level the database promises
for --isolation (serializable: ser; repeatable-read: si — PostgreSQL's is
snapshot isolation, InnoDB's is weaker and the check says where; read-committed:
rc). Without --db it runs on an in-memory SQLite database, which needs no server;
--db badger::memory: (or badger://DIR) runs on the embedded key-value store
Badger, whose start and commit timestamps isoscope chooses and records in the
history (start_ts, commit_ts).
--duration D runs for that long instead of --txns transactions (with both,
whichever comes first): no session starts a transaction after D, and the one
under way ends as usual.
A run holds its table alone for its whole life: a PostgreSQL advisory lock,
a MariaDB/MySQL GET_LOCK (a lease row where the server refuses it, as Galera
does), a lock file beside a SQLite file or Badger directory, an etcd key on a
lease, a lease row on dqlite. A second run on a table in use is refused at
once (exit 2), naming the holder where the database can tell; choose another
--table. A crashed run's lock goes with its session (leases: within 10 s).
Reads of values that none of the run's transactions wrote are counted in the
summary with a warning: something outside the run wrote to its table.
On a MySQL-protocol database at REPEATABLE READ, a violation is also checked
under InnoDB's repeatable read (--level rr --module innodb-rr), and the
verdict says whether InnoDB's REPEATABLE READ allows it, with the command
that shows it (the exit status stays that of the level checked).
--report DIR writes a self-contained HTML page of the run and the check: plots
of transactions per second, latency percentiles and abort reasons over the run
(also as SVG and PNG files in DIR), the verdict and the anomalies.

--collector URL also publishes each transaction as it finishes, to isoscope
serve (http://) or NATS JetStream (nats://), in a stream of the run's own
(--collector-stream; every run numbers its transactions from 1), in the
keyspace of its database (the run's own for an in-memory one). A batch the
service refuses does not stop the run; at the end the run says how many
batches and transactions were refused (over NATS: waiting up to
--collector-wait for the service's verdicts).

A database that stops answering or goes away does not hang the run or end it
at once: the server cancels a statement after --stmt-timeout, and a session
that has no answer after half as long again drops its connection (the
transaction is aborted, or recorded unknown if its COMMIT was sent: its
outcome is not known) and reconnects, with exponential back-off and jitter,
for up to --reconnect-for. The summary shows each outage: when, how long,
how many sessions. If the database does not answer again within
--reconnect-for, the run stops with the reason on standard error, writes the
history it has (transactions in flight: unknown if their COMMIT was sent,
aborted otherwise), and checks it.

Exit status: 0 the level holds, 1 a violation was found, 2 bad usage or a
database that cannot be reached at the start, 3 undecided: the check timed
out, or the run was cut short (interrupted, database lost for longer than
--reconnect-for) without a violation in what was recorded, or --collector's
service refused batches or did not confirm them (the online check is
incomplete). When no checker decides this workload at the default level, run
says so and exits 0 (the run worked); with --level given, it exits 2 as check
does.`,
		Args: wantArgs(0, 0, "", ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.LevelSet = cmd.Flags().Changed("level")
			c.txnsSet = cmd.Flags().Changed("txns")
			if !cmd.Flags().Changed("value-domain") {
				c.Values = 0 // the workload's own: fresh values for blindw
			}
			if c.Online && !cmd.Flags().Changed("fence-every") {
				c.FenceEvery = DefaultOnlineFenceEvery
			}
			return c.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&c.DBs, "db", nil, "database: postgres://user@host:5432/db, mysql://user@host:3306/db (or user@tcp(host:port)/db), sqlite://FILE, badger://DIR, badger::memory:, etcd://host:2379[,host:port…], dqlite://host:port[,host:port…][/db], nats-kv://host:4222[,host:port…][?replicas=N&reads=leader] (a JetStream KV bucket named after --table), zookeeper://host:2181[,host:port…][?reads=sync] (znodes under /isoscope/TABLE), redis://host:6379 (one Redis server) or redis-sentinel://host:26379[,host:port…]/MASTER[?wait=N&wait-timeout=1s&reads=replica] (the primary the sentinels name; keys TABLE:v:K and TABLE:l:K); default sqlite::memory:. Given more than once: the nodes of one replicated cluster (one address per node), sessions spread across them in turn")
	f.StringArrayVar(&c.ReadDBs, "read-db", nil, "a node that only takes reads (a hot standby), repeatable: transactions that only read go to these nodes (a serializable one at repeatable read, which a PostgreSQL standby allows), the others to the --db nodes")
	c.clusterFlags.register(f)
	f.StringVar(&c.Isolation, "isolation", "serializable", "isolation level to run at: serializable, repeatable-read, read-committed, read-uncommitted (SQLite, dqlite, nats-kv, zookeeper, redis and Badger: serializable only)")
	f.StringVar(&c.Table, "table", db.DefaultTable, "table to create and reset: k BIGINT PRIMARY KEY, v BIGINT, l TEXT (lists, comma-separated); on Badger, the prefix of the keys. isoscope marks the tables it creates and refuses (exit 2) to reset one that exists without its mark")
	f.StringVar(&c.Workload, "workload", "mt", "mt (mini-transactions), general (Cobra's), list-append (Elle's), lwt (compare-and-set), range (scans, iterators, deletes), or Boomslang's randombench, randomrange, randomrmwrange, blindw")
	f.IntVar(&c.Sessions, "sessions", 8, "concurrent sessions, one connection each (fewer than gen's simulated 24: each holds a server connection)")
	f.IntVar(&c.Txns, "txns", 10000, "transactions to run in all (retries of aborted ones come on top); with --duration and without --txns, no limit")
	f.DurationVar(&c.Duration, "duration", 0, "run for this long (wall-clock time, e.g. 30s, 5m) instead of a number of transactions; with --txns too, whichever comes first (0: until --txns are done)")
	f.IntVar(&c.Keys, "keys", 100, "keys (fewer than gen's 1000: a real database runs fewer transactions, and contention is what provokes anomalies)")
	f.StringVar(&c.Dist, "dist", "zipfian", "key distribution: uniform, zipfian, hotspot, exponential")
	f.Float64Var(&c.ReadRatio, "read-ratio", -1, "share of reads (-1: the workload's default: read-only transactions 0.2 for mt and general, 0.5 for blindw, reads 0.2 for lwt, read operations 0.5 for list-append and range; randombench, randomrange and randomrmwrange have fixed mixes)")
	f.IntVar(&c.Ops, "ops", 0, "operations per transaction for general and randombench, randomrange, randomrmwrange, blindw (default 8), at most for list-append and range (default 4)")
	f.Float64Var(&c.Duplicates, "duplicates", 0, "general: share of keys whose written values come from a small zipfian domain (not unique)")
	f.IntVar(&c.Span, "max-width", workload.DefaultSpan, "randombench, randomrange, randomrmwrange: the widest range a scan or iterator covers, in keys (the paper's; gen's default is 20)")
	f.IntVar(&c.Values, "value-domain", workload.DefaultValues, "randombench, randomrange: written values come from 1..N, so they repeat (gen's default is 5); blindw writes fresh values unless it is given")
	f.BoolVar(&c.LockRMW, "lock-rmw", false, "read-modify-writes lock what they read: every read of a key the transaction writes later is SELECT … FOR UPDATE, recorded with the lock attribute (PostgreSQL, MariaDB; on SQLite and dqlite every read already holds the write lock)")
	f.Uint64Var(&c.Seed, "seed", 0, "random seed of the plan (0: from the clock; the history's source records it)")
	f.IntVar(&c.Retries, "retries", runner.DefaultMaxRetries, "how often to retry a transaction the database aborted (each retry is a new transaction)")
	f.DurationVar(&c.StmtTimeout, "stmt-timeout", runner.DefaultStmtTimeout, "the server cancels a statement that runs longer (PostgreSQL statement_timeout, MariaDB max_statement_time); a statement, COMMIT or connection attempt with no answer after half as long again counts as a lost connection. 0: no limit")
	f.DurationVar(&c.ReconnectFor, "reconnect-for", runner.DefaultReconnectFor, "a session that lost the database reconnects, with exponential back-off and jitter, for up to this long; then the run stops, and checks the history it has. 0: do not wait")
	f.StringVarP(&c.Out, "out", "o", "", "history file (default isoscope-run-YYYYMMDD-HHMMSS.jsonl in the current directory)")
	f.BoolVar(&c.NoTrace, "no-trace", false, "record nothing and check nothing: only run, and report throughput")
	f.StringVar(&c.Collector.URL, "collector", "", "also publish each transaction as it finishes, for online checking: to isoscope serve at an http:// URL, or to NATS JetStream at a nats:// URL")
	f.StringVar(&c.Collector.Subject, "collector-subject", "isoscope.txns", "the NATS subject --collector publishes to")
	f.StringVar(&c.Collector.Token, "collector-token", os.Getenv("ISOSCOPE_TOKEN"), "bearer token for --collector's service (default $ISOSCOPE_TOKEN)")
	f.StringVar(&c.Collector.Stream, "collector-stream", "", "the run's stream at --collector's service, its own id space for transaction ids and sessions (default: a fresh run id, printed)")
	f.DurationVar(&c.Collector.Wait, "collector-wait", 30*time.Second, "after the run, how long to wait for the service's verdicts on the batches published to NATS")
	f.IntVar(&c.Collector.Shards, "collector-shards", 0, "with a nats:// --collector, publish each transaction as pieces for this many key shards and session shards (isoscope serve --shard; isoscope findings merges their findings)")
	f.StringVar(&c.Collector.Prefix, "collector-prefix", natsshard.DefaultPrefix, "with --collector-shards, the subjects' prefix")
	f.StringVar(&c.Level, "level", "", "isolation level to check (default: the one --isolation promises)")
	f.StringVar(&c.Checker, "checker", "auto", "algorithm: auto or one of "+strings.Join(check.Names(), ", "))
	f.BoolVar(&c.JSON, "json", false, "print the check's result as JSON")
	f.DurationVar(&c.Timeout, "timeout", 0, "give up checking after this long with outcome unknown (0: no limit)")
	f.IntVar(&c.PerKind, "max-shown", 3, maxShownHelp)
	f.StringVar(&c.Progress, "progress", progressAuto, progressFlagHelp)
	f.BoolVar(&c.NoHolds, "no-holds", false, "on a violation, do not check which weaker levels still hold")
	c.modelFlags.register(f)
	renamed(f, map[string]string{"span": "max-width", "values": "value-domain"})
	f.StringVar(&c.Report, "report", "", "write an HTML report to this directory: the run's plots (transactions per second, latency percentiles, abort reasons; SVG and PNG), and the check's verdict and anomalies (index.html, result.json, cycles.dot, a picture of each anomaly as SVG and DOT)")
	f.IntVar(&c.FenceEvery, "fence-every", 0, "mt, general, list-append, blindw: every session runs a fence transaction (read the fence key, the key after the workload's, then write or append to it; the header's fence_key) first, then after every N of its own transactions, so that the online checker can forget what no future cycle reaches (0: no fences)")
	f.BoolVar(&c.Online, "online", false, "check the history online as the run goes, black-box (no timestamps: list-append and registers with unique values, at ser, si or rc), each violation said on standard error as it is found, memory held by --memory-mb and the fences (--fence-every, default 100 with --online) however long the run; the history file is still written, not checked again at the end")
	f.Int64Var(&c.OnlineMemoryMB, "memory-mb", 1024, "with --online: the resident memory (RSS) the process is held under, in MiB: Go's soft limit is what the program's code and the rest outside Go leave of it, and the checker drops idle keys' settled state to fit (GOMEMLIMIT set: Go's limit is that, and only the checker's estimate is bounded by this; 0: no bound; a value below what the program itself needs is refused)")
	f.StringVar(&c.OnlineFindings, "online-findings", "", "with --online: also write each violation's JSON line (as isoscope serve writes them) to this file as it is found")
	f.IntVar(&c.AppendsPerKey, "appends-per-key", 0, "list-append: a key is retired after this many appends and a fresh one takes its place, as Elle does, so that lists stay short in a long run (0: never)")
	inGroup(f, groupCollector, "online", "memory-mb", "online-findings", "fence-every")
	inGroup(f, groupCollector, "collector", "collector-subject", "collector-token", "collector-stream", "collector-wait", "collector-shards", "collector-prefix")
	inGroup(f, groupCheck, "level", "checker", "json", "timeout", "max-shown", "no-holds", "own-reads", "module", "report")
	return cmd
}

// promisedLevel is the level a database promises at an isolation level:
// the level run checks by default.
func promisedLevel(iso db.Isolation) string {
	switch iso {
	case db.Serializable:
		return "ser"
	case db.RepeatableRead:
		// PostgreSQL's REPEATABLE READ is snapshot isolation; InnoDB's is
		// weaker (lost updates), which the check then reports.
		return "si"
	case db.ReadCommitted:
		return "rc"
	}
	return "ru"
}

// Run turns the flags into a pipeline.Config, runs it, and turns its
// result into the exit status.
func (c *runCommand) Run(ctx context.Context) error {
	if err := checkProgress(c.Progress); err != nil {
		return badInput(err)
	}
	// The progress bar is drawn only on a terminal: decided before
	// standard error is wrapped. The nemesis's log, the outage notes and
	// the status lines are written by goroutines of their own while the
	// run goes on: one lock orders their lines.
	bar := drawsProgress(c.Progress, c.io.Stderr)
	c.io.Stderr = &serialWriter{w: c.io.Stderr}
	var hold *memoryHold
	if c.Online {
		// The run keeps no history; the heap is the online checker's
		// state, each round's garbage and the run's buffers. The
		// collector runs at Go's default pace (not a batch check's
		// raised one), and the process's resident memory is held under
		// --memory-mb (memoryHold): Go's soft limit is what the program's
		// code and the rest outside Go leave of it, the checker's bound
		// half that limit (it drops idle keys' state past half its
		// bound), and the live heap is held under half the limit too.
		defer ownGC(100)()
		var err error
		if hold, err = memoryHoldFor("--memory-mb", c.OnlineMemoryMB); err != nil {
			return badInput(err)
		}
		defer hold.stop()
	}
	cfg, err := c.config(bar)
	if err != nil {
		return err
	}
	if hold != nil && cfg.Online != nil {
		cfg.Online.MemoryBytes = hold.checkerBound()
		cfg.Online.HeapTarget = hold.heapTarget
	}
	res, err := pipeline.Run(ctx, cfg, pipeline.IO{Stdout: c.io.Stdout, Stderr: c.io.Stderr})
	var interrupted *pipeline.InterruptedError
	switch {
	case errors.As(err, &interrupted):
		return &exitError{code: ExitUnknown, err: err}
	case err != nil:
		return badInput(err)
	case res.Status == pipeline.Violated:
		return &exitError{code: ExitViolation}
	case res.Status == pipeline.Undecided:
		return &exitError{code: ExitUnknown}
	}
	return nil
}

// config checks the flags and turns them into the run's configuration;
// bar says whether to draw a progress bar.
func (c *runCommand) config(bar bool) (pipeline.Config, error) {
	iso, err := db.ParseIsolation(c.Isolation)
	if err != nil {
		return pipeline.Config{}, unknownChoice("--isolation", "isolation", c.Isolation, []string{db.Serializable.String(), db.RepeatableRead.String(), db.ReadCommitted.String(), db.ReadUncommitted.String()})
	}
	opts := check.Options{Checker: c.Checker, Holds: !c.NoHolds}
	if err := c.modelFlags.options(&opts); err != nil {
		return pipeline.Config{}, badInput(err)
	}
	if c.Level == "" {
		c.Level = promisedLevel(iso)
		if opts.InnoDBRR {
			c.Level = "rr" // the model is InnoDB's repeatable read
		}
	}
	lvl, err := level.Lookup(c.Level)
	if err != nil {
		return pipeline.Config{}, blameFlag("--level", err)
	}
	if err := checkCheckerFlag(c.Checker); err != nil {
		return pipeline.Config{}, err
	}
	plan, endless, err := c.plan()
	if err != nil {
		return pipeline.Config{}, badInput(err)
	}
	if c.StmtTimeout < 0 || c.ReconnectFor < 0 {
		return pipeline.Config{}, badInput(errors.New("--stmt-timeout and --reconnect-for cannot be negative"))
	}
	if c.Duration < 0 {
		return pipeline.Config{}, badInput(errors.New("--duration cannot be negative"))
	}
	shown, err := maxShown(c.PerKind)
	if err != nil {
		return pipeline.Config{}, badInput(err)
	}
	faults, err := c.clusterFlags.check(c.DBs, c.ReadDBs)
	if err != nil {
		return pipeline.Config{}, badInput(err)
	}
	cfg := pipeline.Config{
		Plan: plan, Endless: endless, Seed: c.Seed, Duration: c.Duration, Isolation: iso, Retries: c.Retries, NoTrace: c.NoTrace,
		DBs: c.DBs, ReadDBs: c.ReadDBs, Table: c.Table, Hop: c.Hop, StmtTimeout: c.StmtTimeout, ReconnectFor: c.ReconnectFor,
		ClusterDir: c.ClusterDir, ClusterClocks: c.clocks, Faults: faults, FaultsNamed: c.Faults, FaultInterval: c.FaultInterval,
		Out: c.Out, Collector: c.Collector,
		Level: lvl, LevelChosen: c.LevelSet, Check: opts, Timeout: c.Timeout, JSON: c.JSON, Shown: shown, Report: c.Report,
		Progress: bar,
		Hooks:    c.hooks,
	}
	if c.Progress == progressAlways {
		stderr := c.io.Stderr
		cfg.StatusLines = func(line func() string) func() { return statusLines(stderr, line) }
		cfg.CheckMeter = func(ctx context.Context) (context.Context, func()) {
			return withMeter(ctx, IO{Stdout: c.io.Stdout, Stderr: stderr}, c.Progress, "checking the history")
		}
	}
	if c.Cluster != "" {
		spec, _ := cluster.ParseSpec(c.Cluster) // checked by clusterFlags.check
		cfg.Cluster = &spec
	}
	if c.Online {
		if c.OnlineMemoryMB < 0 {
			return pipeline.Config{}, badInput(errors.New("--memory-mb cannot be negative"))
		}
		cfg.Online = &pipeline.Online{Level: lvl, MemoryBytes: c.OnlineMemoryMB << 20}
		if c.OnlineFindings != "" {
			f, err := os.Create(c.OnlineFindings)
			if err != nil {
				return pipeline.Config{}, badInput(err)
			}
			cfg.Online.Findings = f // closed when the process ends
		}
	} else if c.OnlineFindings != "" {
		return pipeline.Config{}, badInput(errors.New("--online-findings writes what --online finds: give --online"))
	}
	return cfg, nil
}

// plan draws the run's plan: endless when --duration is given without
// --txns (the plan is then the endless plan's).
func (c *runCommand) plan() (*workload.Plan, *workload.Endless, error) {
	w, err := workload.ParseWorkload(c.Workload)
	if err != nil {
		return nil, nil, unknownChoice("--workload", "workload", c.Workload, workloadNames())
	}
	dist, err := workload.ParseDistribution(c.Dist)
	if err != nil {
		return nil, nil, unknownChoice("--dist", "key distribution", c.Dist, distNames())
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	pc := workload.PlanConfig{
		Workload: w, Sessions: c.Sessions, Txns: c.Txns, Keys: c.Keys, Dist: dist,
		ReadRatio: c.ReadRatio, Ops: c.Ops, Duplicates: c.Duplicates, Span: c.Span, Values: c.Values,
		LockRMW: c.LockRMW, FenceEvery: c.FenceEvery, AppendsPerKey: c.AppendsPerKey,
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	if c.Duration > 0 && !c.txnsSet {
		e, err := workload.NewEndless(pc, r)
		if err != nil {
			return nil, nil, err
		}
		return e.Plan, e, nil
	}
	p, err := workload.NewPlan(pc, r)
	return p, nil, err
}
