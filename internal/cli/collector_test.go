package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/pipeline"
	"github.com/isoscope/isoscope/internal/testservice"
)

var natsURL = testservice.NATSAddr()

// liveServe is `isoscope serve` consuming a fresh JetStream subject.
type liveServe struct {
	url     string
	subject string
	stdout  *lockedWriter
	stderr  *announcer
	cancel  context.CancelFunc
	code    chan int
}

func startServe(t *testing.T, js jetstream.JetStream, timeout time.Duration) *liveServe {
	t.Helper()
	name := fmt.Sprintf("ISOE2E%d", time.Now().UnixNano())
	s := &liveServe{subject: strings.ToLower(name) + ".txns", stdout: &lockedWriter{}, stderr: &announcer{addr: make(chan string, 1)}, code: make(chan int, 1)}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
	go func() {
		s.code <- Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--memory-mb", "0", "--ext-timeout", timeout.String(),
			"--nats", natsURL, "--nats-stream", name, "--nats-subject", s.subject, "--nats-durable", "e2e"}, nil, s.stdout, s.stderr)
	}()
	s.url = "http://" + <-s.stderr.addr
	t.Cleanup(func() {
		s.cancel()
		<-s.code
		js.DeleteStream(context.Background(), name)
	})
	return s
}

var checkedMetric = regexp.MustCompile(`(?m)^isoscope_transactions_checked_total (\d+)$`)

// waitChecked waits until the service has checked n transactions.
func (s *liveServe) waitChecked(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := checkedMetric.FindSubmatch(b); m != nil {
			if got, _ := strconv.Atoi(string(m[1])); got >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service checked fewer than %d transactions in a minute:\n%s\n%s", n, b, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *liveServe) violations(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(s.url + "/v1/violations")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// runCollected runs the mt workload on Badger with --collector into subject,
// rewriting published lines with mutate, and returns the history file's
// committed count.
func runCollected(t *testing.T, subject string, mutate func([]byte) []byte) int {
	t.Helper()
	file := filepath.Join(t.TempDir(), "run.jsonl")
	var out, errb bytes.Buffer
	cmd := runCommandFor(&runCommand{io: IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, hooks: pipeline.Hooks{Published: mutate}})
	cmd.SetArgs([]string{"--db", "badger::memory:", "--level", "si", "--sessions", "6", "--txns", "600", "--keys", "20", "--seed", "5",
		"-o", file, "--collector", natsURL, "--collector-subject", subject})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	if err := cmd.ExecuteContext(context.Background()); err != nil && mutate == nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	h := readHistoryFile(t, file)
	n := 0
	for i := range h.Txns {
		if h.Txns[i].Status == history.Committed {
			n++
		}
	}
	return n
}

// TestCollectorEndToEnd is online checking end to end: `run` against
// Badger publishes each transaction through NATS JetStream to a live
// `serve` as it finishes. A correct run yields no violation, even after
// the Ext timeout; a run whose collector plants faults (transactions
// whose start_ts is moved to the beginning of time, so that their reads
// are beyond their snapshot) yields violations within the timeout.
func TestCollectorEndToEnd(t *testing.T) {
	testservice.NATS(t)
	nc, err := nats.Connect(natsURL, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s: %v", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second

	good := startServe(t, js, timeout)
	n := runCollected(t, good.subject, nil)
	good.waitChecked(t, n)
	time.Sleep(timeout + 500*time.Millisecond) // every Ext verdict final
	if v := good.violations(t); v != "" {
		t.Fatalf("violations on a correct run:\n%s", v)
	}

	bad := startServe(t, js, timeout)
	startTS := regexp.MustCompile(`"start_ts":\d+`)
	readsValue := regexp.MustCompile(`\["r",\d+,\d+\]`)
	planted := 0
	mutate := func(line []byte) []byte {
		if planted < 3 && readsValue.Match(line) && bytes.Contains(line, []byte(`"commit_ts"`)) && bytes.Count(line, []byte("\n")) == 1 {
			planted++
			return startTS.ReplaceAll(line, []byte(`"start_ts":1`))
		}
		return line
	}
	n = runCollected(t, bad.subject, mutate)
	if planted == 0 {
		t.Fatal("no transaction to plant a fault in")
	}
	bad.waitChecked(t, n)
	found := time.Now()
	deadline := found.Add(timeout + 2*time.Second)
	for !strings.Contains(bad.violations(t), "read-beyond-snapshot") {
		if time.Now().After(deadline) {
			t.Fatalf("no violation within the timeout; output:\n%s", bad.stdout.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(bad.stdout.String(), `"kind":"read-beyond-snapshot"`) {
		t.Fatalf("stdout lacks the violation:\n%s", bad.stdout.String())
	}
}

// TestCollectorNATSRefusedExits3: over NATS, the service's verdict on
// each message comes back to the run: a message it refused (a line
// garbled on the way) makes the run say so and exit 3; a clean run
// exits 0 once every verdict came; a run whose messages nobody consumes
// exits 3 when the verdicts do not come within --collector-wait.
func TestCollectorNATSRefusedExits3(t *testing.T) {
	testservice.NATS(t)
	nc, err := nats.Connect(natsURL, nats.Timeout(2*time.Second))
	if err != nil {
		t.Fatalf("NATS at %s: %v", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s := startServe(t, js, time.Second)
	good := runTo(t, natsURL, "good", 4, 300, nil, nil, "--collector-subject", s.subject)
	if good.code != ExitHolds || !strings.Contains(good.stderr.String(), "took all") {
		t.Fatalf("a clean run: exit %d\n%s", good.code, good.stderr.String())
	}
	bad := runTo(t, natsURL, "bad", 4, 300, nil, garble(30), "--collector-subject", s.subject)
	if bad.code != ExitUnknown || !strings.Contains(bad.stderr.String(), "refused 1 of") || !strings.Contains(bad.stderr.String(), "first refusal: message") {
		t.Fatalf("a run with a refused message: exit %d\n%s", bad.code, bad.stderr.String())
	}
	if log := s.stderr.String(); !strings.Contains(log, "source=nats") || !strings.Contains(log, "stream=bad") || !strings.Contains(log, "reason=bad_input") {
		t.Fatalf("the service's log lacks the refused message:\n%s", log)
	}
	name := fmt.Sprintf("ISONOBODY%d", time.Now().UnixNano())
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name)}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(context.Background(), name) })
	alone := runTo(t, natsURL, "alone", 4, 100, nil, nil, "--collector-subject", strings.ToLower(name), "--collector-wait", "300ms")
	if alone.code != ExitUnknown || !strings.Contains(alone.stderr.String(), "had no verdict within 300ms") {
		t.Fatalf("a run nobody consumes: exit %d\n%s", alone.code, alone.stderr.String())
	}
}
