package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/natsin"
	"github.com/isoscope/isoscope/internal/natsshard"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/report/htmlreport"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/serve/spillfile"
	"github.com/isoscope/isoscope/internal/shard"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// serveCommand is `isoscope serve [flags]`.
type serveCommand struct {
	io       IO
	Listen   string
	Token    string
	Level    string
	Timeout  time.Duration
	MemoryMB int64
	SpillDir string
	Queue    int
	// MaxBodyMB bounds a batch's body (MiB); ReadTimeout the reading of a
	// whole request, BodyTimeout a body's silence; MaxConns the open
	// connections.
	MaxBodyMB int64
	// maxBodySet says --max-body-mb was given: else it is lowered to fit
	// a small --memory-mb.
	maxBodySet  bool
	ReadTimeout time.Duration
	BodyTimeout time.Duration
	MaxConns    int
	// NATS, when set, is a NATS server to consume batches from (a
	// JetStream durable consumer on NATSSubject in stream NATSStream).
	NATS        string
	NATSStream  string
	NATSSubject string
	NATSDurable string
	// LogFormat is how the log on standard error is written: text or
	// json.
	LogFormat string
	// Shard, when set (k:N or s:N), makes the service a checker of one
	// shard of --shards, reading PREFIX.k.N or PREFIX.s.N from --nats and
	// publishing its findings on PREFIX.findings.
	Shard    string
	Shards   int
	Prefix   string
	Replicas int
	// Checker is aion (by timestamps) or blackbox (the online black-box
	// checker); FenceKey the black-box checker's fence key.
	Checker  string
	FenceKey string
}

func newServeCommand(std IO) *cobra.Command {
	c := &serveCommand{io: std}
	cmd := &cobra.Command{
		Use: "serve [flags]",
		Example: `  # the online checker on its default port, at snapshot isolation
  isoscope serve --listen 127.0.0.1:7878 --level si

  # also consuming batches from NATS JetStream
  isoscope serve --nats nats://127.0.0.1:4222 --level ser

  # the checker of key shard 0 of 4 in a sharded deployment (see isoscope publish)
  isoscope serve --nats nats://127.0.0.1:4222 --shard k:0 --shards 4

  # then, from another terminal, a run that feeds it as it goes:
  #   isoscope run --collector http://127.0.0.1:7878`,
		Short: "check transactions online as they happen (Aion)",
		Long: `serve runs the online checker (Aion: snapshot isolation, or serializability in
commit-timestamp order, by the database's start_ts/commit_ts) as an HTTP service.
POST batches of transactions (JSON Lines of the history format) to
/v1/transactions, each in its producer's stream: the Isoscope-Stream header (or
?stream=) names the stream, whose transaction ids and sessions are its own, and
Isoscope-Keyspace (or ?keyspace=) the database whose keys it shares with the
other streams of that keyspace; a batch without them goes to the default stream
and keyspace. The answer comes once the checker has validated the batch against
what it holds: 202 when it took it ({"accepted":N,"duplicates":D}: a transaction
sent again as it was accepted, a retry, is taken once and counted as a duplicate),
400 naming the line of a bad one, 409 naming the line of a different transaction
under an id the stream already has, 413 over --max-body-mb, 429 (before the
body is read) when the queue or the memory kept for batches (a quarter of
--memory-mb) is full, 408 when the body stalls for --body-timeout; a refused
batch is kept in no part. At most --max-conns connections are open at once. Final violations are written to standard output as
JSON lines (standard output carries nothing else) and served at /v1/violations
(?after=SEQ); in a keyspace that lost a refused batch, findings about reads of
other transactions' writes are suppressed, since the missing writer may explain
them (counted in isoscope_findings_suppressed_total, and said as a warning in
/v1/state, on the live page and after the summary). An Ext verdict (a stale read, a read
beyond the snapshot) is final --ext-timeout after its transaction arrived. / is a
live page of the service's state and its violations as they arrive (open it in
a browser; with a token, as /#token=T), /v1/state its state as JSON, /v1/faults the fault records (a nemesis's, as
isoscope run --faults records them) the batches carried, which are kept and
listed, never checked, /metrics
Prometheus metrics, /healthz and /readyz the probes. It listens on
loopback unless --listen says otherwise, and then only with a bearer token
(--token, or ISOSCOPE_TOKEN), checked before it binds. With --nats it also consumes batches (one or more
transaction lines per message, the identity in the same headers) from a
JetStream durable consumer, acknowledging each once the checker took it and
terminating those it refused; a message with an Isoscope-Verdicts header gets
its verdict published to that subject. Refusals are counted by reason in
isoscope_batches_rejected_total and logged; the log (text, or JSON with
--log-format json) goes to standard error. On interrupt it stops intake, checks
what was queued, and writes the verdicts still pending (marked "pending")
before it exits, with a summary in the log.

With --shard k:N or s:N (and --nats) it is the checker of one shard of a
sharded deployment (docs/scaling.md): it reads the pieces isoscope publish or
run --collector-shards published on PREFIX.k.N or PREFIX.s.N from the first
message, checks the key axioms (Int, Ext, NoConflict) or the session axiom with
the messages' JetStream timestamps as its clock, publishes each final finding
on PREFIX.findings (isoscope findings merges them), and checkpoints, once its
findings are stored, how far it got; started again, it replays its subject to
the checkpoint without publishing and goes on.`,
		Args: wantArgs(0, 0, "", ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.maxBodySet = cmd.Flags().Changed("max-body-mb")
			return c.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&c.Listen, "listen", "127.0.0.1:7878", "address to listen on")
	cmd.Flags().StringVar(&c.Token, "token", os.Getenv("ISOSCOPE_TOKEN"), "bearer token clients must send (default $ISOSCOPE_TOKEN); required beyond loopback")
	cmd.Flags().StringVar(&c.Level, "level", "si", "snapshot-isolation (si) or serializable (ser)")
	cmd.Flags().DurationVar(&c.Timeout, "ext-timeout", serve.DefaultTimeout, "how long an Ext verdict stays pending (a delay, not a limit: check's and run's --timeout is a limit)")
	renamed(cmd.Flags(), map[string]string{"timeout": "ext-timeout"})
	cmd.Flags().Int64Var(&c.MemoryMB, "memory-mb", 1024, "the memory the service may use, in MiB: the checker spills to disk past 5/8 of it, and Go's collector holds the heap under it unless GOMEMLIMIT says otherwise (0: no bound, never spill); with --checker blackbox, the resident memory (RSS) the process is held under, idle keys' settled state dropped to fit (a value below what the program itself needs is refused)")
	cmd.Flags().StringVar(&c.SpillDir, "spill-dir", "", "where to spill (default: a fresh temporary directory, removed at exit)")
	cmd.Flags().IntVar(&c.Queue, "queue", 64, "batches that may be read, parsed or wait for the checker at once before 429")
	cmd.Flags().Int64Var(&c.MaxBodyMB, "max-body-mb", serve.DefaultMaxBatch>>20, "the largest batch body, in MiB (413 beyond); parsing takes up to 4 times as much, and a quarter of --memory-mb is kept for batches being parsed or waiting (429 when full); lowered to fit a --memory-mb under 1024 unless given")
	cmd.Flags().DurationVar(&c.ReadTimeout, "read-timeout", serve.DefaultReadTimeout, "how long reading a whole request may take")
	cmd.Flags().DurationVar(&c.BodyTimeout, "body-timeout", serve.DefaultBodyTimeout, "how long a request body may send nothing before it is refused (408) and its connection closed")
	cmd.Flags().IntVar(&c.MaxConns, "max-conns", serve.DefaultMaxConns, "open connections at most (503 and closed beyond); keep it well under the file limit (ulimit -n)")
	cmd.Flags().StringVar(&c.NATS, "nats", "", "also consume batches from NATS JetStream at this URL (nats://127.0.0.1:4222)")
	cmd.Flags().StringVar(&c.NATSStream, "nats-stream", "ISOSCOPE", "the JetStream stream (created over --nats-subject if missing)")
	cmd.Flags().StringVar(&c.NATSSubject, "nats-subject", "isoscope.txns", "the subject carrying the batches")
	cmd.Flags().StringVar(&c.NATSDurable, "nats-durable", "isoscope-serve", "the durable consumer's name")
	cmd.Flags().StringVar(&c.LogFormat, "log-format", "text", "the log on standard error: text or json")
	cmd.Flags().StringVar(&c.Shard, "shard", "", "check one shard (k:N, keys; s:N, sessions) of the pieces isoscope publish or run --collector-shards publish on --nats, from the first message, and publish the findings on PREFIX.findings for isoscope findings")
	cmd.Flags().IntVar(&c.Shards, "shards", 0, "with --shard, the number of shards (to refuse a shard beyond them, and pieces cut for another number; without it, the first message's number)")
	cmd.Flags().StringVar(&c.Prefix, "prefix", natsshard.DefaultPrefix, "with --shard, the subjects' prefix")
	cmd.Flags().IntVar(&c.Replicas, "replicas", 1, "with --shard, replicas of the streams and the bucket when this creates them")
	cmd.Flags().StringVar(&c.Checker, "checker", "aion", "aion (by the database's start_ts/commit_ts) or blackbox (no timestamps: list-append and registers with unique values at ser, si or rc, memory bounded by fences and the lists' orders)")
	cmd.Flags().StringVar(&c.FenceKey, "fence-key", "", "--checker blackbox: every keyspace's fence key (default: the fence_key of a keyspace's first batch's header)")
	return cmd
}

// Run serves until ctx is done.
func (c *serveCommand) Run(ctx context.Context) error {
	cfg, l, err := c.config(ctx)
	if err != nil {
		return err
	}
	log := cfg.Log
	if c.MemoryMB > 0 && cfg.BlackBox == nil {
		dir := c.SpillDir
		if dir == "" {
			if dir, err = os.MkdirTemp("", "isoscope-spill-"); err != nil {
				return err
			}
			defer os.RemoveAll(dir)
		}
		if cfg.Checker.Store, err = spillfile.New(dir); err != nil {
			return err
		}
	}
	// A long-running service: collect at Go's default pace, not the batch
	// commands' (cmd/isoscope raises GOGC), so the heap stays near the
	// checker's state.
	defer ownGC(100)()
	switch {
	case cfg.BlackBox != nil:
		// The black-box checker holds the process's resident memory
		// under the bound (memoryHold, as run --online does).
		hold, err := memoryHoldFor("--memory-mb", c.MemoryMB)
		if err != nil {
			return badInput(err)
		}
		defer hold.stop()
		if hold != nil {
			cfg.BlackBox.MemoryBytes = hold.checkerBound()
			cfg.BlackBox.HeapTarget = hold.heapTarget
		}
	case c.MemoryMB > 0 && os.Getenv("GOMEMLIMIT") == "":
		// The rest of the bound is room for garbage between collections:
		// the collector's soft limit keeps the heap under the whole.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(c.MemoryMB << 20))
	}
	var worker *natsshard.Worker
	switch {
	case c.Shard != "":
		id, err := shard.ParseID(c.Shard, c.Shards)
		if err != nil {
			return badInput(err)
		}
		if c.NATS == "" {
			return badInput(errors.New("--shard reads its pieces from NATS: give --nats"))
		}
		if worker, err = natsshard.NewWorker(ctx, natsshard.WorkerConfig{Config: natsshard.Config{URL: c.NATS, Prefix: c.Prefix, Replicas: c.Replicas, Log: log},
			Shard: id, Shards: c.Shards, Timeout: c.Timeout}); err != nil {
			return badInput(err)
		}
		defer worker.Close()
		worker.Configure(&cfg)
	case c.NATS != "":
		// The service logs each refusal.
		cfg.Sources = append(cfg.Sources, natsin.Source(natsin.Config{URL: c.NATS, Stream: c.NATSStream, Subject: c.NATSSubject, Durable: c.NATSDurable, Log: log}))
	}
	s, err := serve.New(cfg)
	if err != nil {
		return badInput(err)
	}
	if worker != nil {
		worker.Attach(s)
		var stop func()
		ctx, stop = watchWorker(ctx, worker)
		defer stop()
	}
	ln, err := listen("tcp", c.Listen)
	if err != nil {
		return badInput(err)
	}
	if err := serve.CheckBind(ln.Addr(), c.Token); err != nil {
		ln.Close()
		return badInput(err)
	}
	if cfg.BlackBox != nil {
		log.Info(fmt.Sprintf("checking %s online, black-box, on http://%s", l.Name, ln.Addr()),
			"checks", l.Name, "addr", ln.Addr().String(), "checker", "blackbox", "fence_key", c.FenceKey)
	} else {
		log.Info(fmt.Sprintf("checking %s online on http://%s (Ext timeout %s)", l.Name, ln.Addr(), c.Timeout),
			"checks", l.Name, "addr", ln.Addr().String(), "timeout", c.Timeout.String())
	}
	switch {
	case worker != nil:
		log.Info("checking shard "+c.Shard, "url", c.NATS, "prefix", c.Prefix, "checkpoint", worker.Checkpoint())
	case c.NATS != "":
		log.Info("consuming NATS JetStream", "url", c.NATS, "subject", c.NATSSubject, "stream", c.NATSStream, "durable", c.NATSDurable)
	}
	sum, err := s.Serve(ctx, ln)
	logStopped(log, sum)
	if err != nil {
		log.Error("serving stopped", "error", err.Error())
	}
	if worker != nil && worker.Err() != nil {
		return worker.Err()
	}
	return err
}

// config checks the flags and turns them into the service's
// configuration (its log on standard error, in --log-format) and the
// level it checks.
func (c *serveCommand) config(ctx context.Context) (serve.Config, level.Level, error) {
	l, err := level.Lookup(c.Level)
	if err != nil {
		return serve.Config{}, l, blameFlag("--level", err)
	}
	blackBox := false
	switch c.Checker {
	case "aion":
		if c.FenceKey != "" {
			return serve.Config{}, l, badInput(errors.New("--fence-key is the black-box checker's: give --checker blackbox"))
		}
	case "blackbox", "black-box":
		blackBox = true
		if c.Shard != "" {
			return serve.Config{}, l, badInput(errors.New("--shard checks by timestamps (Aion): not with --checker blackbox"))
		}
	default:
		return serve.Config{}, l, unknownChoice("--checker", "online checker", c.Checker, []string{"aion", "blackbox"})
	}
	switch {
	case blackBox && l.ID != level.SnapshotIsolation && l.ID != level.Serializable && l.ID != level.ReadCommitted:
		return serve.Config{}, l, badInput(fmt.Errorf("serve --checker blackbox checks serializable, snapshot-isolation and read-committed, not %s", l.Name))
	case !blackBox && l.ID != level.SnapshotIsolation && l.ID != level.Serializable:
		return serve.Config{}, l, badInput(fmt.Errorf("serve checks snapshot-isolation and serializable, not %s", l.Name))
	}
	if c.MemoryMB < 0 || c.Queue < 1 || c.Timeout <= 0 {
		return serve.Config{}, l, badInput(fmt.Errorf("--memory-mb must be at least 0, --queue at least 1 and --ext-timeout positive"))
	}
	if c.MaxBodyMB < 1 || c.ReadTimeout <= 0 || c.BodyTimeout <= 0 || c.MaxConns < 1 {
		return serve.Config{}, l, badInput(fmt.Errorf("--max-body-mb and --max-conns must be at least 1, --read-timeout and --body-timeout positive"))
	}
	// Refuse an address beyond loopback without a token before binding
	// it, so that it is never open for a moment.
	if err := serve.CheckListen(ctx, c.Listen, c.Token); err != nil {
		return serve.Config{}, l, badInput(err)
	}
	var log *slog.Logger
	switch c.LogFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(c.io.Stderr, nil))
	case "json":
		log = slog.New(slog.NewJSONHandler(c.io.Stderr, nil))
	default:
		return serve.Config{}, l, badInput(fmt.Errorf("--log-format %q: want text or json", c.LogFormat))
	}
	maxBody := c.MaxBodyMB << 20
	if fit := BatchMemory(c.MemoryMB<<20) / serve.ParseExpansion; !c.maxBodySet && c.MemoryMB > 0 && maxBody > fit {
		maxBody = fit // a small --memory-mb: the largest batch is what it has room to parse
	}
	cfg := serve.Config{Token: c.Token, Queue: c.Queue, Out: c.io.Stdout, Explain: report.Explain, Picture: violationPicture, Log: log,
		MaxBatch: maxBody, ParseMemory: BatchMemory(c.MemoryMB << 20), ReadTimeout: c.ReadTimeout, BodyTimeout: c.BodyTimeout, MaxConns: c.MaxConns,
		Checker: serve.CheckerConfig{Serializable: l.ID == level.Serializable, Timeout: c.Timeout, MemoryBound: CheckerBound(c.MemoryMB << 20)}}
	if blackBox {
		cfg.BlackBox = &serve.BlackBoxConfig{Level: l, MemoryBytes: CheckerBound(c.MemoryMB << 20), FenceKey: c.FenceKey}
	}
	return cfg, l, nil
}

// watchWorker returns a context under ctx that ends when the shard's
// worker fails: a finding or a checkpoint that cannot be stored stops
// it, and it exits, to start over from its checkpoint. stop ends the
// watch.
func watchWorker(ctx context.Context, worker *natsshard.Worker) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if worker.Err() != nil {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// logStopped logs what the service did once it stopped: a warning when
// it refused batches or suppressed findings.
func logStopped(log *slog.Logger, sum serve.Summary) {
	var refused uint64
	attrs := []any{"checked", sum.Checked, "set_aside", sum.Skipped, "violations", sum.Violations, "pending", sum.Pending,
		"flip_flops", sum.FlipFlops, "suppressed", sum.Suppressed}
	for _, reason := range slices.Sorted(maps.Keys(sum.Rejected)) {
		refused += sum.Rejected[reason]
		attrs = append(attrs, "refused_"+reason, sum.Rejected[reason])
	}
	attrs = append(attrs, "refused_batches", refused, "refused_transactions", sum.RejectedTxns, "duplicates", sum.Duplicates)
	msg := fmt.Sprintf("stopped: %d transactions checked, %d set aside, %d violations, %d verdicts still pending, %d flip-flops; %d batches refused (%d transactions), %d findings suppressed; %d transactions received again as they were (retries, taken once)",
		sum.Checked, sum.Skipped, sum.Violations, sum.Pending, sum.FlipFlops, refused, sum.RejectedTxns, sum.Suppressed, sum.Duplicates)
	warning := serve.SuppressionWarning(sum.Suppressed, sum.Tainted)
	if sum.Faults > 0 {
		msg += fmt.Sprintf("; %s received (kept, not checked)", textfmt.Count(int(sum.Faults), "fault record"))
		attrs = append(attrs, "faults", sum.Faults)
	}
	if bb := sum.BlackBox; bb != nil {
		msg += fmt.Sprintf("; black-box: %d keyspaces (%d fenced), %d transactions held at the end, %d forgotten, %d garbage-collection rounds",
			bb.Keyspaces, bb.Fenced, bb.Held, bb.Forgotten, bb.Rounds)
		attrs = append(attrs, "keyspaces", bb.Keyspaces, "held", bb.Held, "forgotten", bb.Forgotten, "rounds", bb.Rounds)
		for _, w := range bb.Warnings {
			log.Warn("WARNING: " + w)
		}
		for _, u := range bb.Unjudged {
			// The drained checkers' verdict is not a clean "holds":
			// what could not be judged may hide violations.
			log.Warn("WARNING: not every transaction could be judged, so violations may be missing: " + u)
		}
	}
	if refused > 0 || warning != "" {
		log.Warn(msg, attrs...)
	} else {
		log.Info(msg, attrs...)
	}
	if warning != "" {
		// Beside the verdict, on a line of its own: what it may miss.
		log.Warn("WARNING: "+warning, "suppressed", sum.Suppressed) // it names the keyspaces
	}
}

// violationPicture draws a violation for serve's live page as the report
// draws an anomaly's picture; the page gives its kind and explanation
// above it.
func violationPicture(h *history.History, a *anomaly.Anomaly) []byte {
	return htmlreport.AnomalySVG(h, a, "", "", nil)
}

// listen binds the service's address (a test watches it).
var listen = net.Listen

// BatchMemory is the part of the memory a service may use (bytes) that
// the batches being read, parsed or waiting for the checker may take: a
// quarter (0, no bound: the service's default, room for 4 of the largest
// batches).
func BatchMemory(limit int64) int64 { return limit / 4 }

// CheckerBound is the part of the memory a service may use (bytes) that
// its checker's state may take before it spills: 5/8, the rest being room
// for the garbage Go's heap holds between collections.
func CheckerBound(limit int64) int64 { return limit / 8 * 5 }
