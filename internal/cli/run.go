package cli

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/collect"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/natsshard"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/report/htmlreport"
	"github.com/isoscope/isoscope/internal/report/runplot"
	"github.com/isoscope/isoscope/internal/runner"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/textfmt"
	"github.com/isoscope/isoscope/internal/workload"
)

// runCommand is `isoscope run [flags]`.
type runCommand struct {
	io IO
	DB string
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
	NoHolds    bool
	Report     string
	// Collector publishes each transaction as it finishes: to
	// `isoscope serve` (an http:// or https:// URL) or to a NATS
	// JetStream subject (a nats:// URL).
	Collector        string
	CollectorSubject string
	CollectorToken   string
	// CollectorStream is the run's stream at the service (default: a
	// fresh run id); CollectorWait bounds the wait for the verdicts of the
	// batches published to NATS.
	CollectorStream string
	CollectorWait   time.Duration
	// CollectorShards, with a nats:// collector, publishes each
	// transaction as per-shard pieces under CollectorPrefix for checkers
	// of shards (serve --shard) instead of whole to CollectorSubject.
	CollectorShards int
	CollectorPrefix string
	// collectMutate rewrites published lines (tests plant faults here);
	// historyMutate rewrites the history's lines, written and published
	// (not the run's record, which its own check judges).
	collectMutate, historyMutate func([]byte) []byte
	modelFlags
	// described says what ran (for --report); label is the plots'
	// second title line.
	described, label string

	// StmtTimeout bounds each statement (and the wait for its answer);
	// ReconnectFor, how long a session seeks the database it lost.
	StmtTimeout, ReconnectFor time.Duration
	// hook is the runner's Hook (tests inject faults here).
	hook func(recorded int)
}

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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.LevelSet = cmd.Flags().Changed("level")
			c.txnsSet = cmd.Flags().Changed("txns")
			if !cmd.Flags().Changed("value-domain") {
				c.Values = 0 // the workload's own: fresh values for blindw
			}
			return c.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&c.DBs, "db", nil, "database: postgres://user@host:5432/db, mysql://user@host:3306/db (or user@tcp(host:port)/db), sqlite://FILE, badger://DIR, badger::memory:, etcd://host:2379[,host:port…] or dqlite://host:port[,host:port…][/db]; default sqlite::memory:. Given more than once: the nodes of one replicated cluster (one address per node), sessions spread across them in turn")
	f.StringArrayVar(&c.ReadDBs, "read-db", nil, "a node that only takes reads (a hot standby), repeatable: transactions that only read go to these nodes (a serializable one at repeatable read, which a PostgreSQL standby allows), the others to the --db nodes")
	c.clusterFlags.register(f)
	f.StringVar(&c.Isolation, "isolation", "serializable", "isolation level to run at: serializable, repeatable-read, read-committed, read-uncommitted (SQLite, dqlite and Badger: serializable only)")
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
	f.StringVar(&c.Collector, "collector", "", "also publish each transaction as it finishes, for online checking: to isoscope serve at an http:// URL, or to NATS JetStream at a nats:// URL")
	f.StringVar(&c.CollectorSubject, "collector-subject", "isoscope.txns", "the NATS subject --collector publishes to")
	f.StringVar(&c.CollectorToken, "collector-token", os.Getenv("ISOSCOPE_TOKEN"), "bearer token for --collector's service (default $ISOSCOPE_TOKEN)")
	f.StringVar(&c.CollectorStream, "collector-stream", "", "the run's stream at --collector's service, its own id space for transaction ids and sessions (default: a fresh run id, printed)")
	f.DurationVar(&c.CollectorWait, "collector-wait", 30*time.Second, "after the run, how long to wait for the service's verdicts on the batches published to NATS")
	f.IntVar(&c.CollectorShards, "collector-shards", 0, "with a nats:// --collector, publish each transaction as pieces for this many key shards and session shards (isoscope serve --shard; isoscope findings merges their findings)")
	f.StringVar(&c.CollectorPrefix, "collector-prefix", natsshard.DefaultPrefix, "with --collector-shards, the subjects' prefix")
	f.StringVar(&c.Level, "level", "", "isolation level to check (default: the one --isolation promises)")
	f.StringVar(&c.Checker, "checker", "auto", fmt.Sprintf("algorithm: auto or one of %v", check.Names()))
	f.BoolVar(&c.JSON, "json", false, "print the check's result as JSON")
	f.DurationVar(&c.Timeout, "timeout", 0, "give up checking after this long with outcome unknown (0: no limit)")
	f.IntVar(&c.PerKind, "max-shown", 3, "how many anomalies of each kind the text output shows")
	f.BoolVar(&c.NoHolds, "no-holds", false, "on a violation, do not check which weaker levels still hold")
	c.modelFlags.register(f)
	renamed(f, map[string]string{"span": "max-width", "values": "value-domain"})
	f.StringVar(&c.Report, "report", "", "write an HTML report to this directory: the run's plots (transactions per second, latency percentiles, abort reasons; SVG and PNG), and the check's verdict and anomalies (index.html, result.json, cycles.dot, a picture of each anomaly as SVG and DOT)")
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

// Run runs the workload, then checks the history.
func (c *runCommand) Run(ctx context.Context) error {
	iso, err := db.ParseIsolation(c.Isolation)
	if err != nil {
		return badInput(err)
	}
	var model check.Options
	if err := c.modelFlags.options(&model); err != nil {
		return badInput(err)
	}
	if c.Level == "" {
		c.Level = promisedLevel(iso)
		if model.InnoDBRR {
			c.Level = "rr" // the model is InnoDB's repeatable read
		}
	}
	lvl, err := level.Lookup(c.Level)
	if err != nil {
		return badInput(err)
	}
	plan, endless, err := c.plan()
	if err != nil {
		return badInput(err)
	}
	if c.StmtTimeout < 0 || c.ReconnectFor < 0 {
		return badInput(errors.New("--stmt-timeout and --reconnect-for cannot be negative"))
	}
	if c.Duration < 0 {
		return badInput(errors.New("--duration cannot be negative"))
	}
	nemesisOf, err := c.clusterFlags.check(c.DBs, c.ReadDBs)
	if err != nil {
		return badInput(err)
	}
	if c.Cluster != "" {
		cl, err := c.standUp(ctx)
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(c.io.Stderr, "isoscope: interrupted while the cluster was starting: %v\n", err)
				return &exitError{code: ExitUnknown}
			}
			return badInput(err)
		}
		defer c.tearDown(cl)
	}
	if len(c.DBs) == 0 {
		c.DBs = []string{c.DB}
	}
	target, d, err := c.openDatabase(ctx)
	if err != nil {
		return badInput(err)
	}
	defer d.Close()
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := d.Supports(iso); err != nil {
		return badInput(err)
	}
	version, err := d.Version(openCtx)
	if err != nil {
		return badInput(fmt.Errorf("%s: %v", target.Display, err))
	}
	if err := d.Reset(openCtx); err != nil {
		return badInput(err)
	}
	cfg := runner.Config{
		DB: d, Isolation: iso, Plan: plan, Endless: endless, NoTrace: c.NoTrace, MaxRetries: c.Retries, Duration: c.Duration,
		Source: fmt.Sprintf("isoscope run: %s (%s) at %s; %s seed=%d", version, target.Display, iso, plan.Config, c.Seed),
	}
	if endless != nil {
		cfg.Source = fmt.Sprintf("isoscope run: %s (%s) at %s; %s seed=%d", version, target.Display, iso, endless, c.Seed)
	}
	if c.Duration > 0 {
		cfg.Source += fmt.Sprintf(" duration=%s", c.Duration)
	}
	if c.Retries == 0 {
		cfg.MaxRetries = -1
	}
	cfg.StmtTimeout, cfg.ReconnectFor, cfg.Hook = c.StmtTimeout, c.ReconnectFor, c.hook
	// The nemesis's log and the outage notes are written by goroutines of
	// their own while the run goes on: one lock orders their lines.
	notes := &serializedWriter{w: c.io.Stderr}
	cfg.Nemesis = nemesisOf(c.cluster, c.Seed, notes)
	if c.cluster != nil {
		cfg.Source += "; cluster " + c.cluster.Spec.String()
		if c.Faults != "" {
			cfg.Source += fmt.Sprintf(" faults=%s every %s", c.Faults, c.FaultInterval)
		}
	}
	if c.StmtTimeout == 0 {
		cfg.StmtTimeout = -1
	}
	if c.ReconnectFor == 0 {
		cfg.ReconnectFor = -1
	}
	var file *os.File
	if !c.NoTrace {
		if c.Out == "" {
			c.Out = "isoscope-run-" + time.Now().Format("20060102-150405") + ".jsonl"
		}
		if file, err = os.Create(c.Out); err != nil {
			return badInput(err)
		}
		cfg.Out = file
	}
	var cw *collect.Writer
	if c.Collector != "" {
		if c.NoTrace {
			return badInput(errors.New("--collector publishes the history --no-trace does not record"))
		}
		id := c.identity(target)
		pub, err := c.publisher(id)
		if err != nil {
			return badInput(err)
		}
		defer pub.Close()
		cw = collect.NewWriter(ctx, pub)
		cw.Mutate = c.collectMutate
		cfg.Out = io.MultiWriter(file, cw)
		fmt.Fprintf(c.io.Stderr, "collector: publishing to %s as %s\n", c.Collector, id)
	}
	if c.historyMutate != nil {
		cfg.Out = &lineRewriter{w: cfg.Out, rewrite: c.historyMutate}
	}
	cfg.Progress = &runner.Progress{}
	total := plan.Len()
	if endless != nil {
		total = -1 // a spinner: no end known
	}
	stopBar := c.progress(cfg.Progress, total)
	stopWatch := c.watchOutages(cfg.Progress, notes)
	res, err := runner.Run(ctx, cfg)
	stopWatch()
	stopBar()
	if file != nil {
		if cerr := file.Close(); err == nil && res != nil && cerr != nil {
			res.Summary.Errors = append(res.Summary.Errors, fmt.Errorf("writing the history: %v", cerr))
		}
	}
	if err != nil {
		return badInput(fmt.Errorf("%s: %v", target.Display, err))
	}
	cut := c.summarize(res, version, iso, plan, endless != nil)
	if c.NoTrace {
		if err := c.writeReport(res, nil); err != nil {
			return badInput(err)
		}
		return cutShort(cut)
	}
	err = c.check(ctx, res, lvl, cut)
	if cw != nil {
		err = c.collected(ctx, cw, err)
	}
	return err
}

// collected says on standard error what became of the batches the
// collector published, and fails a run whose online check is incomplete:
// a batch the service refused or never confirmed turns an exit status
// below 3 (the level holds) into 3, undecided, as a run cut short does.
// A violation found in the history (1) stays.
func (c *runCommand) collected(ctx context.Context, cw *collect.Writer, err error) error {
	wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.CollectorWait)
	defer cancel()
	o := cw.Outcome(wait)
	if o.Complete() {
		fmt.Fprintf(c.io.Stderr, "collector: %s took all %d batches (%d transactions)\n", c.Collector, o.Batches, o.Txns)
		return err
	}
	fmt.Fprintf(c.io.Stderr, "collector: %s refused %d of %d batches (%d of %d transactions; a batch it could not be sent counts as refused)", c.Collector, o.Refused, o.Batches, o.RefusedTxns, o.Txns)
	if o.Unconfirmed > 0 {
		fmt.Fprintf(c.io.Stderr, "; %d batches had no verdict within %s", o.Unconfirmed, c.CollectorWait)
	}
	fmt.Fprintln(c.io.Stderr, ": the online check is incomplete")
	if o.First != nil {
		fmt.Fprintf(c.io.Stderr, "  first refusal: %v\n", o.First)
	}
	var exit *exitError
	if err == nil || errors.As(err, &exit) && exit.code == ExitHolds {
		return &exitError{code: ExitUnknown}
	}
	return err
}

// identity is the run's stream at the collector's service: its own id
// space (every run numbers its transactions from 1), in the keyspace of
// its database — the run's own when the database lives in this process,
// the database's address and table otherwise, which other runs against it
// share.
func (c *runCommand) identity(target db.Target) serve.Identity {
	id := serve.Identity{Stream: c.CollectorStream}
	if id.Stream == "" {
		var b [4]byte
		_, _ = crand.Read(b[:])
		id.Stream = fmt.Sprintf("run-%s-%x", time.Now().UTC().Format("20060102T150405"), b)
	}
	id.Keyspace = target.Display + "#" + c.Table
	if target.InMemory() {
		id.Keyspace = id.Stream
	}
	return id
}

// lineRewriter rewrites each complete line written through it (tests
// plant faults in a run's history, file and collector alike).
type lineRewriter struct {
	w       io.Writer
	rewrite func([]byte) []byte
	partial []byte
}

func (l *lineRewriter) Write(p []byte) (int, error) {
	buf := append(l.partial, p...)
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		l.partial = buf
		return len(p), nil
	}
	var out []byte
	for _, line := range bytes.SplitAfter(buf[:end+1], []byte("\n")) {
		if len(line) > 0 {
			out = append(out, l.rewrite(line)...)
		}
	}
	l.partial = append([]byte(nil), buf[end+1:]...)
	if _, err := l.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// plan draws the run's plan: endless when --duration is given without
// --txns (the plan is then the endless plan's).
func (c *runCommand) plan() (*workload.Plan, *workload.Endless, error) {
	w, err := workload.ParseWorkload(c.Workload)
	if err != nil {
		return nil, nil, err
	}
	dist, err := workload.ParseDistribution(c.Dist)
	if err != nil {
		return nil, nil, err
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	pc := workload.PlanConfig{
		Workload: w, Sessions: c.Sessions, Txns: c.Txns, Keys: c.Keys, Dist: dist,
		ReadRatio: c.ReadRatio, Ops: c.Ops, Duplicates: c.Duplicates, Span: c.Span, Values: c.Values,
		LockRMW: c.LockRMW,
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

// progress draws a bar of finished transactions with the committed and
// aborted counts on standard error when it is a terminal; the returned
// function stops and clears it.
func (c *runCommand) progress(p *runner.Progress, total int) func() {
	if !terminal(c.io.Stderr) {
		return func() {}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(c.io.Stderr),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("txn"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			desc := fmt.Sprintf("committed %d, aborted %d", p.Committed.Load(), p.Aborted.Load())
			if u := p.Unknown.Load(); u > 0 {
				desc += fmt.Sprintf(", unknown %d", u)
			}
			if n := p.Reconnecting.Load(); n > 0 {
				desc += fmt.Sprintf(", %s reconnecting", textfmt.Count(int(n), "session"))
			}
			bar.Describe(desc)
			_ = bar.Set64(p.Done.Load())
			select {
			case <-done:
				_ = bar.Finish()
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// watchOutages says on w, when standard error is not a terminal (where
// the progress bar shows it), when sessions lose the database and when it
// answers them all again; the returned function stops watching.
func (c *runCommand) watchOutages(p *runner.Progress, w io.Writer) func() {
	if terminal(c.io.Stderr) {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var since time.Time
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			n := p.Reconnecting.Load()
			switch {
			case n > 0 && since.IsZero():
				since = time.Now()
				fmt.Fprintf(w, "%s lost the database: %s reconnecting (for up to %s)\n", since.Format("15:04:05.0"), textfmt.Count(int(n), "session"), c.ReconnectFor)
			case n == 0 && !since.IsZero():
				fmt.Fprintf(w, "%s the database answers again, %s after the loss was noticed\n", time.Now().Format("15:04:05.0"), time.Since(since).Round(100*time.Millisecond))
				since = time.Time{}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// serializedWriter writes to w for goroutines that share it, one write at a
// time.
type serializedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *serializedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// summarize prints what the run did to standard error, and reports
// whether it was cut short.
func (c *runCommand) summarize(res *runner.Result, version string, iso db.Isolation, plan *workload.Plan, endless bool) bool {
	s := &res.Summary
	w := c.io.Stderr
	planned := textfmt.Count(s.Planned, "transaction") + " planned"
	switch {
	case endless:
		planned = "for " + c.Duration.String()
	case c.Duration > 0:
		planned += " or " + c.Duration.String()
	}
	c.described = fmt.Sprintf("%s on %s at %s: %s, %s, %d done in %s",
		plan.Config.Workload, version, iso, textfmt.Count(len(plan.Sessions), "session"), planned, s.Done, s.Elapsed.Round(time.Millisecond))
	c.label = fmt.Sprintf("%s on %s at %s, %s", plan.Config.Workload, version, iso, textfmt.Count(len(plan.Sessions), "session"))
	fmt.Fprintf(w, "ran %s\n", c.described)
	fmt.Fprintf(w, "  %d committed (%.0f/s), %d aborted (%.1f%%), %d unknown", s.Committed, s.Throughput(), s.Aborted, 100*s.AbortRate(), s.Unknown)
	if s.GaveUp > 0 {
		fmt.Fprintf(w, ", %d given up after %d retries", s.GaveUp, c.Retries)
	}
	if s.Reconnects > 0 {
		fmt.Fprintf(w, ", %s", textfmt.Count(s.Reconnects, "reconnection"))
	}
	fmt.Fprintln(w)
	reasons := make([]string, 0, len(s.Reasons))
	for why := range s.Reasons {
		reasons = append(reasons, why)
	}
	slices.SortFunc(reasons, func(a, b string) int { return s.Reasons[b] - s.Reasons[a] })
	for _, why := range reasons {
		fmt.Fprintf(w, "  %6d %s\n", s.Reasons[why], why)
	}
	for i, o := range s.Outages {
		if i == 5 {
			fmt.Fprintf(w, "  … and %d more %s\n", len(s.Outages)-i, map[bool]string{true: "outage", false: "outages"}[len(s.Outages)-i == 1])
			break
		}
		end := "all reconnected"
		if !o.Recovered {
			end = "not all reconnected"
		}
		fmt.Fprintf(w, "  outage: %s without an answer, %s to %s into the run, %s; %s\n",
			o.Duration().Round(10*time.Millisecond), o.Start.Round(10*time.Millisecond), o.End.Round(10*time.Millisecond), textfmt.Count(o.Sessions, "session"), end)
	}
	printFaults(w, res.Faults, res.Start)
	if res.History != nil {
		faults := ""
		if n := len(res.History.Faults); n > 0 {
			faults = ", " + textfmt.Count(n, "fault")
		}
		fmt.Fprintf(w, "history: %s (%s%s)\n", c.Out, textfmt.Count(len(res.History.Txns), "transaction"), faults)
	}
	cut := s.Interrupted || len(s.Errors) > 0
	switch {
	case s.Interrupted:
		fmt.Fprintf(w, "the run was interrupted: in-flight transactions whose COMMIT was sent are recorded unknown, the others aborted\n")
	case len(s.Errors) > 0:
		var lost *runner.LostError
		for _, err := range s.Errors {
			if errors.As(err, &lost) {
				fmt.Fprintf(w, "the run stopped: the database did not answer again within --reconnect-for %s; the history holds every transaction until then (those whose COMMIT was in flight unknown, the others in flight aborted)\n", c.ReconnectFor)
				break
			}
		}
		fmt.Fprintf(w, "the run stopped early:\n")
		for i, err := range s.Errors {
			if i == 3 {
				fmt.Fprintf(w, "  … and %d more\n", len(s.Errors)-i)
				break
			}
			fmt.Fprintf(w, "  %v\n", err)
		}
	}
	return cut
}

// cutShort is the exit of a run that ended early without a violation.
func cutShort(cut bool) error {
	if cut {
		return &exitError{code: ExitUnknown}
	}
	return nil
}

// check checks the recorded history and prints the verdict as `check`
// does. A run that was interrupted is still checked (the history is
// complete), without the interrupted context.
func (c *runCommand) check(ctx context.Context, res *runner.Result, lvl level.Level, cut bool) error {
	if res.Summary.Interrupted {
		ctx = context.WithoutCancel(ctx)
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	start := time.Now()
	opts := check.Options{Checker: c.Checker, Holds: !c.NoHolds}
	if err := c.modelFlags.options(&opts); err != nil {
		return badInput(err)
	}
	result, err := check.Run(ctx, res.History, lvl, opts)
	var unsupported *check.UnsupportedError
	if errors.As(err, &unsupported) && !c.LevelSet {
		if err := c.writeReport(res, nil); err != nil {
			return badInput(err)
		}
		fmt.Fprintf(c.io.Stdout, "%s not checked: %v\n(the history is in %s; --level chooses another level)\n",
			lvl.Name, strings.ReplaceAll(err.Error(), "\n", "\n  "), c.Out)
		return cutShort(cut)
	}
	if err != nil {
		return badInput(fmt.Errorf("%s: %w", c.Out, err))
	}
	checked := &report.Checked{File: c.Out, History: res.History, Result: result, Elapsed: time.Since(start)}
	if err := c.writeReport(res, checked); err != nil {
		return badInput(err)
	}
	if c.JSON {
		err = report.JSON(c.io.Stdout, checked)
	} else {
		err = report.Text(c.io.Stdout, checked, report.TextOptions{PerKind: c.PerKind})
	}
	if err != nil {
		return err
	}
	switch {
	case result.Outcome == check.Violation:
		return &exitError{code: ExitViolation}
	case result.Outcome == check.Unknown:
		return &exitError{code: ExitUnknown}
	}
	return cutShort(cut)
}

// writeReport writes what --report asks for: the run's plots as SVG and
// PNG files, and the page showing the run, its plots and, when the
// history was checked, the verdict (with result.json and cycles.dot).
func (c *runCommand) writeReport(res *runner.Result, checked *report.Checked) error {
	if c.Report == "" {
		return nil
	}
	rp := runplot.FromOutcomes(c.label, res.Start, res.Summary.Elapsed, res.Outcomes)
	rp.AddFaults(res.Start, res.Faults)
	figs, err := runplot.Draw(rp)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if _, err := runplot.WriteFiles(c.Report, figs); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	run := &htmlreport.Run{Description: c.described, Stats: runStats(&res.Summary)}
	for _, f := range figs {
		run.Plots = append(run.Plots, htmlreport.Plot{ID: "plot-" + f.Name, Title: f.Title, Caption: f.Caption, SVG: f.SVG,
			Links: []htmlreport.Link{{Text: "SVG", Href: f.Name + ".svg"}, {Text: "PNG", Href: f.Name + ".png"}}})
	}
	var secs []htmlreport.Section
	var result []byte
	if checked != nil {
		secs = []htmlreport.Section{htmlreport.FromChecked(checked)}
		var b bytes.Buffer
		if err := report.JSON(&b, checked); err != nil {
			return err
		}
		result = b.Bytes()
	}
	if err := writeReportDir(c.Report, secs, result, htmlreport.Options{Title: "isoscope run report", Run: run}); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	fmt.Fprintf(c.io.Stderr, "report: %s\n", filepath.Join(c.Report, reportPage))
	return nil
}

// runStats are the run's figures the report shows.
func runStats(s *runner.Summary) []htmlreport.Stat {
	st := []htmlreport.Stat{
		{Label: "elapsed", Value: s.Elapsed.Round(time.Millisecond).String()},
		{Label: "committed", Value: textfmt.Thousands(s.Committed)},
		{Label: "committed/s", Value: textfmt.Thousands(int(math.Round(s.Throughput())))},
		{Label: "aborted", Value: textfmt.Thousands(s.Aborted)},
		{Label: "abort rate", Value: fmt.Sprintf("%.1f%%", 100*s.AbortRate())},
		{Label: "unknown", Value: textfmt.Thousands(s.Unknown)},
	}
	if s.GaveUp > 0 {
		st = append(st, htmlreport.Stat{Label: "given up", Value: textfmt.Thousands(s.GaveUp)})
	}
	if s.Reconnects > 0 {
		st = append(st, htmlreport.Stat{Label: "reconnections", Value: textfmt.Thousands(s.Reconnects)})
	}
	if len(s.Outages) > 0 {
		var longest time.Duration
		for _, o := range s.Outages {
			longest = max(longest, o.Duration())
		}
		st = append(st, htmlreport.Stat{Label: "outages", Value: fmt.Sprintf("%d (longest %s)", len(s.Outages), longest.Round(10*time.Millisecond))})
	}
	return st
}

// publisher connects to --collector, publishing as id.
func (c *runCommand) publisher(id serve.Identity) (collect.Publisher, error) {
	switch {
	case strings.HasPrefix(c.Collector, "nats://") && c.CollectorShards > 0:
		return natsshard.NewPublisher(context.Background(), natsshard.PublisherConfig{Config: natsshard.Config{URL: c.Collector, Prefix: c.CollectorPrefix},
			Shards: c.CollectorShards, Identity: id})
	case strings.HasPrefix(c.Collector, "nats://"):
		return collect.DialNATS(c.Collector, c.CollectorSubject, id)
	case strings.HasPrefix(c.Collector, "http://"), strings.HasPrefix(c.Collector, "https://"):
		return &collect.HTTP{URL: c.Collector, Token: c.CollectorToken, ID: id}, nil
	}
	return nil, fmt.Errorf("--collector %q: want an http://, https:// or nats:// URL", c.Collector)
}
