// Package pipeline is what `isoscope run` does once its flags are read: it
// stands up a cluster when asked, opens and locks the database, runs the
// workload's sessions (with the nemesis breaking the cluster), records the
// history to a file and publishes it to a collector, then checks the
// history and reports the verdict (text or JSON, and an HTML report). The
// command line turns flags into a Config and the Result into an exit
// status; tests drive Run without it.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/cluster"
	"github.com/isoscope/isoscope/internal/collect"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/nemesis"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/runner"
	"github.com/isoscope/isoscope/internal/workload"
)

// Config is one run: what to run, on what database, how to check the
// history and where to report. The command line fills it from its flags,
// which the error messages name.
type Config struct {
	// Plan is the workload's plan; Endless, when the run is bounded by
	// Duration alone, the endless plan Plan belongs to (nil otherwise).
	// Seed is the seed both were drawn from, which the history's source
	// records.
	Plan    *workload.Plan
	Endless *workload.Endless
	Seed    uint64
	// Duration bounds the run in time (0: none).
	Duration time.Duration
	// Isolation is the level the sessions run at.
	Isolation db.Isolation
	// Retries is how often an aborted transaction is retried (0: never).
	Retries int
	// NoTrace records nothing and checks nothing: the run only runs.
	NoTrace bool

	// DBs are the addresses of the database (none: the default, an
	// in-memory SQLite database), or of the nodes of one cluster; ReadDBs, nodes that only take reads. Table is the table
	// (Badger: the key prefix) the run creates, resets and locks.
	DBs, ReadDBs []string
	Table        string
	// Hop moves each session to the next node every Hop transactions.
	Hop int
	// StmtTimeout bounds each statement; ReconnectFor, how long a session
	// seeks the database it lost (0: no limit, and no wait).
	StmtTimeout, ReconnectFor time.Duration
	// Cluster, when set, is stood up for the run (its nodes are then the
	// DBs and ReadDBs) in ClusterDir (default: a fresh temporary
	// directory), with its nodes' clocks under libfaketime when
	// ClusterClocks is set, and torn down after.
	Cluster       *cluster.Spec
	ClusterDir    string
	ClusterClocks bool
	// Faults are the nemesis's faults on the Cluster, one every
	// FaultInterval; FaultsNamed is how they were asked for, as the
	// history's source names them.
	Faults        []nemesis.Kind
	FaultsNamed   string
	FaultInterval time.Duration

	// Out is the history file (default: isoscope-run-DATE-TIME.jsonl).
	Out string
	// Collector, when its URL is set, also publishes each transaction.
	Collector Collector
	// Online, when set, checks the history online as the run goes
	// (online.go) instead of offline at its end: no Collector, no
	// Report.
	Online *Online

	// Level is the level the history is checked at; LevelChosen says it
	// was asked for, so that a level no checker decides is an error
	// rather than a note.
	Level       level.Level
	LevelChosen bool
	// Check are the checker's options (algorithm, weaker levels, model).
	Check check.Options
	// Timeout bounds the check (0: none).
	Timeout time.Duration
	// JSON prints the verdict as JSON; Shown is what of the anomalies
	// the text shows (how many of each kind, or the counts only).
	JSON  bool
	Shown report.TextOptions
	// Report is the directory of the HTML report ("": none).
	Report string

	// Progress draws a progress bar of the transactions on IO.Stderr
	// while the workload runs (progress.go); without it, a loss of the
	// database and its end are said in lines instead.
	Progress bool
	// StatusLines, when set, shows the run's progress instead: it is
	// given what to say and writes it as plain lines until stopped
	// (--progress always).
	StatusLines func(line func() string) (stop func())
	// CheckMeter, when set, shows the check's progress: it wraps the
	// check's context and returns the function that stops it.
	CheckMeter func(ctx context.Context) (context.Context, func())

	// Hooks are where tests plant faults.
	Hooks Hooks
}

// Collector is where a run publishes each transaction as it finishes, for
// online checking: isoscope serve (an http:// or https:// URL) or a NATS
// JetStream subject (a nats:// URL).
type Collector struct {
	URL     string
	Subject string
	Token   string
	// Stream is the run's stream at the service (default: a fresh run
	// id); Wait bounds the wait for the verdicts of the batches published
	// to NATS.
	Stream string
	Wait   time.Duration
	// Shards, with a nats:// URL, publishes each transaction as
	// per-shard pieces under Prefix for checkers of shards instead of
	// whole to Subject.
	Shards int
	Prefix string
}

// Hooks are the places where a test plants faults in a run. Each is
// optional.
type Hooks struct {
	// Recorded is the runner's Hook: called by a session with the number
	// of transactions recorded so far.
	Recorded func(recorded int)
	// History rewrites each line of the history, written to the file and
	// published alike (not the run's own record, which its check judges).
	History func(line []byte) []byte
	// Published rewrites each line the collector publishes.
	Published func(line []byte) []byte
}

// IO is where a run writes: the verdict to Stdout, what the run does to
// Stderr.
type IO struct {
	Stdout, Stderr io.Writer
}

// Status is what a run found.
type Status uint8

// The statuses of a run.
const (
	// Holds: the level holds (or no checker decides it and it was not
	// asked for), and the run went to its end.
	Holds Status = iota
	// Violated: the history violates the level.
	Violated
	// Undecided: the check did not decide, the run was cut short without
	// a violation in what was recorded, or the collector's online check
	// is incomplete.
	Undecided
)

// Result is how a run ended.
type Result struct {
	Status Status
}

// InterruptedError is a run interrupted while its cluster was starting:
// nothing ran, and nothing was decided.
type InterruptedError struct{ Err error }

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted while the cluster was starting: %v", e.Err)
}

// Unwrap returns the error the cluster's start ended with.
func (e *InterruptedError) Unwrap() error { return e.Err }

// run is one Run under way.
type run struct {
	Config
	io IO
	// described says what ran (for the report); label is the plots'
	// second title line.
	described, label string
	// kind and version are the database's kind and the server's product
	// and version.
	kind    db.Kind
	version string
	// cluster is the cluster stood up for the run.
	cluster *cluster.Cluster
	// online is the service checking the run online (Config.Online).
	online *onlineChecker
	// lost counts the transactions the collector published that its
	// service refused or never confirmed (collected).
	lost int
}

// Run runs cfg's workload, records and publishes the history, checks it
// and reports on std. An error is bad input (a database that cannot be
// reached or locked at the start, a history or report that cannot be
// written, a history the checker refuses): no verdict; an
// *InterruptedError is a run interrupted before anything ran, with the
// Result's status Undecided.
func Run(ctx context.Context, cfg Config, std IO) (Result, error) {
	r := &run{Config: cfg, io: std}
	r.DBs, r.ReadDBs = append([]string(nil), cfg.DBs...), append([]string(nil), cfg.ReadDBs...)
	return r.run(ctx)
}

// run is Run on r's copy of the configuration, which it completes (the
// cluster's nodes, the history file's default name).
func (r *run) run(ctx context.Context) (Result, error) {
	if r.Cluster != nil {
		cl, err := r.standUp(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return Result{Status: Undecided}, &InterruptedError{Err: err}
			}
			return Result{}, err
		}
		defer r.tearDown(cl)
	}
	if len(r.DBs) == 0 {
		r.DBs = []string{""} // the default database
	}
	target, d, version, release, err := r.prepare(ctx)
	if err != nil {
		return Result{}, err
	}
	defer release()
	cfg := r.runnerConfig(d, target, version)
	var file *os.File
	if !r.NoTrace {
		if r.Out == "" {
			r.Out = "isoscope-run-" + time.Now().Format("20060102-150405") + ".jsonl"
		}
		if file, err = os.Create(r.Out); err != nil {
			return Result{}, err
		}
		cfg.Out = file
	}
	if r.Online != nil {
		switch {
		case r.NoTrace:
			return Result{}, errors.New("--online checks the history --no-trace does not record")
		case r.Collector.URL != "":
			return Result{}, errors.New("--online is the run's own collector: not with --collector (run isoscope serve --checker blackbox for that)")
		case r.Report != "":
			return Result{}, errors.New("--online keeps no history in memory to report on: not with --report")
		}
		oc, err := r.startOnline()
		if err != nil {
			return Result{}, err
		}
		r.online = oc
		defer func() {
			if r.online != nil { // not stopped yet: an error ended the run
				_, _ = oc.stop()
			}
		}()
		r.Collector = Collector{URL: oc.url, Stream: "run", Wait: r.Collector.Wait}
		cfg.Forget = true
		fmt.Fprintf(r.io.Stderr, "online: checking %s as the run goes (black-box, memory bound %s)\n", r.Online.Level.Name, memoryBound(r.Online.MemoryBytes))
	}
	var cw *collect.Writer
	if r.Collector.URL != "" {
		if r.NoTrace {
			return Result{}, errors.New("--collector publishes the history --no-trace does not record")
		}
		id := r.identity(target)
		pub, err := r.publisher(id)
		if err != nil {
			return Result{}, err
		}
		defer pub.Close()
		wctx := ctx
		if r.online != nil {
			// The checker is in this process: an interrupted run still
			// gives it every transaction it recorded, so that its
			// verdict is on what ran.
			wctx = context.WithoutCancel(ctx)
		}
		cw = collect.NewWriter(wctx, pub)
		cw.Mutate = r.Hooks.Published
		cfg.Out = io.MultiWriter(file, cw)
		if r.online == nil {
			fmt.Fprintf(r.io.Stderr, "collector: publishing to %s as %s\n", r.Collector.URL, id)
		}
	}
	if r.Hooks.History != nil {
		cfg.Out = &lineRewriter{w: cfg.Out, rewrite: r.Hooks.History}
	}
	cfg.Progress = &runner.Progress{}
	stopProgress := r.showProgress(cfg.Progress)
	res, err := runner.Run(ctx, cfg)
	stopProgress()
	if file != nil {
		if cerr := file.Close(); err == nil && res != nil && cerr != nil {
			res.Summary.Errors = append(res.Summary.Errors, fmt.Errorf("writing the history: %v", cerr))
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %v", target.Display, err)
	}
	cut := r.summarize(res, version)
	if r.NoTrace {
		if err := r.writeReport(res, nil); err != nil {
			return Result{}, err
		}
		return cutShort(cut), nil
	}
	if r.online != nil {
		// The collector's batches first, then the checker's final verdict.
		result := r.collected(ctx, cw, Result{Status: Holds}, nil)
		sum, serr := r.online.stop()
		out, err := r.onlineVerdict(sum, serr, cut, result.Status == Undecided)
		r.online = nil
		return out, err
	}
	result, err := r.check(ctx, res, cut)
	if cw != nil {
		result = r.collected(ctx, cw, result, err)
	}
	return result, err
}

// prepare opens the database, asks for the server's version, takes the
// table's lock (before the reset, so that a run never resets a table in
// another run's use) and resets the table. release gives up the lock and
// closes the database.
func (r *run) prepare(ctx context.Context) (target db.Target, d db.Database, version string, release func(), err error) {
	target, d, err = r.openDatabase(ctx)
	if err != nil {
		return target, nil, "", nil, err
	}
	openCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	closeAll := func() { cancel(); d.Close() }
	if err := d.Supports(r.Isolation); err != nil {
		closeAll()
		return target, nil, "", nil, err
	}
	if target.Kind == db.NatsKV {
		pc := r.Plan.Config
		if r.Endless != nil {
			pc = r.Endless.Plan.Config
		}
		if pc.Workload != workload.LWT && (pc.Workload != workload.ListAppend || pc.Ops != 1) {
			closeAll()
			return target, nil, "", nil, fmt.Errorf("nats-kv: a transaction reads and writes one key (JetStream KV has no transactions over several keys), and %s's can touch several: use --workload lwt, or list-append with --ops 1", pc.Workload)
		}
	}
	if target.Kind == db.Redis {
		pc := r.Plan.Config
		if r.Endless != nil {
			pc = r.Endless.Plan.Config
		}
		switch pc.Workload {
		case workload.MiniTxn, workload.General, workload.ListAppend, workload.LWT, workload.BlindW:
		default:
			closeAll()
			return target, nil, "", nil, fmt.Errorf("redis: %s scans ranges of keys, and a Redis table is separate keys with no order to scan: use mt, general, lwt, list-append or blindw", pc.Workload)
		}
	}
	if version, err = d.Version(openCtx); err != nil {
		closeAll()
		return target, nil, "", nil, fmt.Errorf("%s: %v", target.Display, err)
	}
	r.kind, r.version = d.Kind(), version
	lock, err := d.Lock(openCtx)
	if err != nil {
		closeAll()
		return target, nil, "", nil, err
	}
	if err := d.Reset(openCtx); err != nil {
		lock.Release()
		closeAll()
		return target, nil, "", nil, err
	}
	return target, d, version, func() { lock.Release(); closeAll() }, nil
}

// runnerConfig is the runner's configuration of the run on d, with the
// history's source saying what ran, on what and how.
func (r *run) runnerConfig(d db.Database, target db.Target, version string) runner.Config {
	cfg := runner.Config{
		DB: d, Isolation: r.Isolation, Plan: r.Plan, Endless: r.Endless, NoTrace: r.NoTrace, MaxRetries: r.Retries, Duration: r.Duration,
		Source: fmt.Sprintf("isoscope run: %s (%s) at %s; %s seed=%d", version, target.Display, r.Isolation, r.Plan.Config, r.Seed),
	}
	if r.Endless != nil {
		cfg.Source = fmt.Sprintf("isoscope run: %s (%s) at %s; %s seed=%d", version, target.Display, r.Isolation, r.Endless, r.Seed)
	}
	if r.Duration > 0 {
		cfg.Source += fmt.Sprintf(" duration=%s", r.Duration)
	}
	if r.Retries == 0 {
		cfg.MaxRetries = -1
	}
	cfg.StmtTimeout, cfg.ReconnectFor, cfg.Hook = r.StmtTimeout, r.ReconnectFor, r.Hooks.Recorded
	cfg.Nemesis = r.nemesis()
	if r.cluster != nil {
		cfg.Source += "; cluster " + r.cluster.Spec.String()
		if r.FaultsNamed != "" {
			cfg.Source += fmt.Sprintf(" faults=%s every %s", r.FaultsNamed, r.FaultInterval)
		}
	}
	if r.StmtTimeout == 0 {
		cfg.StmtTimeout = -1
	}
	if r.ReconnectFor == 0 {
		cfg.ReconnectFor = -1
	}
	return cfg
}

// nemesis is the runner's nemesis: the Faults on the run's cluster, on a
// schedule drawn from the seed, each said on standard error (nil: none).
func (r *run) nemesis() func(context.Context, func() int64, func(history.Fault)) {
	if r.cluster == nil || len(r.Faults) == 0 {
		return nil
	}
	cl := r.cluster
	cfg := nemesis.Config{Faults: r.Faults, Interval: r.FaultInterval, Seed: r.Seed, Log: func(s string) {
		fmt.Fprintf(r.io.Stderr, "%s %s\n", time.Now().Format("15:04:05.0"), s)
	}}
	return func(ctx context.Context, now func() int64, record func(history.Fault)) {
		nemesis.Run(ctx, cl, cfg, now, record)
	}
}

// cutShort is the status of a run that ended, early when cut is set,
// without a violation.
func cutShort(cut bool) Result {
	if cut {
		return Result{Status: Undecided}
	}
	return Result{Status: Holds}
}
