package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/natsshard"
)

// exampleLines returns the command lines of a help's Examples section:
// every line that starts with "isoscope " once indented and not a comment.
func exampleLines(example string) [][]string {
	var out [][]string
	for _, line := range strings.Split(example, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "isoscope" {
			out = append(out, f[1:])
		}
	}
	return out
}

// TestEveryHelpExampleRuns: every command's help has examples, and every
// example runs as written (in a fresh directory, against this machine's
// PostgreSQL and MariaDB) without a usage error: gen, convert, report and
// version succeed, check and run end with a verdict (a planted violation
// exits 1), and serve starts and stops when interrupted (listening on a
// free port instead of the example's). The commands run in an order in
// which each finds the files an earlier one wrote (gen's history.jsonl,
// convert's history.edn); report's result.json comes from check --json.
func TestEveryHelpExampleRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads against the databases")
	}
	dir := t.TempDir()
	// The cluster's servers run as their own users (postgres, mysql) and
	// must reach the cluster's directory under this one.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	root := &cobra.Command{}
	// The commands as Main builds them, in the order their files flow.
	var discard IO
	cmds := []*cobra.Command{newGenCommand(discard), newConvertCommand(discard), newCheckCommand(discard),
		newReportCommand(discard), newRunCommand(discard), newClusterCommand(discard), newServeCommand(discard),
		newPublishCommand(discard), newFindingsCommand(discard), newVersionCommand(discard)}
	root.AddCommand(cmds...)
	order := []string{"gen", "convert", "check", "report", "run", "cluster", "serve", "publish", "findings", "version", ""}
	var clusterUp *background // cluster up, running while cluster down stops it
	// The sharded roles get a prefix of their own on this machine's NATS,
	// removed at the end.
	shards := natsshard.Config{URL: "nats://127.0.0.1:4222", Prefix: fmt.Sprintf("isoscope.example%d", time.Now().UnixNano())}
	t.Cleanup(func() { removeShardStreams(t, shards) })
	examples := map[string]string{"": rootExample}
	for _, c := range cmds {
		examples[c.Name()] = c.Example
	}
	for _, name := range order {
		lines := exampleLines(examples[name])
		if len(lines) == 0 {
			t.Errorf("%q: no examples in its help", name)
			continue
		}
		if name == "check" {
			// check's store example: a Jepsen test directory whose latest
			// run holds convert's history.edn and a results.edn.
			jepsenStoreExample(t, "history.edn")
		}
		if name == "report" {
			var result bytes.Buffer
			Main(context.Background(), []string{"check", "--json", "--level", "si", "history.jsonl"}, nil, &result, os.Stderr)
			if err := os.WriteFile("result.json", result.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range lines {
			ctx, cancel := context.WithCancel(context.Background())
			line := strings.Join(args, " ")
			if args[0] == "publish" || args[0] == "findings" || strings.Contains(line, "--shard ") {
				args = append(args, "--prefix", shards.Prefix)
			}
			switch {
			case args[0] == "findings" && strings.Contains(line, "--drain"):
				// A whole deployment: a checker of every shard publish
				// made, until the findings are drained.
				stop := runShardCheckers(ctx, t, shards.Prefix, 4)
				defer stop()
			case args[0] == "serve" || args[0] == "findings":
				for i := range args {
					if args[i] == "127.0.0.1:7878" || args[i] == "127.0.0.1:7879" {
						args[i] = "127.0.0.1:0"
					}
				}
				if !strings.Contains(line, "--listen") {
					args = append(args, "--listen", "127.0.0.1:0")
				}
				time.AfterFunc(time.Second, cancel)
			}
			if args[0] == "cluster" && args[1] == "up" {
				// Up until interrupted: the next example, cluster down,
				// stops it from "another terminal".
				clusterUp = start(ctx, cancel, args, "run against it")
				if err := clusterUp.wait(3 * time.Minute); err != nil {
					t.Fatalf("isoscope %s: %v", strings.Join(args, " "), err)
				}
				continue
			}
			var stdout, stderr bytes.Buffer
			code := Main(ctx, args, nil, &stdout, &stderr)
			cancel()
			if args[0] == "cluster" && args[1] == "down" && clusterUp != nil {
				if upCode := clusterUp.stop(); upCode != ExitHolds {
					t.Errorf("cluster up, stopped by cluster down and interrupted: exit %d\n%s", upCode, clusterUp.output())
				}
				clusterUp = nil
			}
			want := map[int]bool{ExitHolds: true}
			if args[0] == "check" || args[0] == "run" {
				want[ExitViolation], want[ExitUnknown] = true, true
			}
			if !want[code] {
				t.Errorf("isoscope %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
			}
		}
	}
	if _, err := os.Stat("pg-cluster"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster down should have removed pg-cluster: %v", err)
	}
	for _, f := range []string{"history.jsonl", "history.edn", "plain.jsonl.gz", "again.jsonl", "report/index.html", "run-report/index.html", "causal.jsonl.gz", "range.jsonl", "ts.jsonl"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("an example should have written %s: %v", f, err)
		}
	}
}

// runShardCheckers runs, in this process, the checkers of n key shards and
// n session shards under prefix, until the returned function stops them.
func runShardCheckers(ctx context.Context, t *testing.T, prefix string, n int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2*n)
	for _, kind := range []string{"k", "s"} {
		for i := range n {
			go func() {
				defer func() { done <- struct{}{} }()
				var out, errs bytes.Buffer
				args := []string{"serve", "--nats", "nats://127.0.0.1:4222", "--shard", fmt.Sprintf("%s:%d", kind, i),
					"--shards", fmt.Sprint(n), "--prefix", prefix, "--listen", "127.0.0.1:0"}
				if code := Main(ctx, args, nil, &out, &errs); code != ExitHolds && ctx.Err() == nil {
					t.Errorf("isoscope %s: exit %d\n%s", strings.Join(args, " "), code, errs.String())
				}
			}()
		}
	}
	return func() {
		cancel()
		for range 2 * n {
			<-done
		}
	}
}

// removeShardStreams deletes the streams and the bucket of cfg's prefix
// from this machine's NATS.
func removeShardStreams(t *testing.T, cfg natsshard.Config) {
	nc, err := nats.Connect(cfg.URL)
	if err != nil {
		t.Errorf("removing the example's streams: %v", err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Errorf("removing the example's streams: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, name := range []string{cfg.PiecesStream(), cfg.FindingsStream()} {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("removing stream %s: %v", name, err)
		}
	}
	if err := js.DeleteKeyValue(ctx, cfg.Bucket()); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("removing bucket %s: %v", cfg.Bucket(), err)
	}
}

// background is a command running in a goroutine of this process.
type background struct {
	mu     sync.Mutex
	out    bytes.Buffer
	want   string
	cancel context.CancelFunc
	code   chan int
}

func (b *background) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.Write(p)
}

func (b *background) output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.out.String()
}

// start runs args under ctx (cancel ends it) until stopped; wait then
// waits until its output shows want.
func start(ctx context.Context, cancel context.CancelFunc, args []string, want string) *background {
	b := &background{want: want, cancel: cancel, code: make(chan int, 1)}
	go func() { b.code <- Main(ctx, args, nil, b, b) }()
	return b
}

// wait waits up to d for the output to show what start was told.
func (b *background) wait(d time.Duration) error {
	deadline := time.Now().Add(d)
	for !strings.Contains(b.output(), b.want) {
		select {
		case code := <-b.code:
			b.code <- code
			return fmt.Errorf("exit %d before %q:\n%s", code, b.want, b.output())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %q within %s:\n%s", b.want, d, b.output())
		}
	}
	return nil
}

// stop interrupts the command and returns its exit status.
func (b *background) stop() int {
	b.cancel()
	return <-b.code
}

// jepsenStoreExample lays out store/my-test/ as Jepsen does: a run
// holding history (copied) and a results.edn, and latest pointing at it.
func jepsenStoreExample(t *testing.T, history string) {
	t.Helper()
	run := filepath.Join("store", "my-test", "20261207T101010.000Z")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "history.edn"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "results.edn"), []byte("{:valid? true, :workload {:valid? true}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(run), filepath.Join("store", "my-test", "latest")); err != nil {
		t.Fatal(err)
	}
}
