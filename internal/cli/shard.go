package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/natsshard"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/wire"
)

// publishCommand is `isoscope publish FILE --nats URL --shards N`.
type publishCommand struct {
	io       IO
	NATS     string
	Prefix   string
	Shards   int
	Replicas int
	Stream   string
	Keyspace string
	Pieces   string
}

func newPublishCommand(std IO) *cobra.Command {
	c := &publishCommand{io: std}
	cmd := &cobra.Command{
		Use: "publish FILE --nats URL [--shards N]",
		Example: `  # a recorded history with its database's timestamps into 4 key shards and 4 session shards
  isoscope publish ts.jsonl --nats nats://127.0.0.1:4222 --shards 4

  # then one checker per shard (on any machine), and the merged verdict:
  #   isoscope serve --nats nats://127.0.0.1:4222 --shard k:0 --shards 4   (k:0 … k:3, s:0 … s:3)
  #   isoscope findings --nats nats://127.0.0.1:4222 --drain`,
		Short: "publish a recorded history to NATS JetStream as per-shard pieces, for sharded online checking",
		Long: `publish replays a recorded history (the isoscope format, plain or gzip, read as a
stream) into NATS JetStream for checkers of shards (isoscope serve --shard): each
transaction is cut into one piece per key shard it touches (its operations on
that shard's keys), published on PREFIX.k.N where N is a hash of the key modulo
--shards, and one piece on PREFIX.s.N, N a hash of its session, for the session
axiom. Every piece carries its transaction's id, session and timestamps, and its
message says how many pieces the transaction has. A subject's pieces are stored
in the history's order; a message JetStream did not acknowledge is published
again under the same message id, so that it is stored once. At the end the
counts go to the bucket (for isoscope findings --drain), a summary to standard
error, and the counts as a JSON object to standard output.`,
		Args: wantArgs(1, 1, "one history file", ""),
		RunE: func(cmd *cobra.Command, args []string) error { return c.Run(cmd.Context(), args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&c.NATS, "nats", "nats://127.0.0.1:4222", "the NATS server (or several, comma-separated)")
	f.StringVar(&c.Prefix, "prefix", natsshard.DefaultPrefix, "the subjects' prefix: pieces on PREFIX.k.N and PREFIX.s.N")
	f.IntVar(&c.Shards, "shards", 1, "the number of key shards (and of session shards)")
	f.IntVar(&c.Replicas, "replicas", 1, "replicas of the streams and the bucket when this creates them (3 on a three-server cluster)")
	f.StringVar(&c.Stream, "stream", "", "the history's stream, its own id space for transaction ids and sessions (default: the file's name)")
	f.StringVar(&c.Keyspace, "keyspace", "", "the keyspace (database) the history's keys belong to")
	f.StringVar(&c.Pieces, "pieces", "binary", "the pieces' form: binary (compact, what workers read fastest) or json (lines of the history format, readable; workers read both)")
	return cmd
}

// Run publishes file.
func (c *publishCommand) Run(ctx context.Context, file string) error {
	if c.Pieces != "binary" && c.Pieces != "json" {
		return badInput(fmt.Errorf("--pieces %q: want binary or json", c.Pieces))
	}
	in, closeInput, err := openFile(ctx, file)
	if err != nil {
		return readError(ctx, file, err)
	}
	defer closeInput()
	rd, err := native.NewReader(in, file)
	if err != nil {
		return readError(ctx, file, err)
	}
	stream := c.Stream
	if stream == "" {
		stream = filepath.Base(file)
	}
	log := slog.New(slog.NewTextHandler(c.io.Stderr, nil))
	pub, err := natsshard.NewPublisher(ctx, natsshard.PublisherConfig{Config: natsshard.Config{URL: c.NATS, Prefix: c.Prefix, Replicas: c.Replicas, Log: log},
		Shards: c.Shards, Identity: wire.Identity{Stream: stream, Keyspace: c.Keyspace}, JSON: c.Pieces == "json"})
	if err != nil {
		return badInput(err)
	}
	start := time.Now()
	var batch []history.Txn
	for {
		t, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			pub.Close()
			return readError(ctx, file, err)
		}
		batch = append(batch, *t)
		if len(batch) == 1024 {
			if err := c.add(ctx, pub, rd.History(), batch); err != nil {
				pub.Close()
				return err
			}
			batch = batch[:0]
		}
	}
	if err := c.add(ctx, pub, rd.History(), batch); err != nil {
		pub.Close()
		return err
	}
	if err := pub.Close(); err != nil {
		return err
	}
	st := pub.Stats()
	d := time.Since(start)
	perTxn := 0.0
	if st.Txns > 0 {
		perTxn = float64(st.Bytes) / float64(st.Txns)
	}
	fmt.Fprintf(c.io.Stderr, "published %d transactions of stream %q as %d pieces in %d messages over %d subjects: %d bytes (%.0f a transaction) in %s, %.0f transactions a second\n",
		st.Txns, stream, st.Pieces, st.Messages, len(st.Subjects), st.Bytes, perTxn, d.Round(time.Millisecond), float64(st.Txns)/max(d.Seconds(), 1e-9))
	return json.NewEncoder(c.io.Stdout).Encode(st)
}

// add publishes a batch read from the file: a transaction unfit for
// online checking is bad input.
func (c *publishCommand) add(ctx context.Context, pub *natsshard.Publisher, h *history.History, batch []history.Txn) error {
	err := pub.Add(ctx, h, batch)
	var bad *natsshard.InputError
	if errors.As(err, &bad) {
		return badInput(err)
	}
	return err
}

// findingsCommand is `isoscope findings --nats URL`.
type findingsCommand struct {
	io           IO
	NATS         string
	Prefix       string
	Replicas     int
	Listen       string
	Token        string
	Drain        bool
	DrainTimeout time.Duration
}

func newFindingsCommand(std IO) *cobra.Command {
	c := &findingsCommand{io: std}
	cmd := &cobra.Command{
		Use: "findings --nats URL",
		Example: `  # the shards' findings merged as they come, served on 127.0.0.1:7879
  isoscope findings --nats nats://127.0.0.1:4222 --listen 127.0.0.1:7879

  # wait until everything published is checked, print the verdict, exit
  isoscope findings --nats nats://127.0.0.1:4222 --drain --drain-timeout 30s`,
		Short: "merge the findings of the shards' checkers into one verdict",
		Long: `findings reads the findings the checkers of shards (isoscope serve --shard)
publish on PREFIX.findings, from the first, and writes each once — by its
identity: level, kind, transactions with their streams, key and value — to
standard output as the JSON line a single isoscope serve writes, numbered in the
order read. It serves the last 10,000 at /v1/violations (?after=SEQ), the
workers' checkpoints and the publishers' counts at /v1/state, and Prometheus
metrics at /metrics (isoscope_violations_total{kind} as serve has it,
isoscope_findings_duplicates_total, isoscope_pieces_checked_total,
isoscope_pieces_published_total, isoscope_pieces_duplicate_total,
isoscope_findings_suppressed_total, isoscope_pending_verdicts,
isoscope_shards_behind). A piece a shard received again as it was (published
twice) is taken once and counted as a duplicate; when a shard suppressed
findings (its keyspace lost a refused piece), /v1/state says so in "warnings" and
a WARNING line follows the summary. With --drain it exits once every shard's worker has
checked its subject's last message with no verdict pending, the pieces checked
add up to those published, and every finding is read; the exit status is 3 when
--drain-timeout passes first.`,
		Args: wantArgs(0, 0, "", ""),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.Run(cmd.Context()) },
	}
	f := cmd.Flags()
	f.StringVar(&c.NATS, "nats", "nats://127.0.0.1:4222", "the NATS server (or several, comma-separated)")
	f.StringVar(&c.Prefix, "prefix", natsshard.DefaultPrefix, "the subjects' prefix")
	f.IntVar(&c.Replicas, "replicas", 1, "replicas of the streams and the bucket when this creates them")
	f.StringVar(&c.Listen, "listen", "127.0.0.1:7879", "address to serve /v1/violations, /v1/state and /metrics on (empty: none)")
	f.StringVar(&c.Token, "token", os.Getenv("ISOSCOPE_TOKEN"), "bearer token clients must send (default $ISOSCOPE_TOKEN); required beyond loopback")
	f.BoolVar(&c.Drain, "drain", false, "exit once everything published is checked and every finding read")
	f.DurationVar(&c.DrainTimeout, "drain-timeout", 10*time.Minute, "with --drain, how long to wait at most")
	return cmd
}

// Run merges until ctx is done (or, with --drain, everything is in).
func (c *findingsCommand) Run(ctx context.Context) error {
	if c.Listen != "" {
		if err := serve.CheckListen(ctx, c.Listen, c.Token); err != nil {
			return badInput(err)
		}
	}
	log := slog.New(slog.NewTextHandler(c.io.Stderr, nil))
	agg, err := natsshard.NewAggregator(ctx, natsshard.AggregatorConfig{Config: natsshard.Config{URL: c.NATS, Prefix: c.Prefix, Replicas: c.Replicas, Log: log},
		Out: c.io.Stdout, Token: c.Token})
	if err != nil {
		return badInput(err)
	}
	defer agg.Close()
	if c.Listen != "" {
		ln, err := listen("tcp", c.Listen)
		if err != nil {
			return badInput(err)
		}
		srv := &http.Server{Handler: agg.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		log.Info("serving the merged findings", "addr", ln.Addr().String())
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- agg.Run(runCtx) }()
	if !c.Drain {
		poll := time.NewTicker(time.Second)
		defer poll.Stop()
		var suppressed uint64
		for {
			select {
			case err := <-done:
				return err
			case <-poll.C:
				st, err := agg.Poll(ctx)
				if err != nil && ctx.Err() == nil {
					log.Warn("reading the shards' progress", "error", err.Error())
				}
				if err == nil && st.Suppressed > suppressed {
					suppressed = st.Suppressed
					for _, w := range st.Warnings {
						log.Warn("WARNING: "+w, "suppressed", st.Suppressed)
					}
				}
			}
		}
	}
	dctx, cancel := context.WithTimeout(ctx, c.DrainTimeout)
	defer cancel()
	st, err := agg.Drain(dctx)
	stop()
	if rerr := <-done; rerr != nil && err == nil {
		err = rerr
	}
	fmt.Fprintf(c.io.Stderr, "%d findings of the %d the shards found (%d merged: a pair of writers named by several shards; %d read again and dropped); %d transactions checked, %d of %d pieces published checked (%d refused) by %d shards; %d pieces received again as they were (taken once), %d findings suppressed\n",
		st.Violations, st.Found, st.Merged, st.Duplicates, st.Checked, st.Pieces, st.Published.Pieces, st.RefusedPieces, len(st.Shards), st.DuplicatePieces, st.Suppressed)
	for _, w := range st.Warnings { // beside the verdict: what it may miss
		fmt.Fprintf(c.io.Stderr, "WARNING: %s\n", w)
	}
	if err != nil {
		return &exitError{code: ExitUnknown, err: fmt.Errorf("not drained: %w (behind: %v)", err, st.Behind)}
	}
	return nil
}
