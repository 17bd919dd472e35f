package natsshard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/testbin"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/natsshard"
)

// binary is the isoscope binary, built once per test run.
func binary(t *testing.T) string { return testbin.Isoscope(t) }

// proc is a process of the binary (or a NATS server), stopped by its PID
// when the test ends.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr *lockedBuffer
	done   chan struct{}
}

// lockedBuffer is a buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start starts name with args, killing it when the test ends.
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() && len(args) > 0 && args[0] == "serve" {
			t.Logf("%s %s:\n%s", filepath.Base(name), strings.Join(args, " "), p.stderr.String())
		}
	})
	return p
}

// kill stops the process with SIGKILL and waits for it.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop interrupts the process and waits for it.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// run runs the binary to its end and returns its standard output.
func run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("isoscope %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// cleanup deletes the streams and the bucket of prefix from the server
// at url when the test ends.
func cleanup(t *testing.T, url, prefix string) {
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			return
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cfg := natsshard.Config{Prefix: prefix}
		js.DeleteStream(ctx, cfg.PiecesStream())
		js.DeleteStream(ctx, cfg.FindingsStream())
		js.DeleteKeyValue(ctx, cfg.Bucket())
	})
}

// finding is what two checkers must agree on about a finding.
type finding struct {
	Kind         string          `json:"kind"`
	Phenomenon   string          `json:"phenomenon"`
	Transactions []any           `json:"transactions"`
	Key          any             `json:"key"`
	Value        json.RawMessage `json:"value"`
	Explanation  string          `json:"explanation"`
}

// identity is a finding's kind, transactions, key and value; with
// explained, its explanation too.
func (f *finding) identity(explained bool) string {
	b, _ := json.Marshal([]any{f.Kind, f.Phenomenon, f.Transactions, f.Key, f.Value})
	if explained {
		return string(b) + " " + f.Explanation
	}
	return string(b)
}

// lines reads JSON lines of findings, sorted by identity; it fails on a
// finding written twice.
func lines(t *testing.T, what, s string, explained bool) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var f finding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("%s: %v: %s", what, err, sc.Text())
		}
		out = append(out, f.identity(explained))
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			t.Fatalf("%s: a finding twice: %s", what, out[i])
		}
	}
	return out
}

// chronos is the offline checker's findings on file, at snapshot
// isolation or, with ser, serializability.
func chronos(t *testing.T, file string, ser ...bool) []string {
	t.Helper()
	level := "si"
	if len(ser) > 0 && ser[0] {
		level = "ser"
	}
	cmd := exec.Command(binary(t), "check", "--checker", "chronos", "--level", level, "--json", "--no-holds", file)
	out, _ := cmd.Output() // exit 1: violations
	var res struct {
		Anomalies []finding `json:"anomalies"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("check --checker chronos %s: %v\n%s", file, err, out)
	}
	var ids []string
	for i := range res.Anomalies {
		ids = append(ids, res.Anomalies[i].identity(false))
	}
	slices.Sort(ids)
	return ids
}

var addrRE = regexp.MustCompile(`on http://([0-9.:]+) `)

// single runs one `serve` (no shards) on file, posted whole over HTTP,
// and returns its final violations once no verdict is pending.
func single(t *testing.T, file string, timeout time.Duration, extra ...string) string {
	t.Helper()
	p := start(t, binary(t), append([]string{"serve", "--listen", "127.0.0.1:0", "--timeout", timeout.String(), "--memory-mb", "0"}, extra...)...)
	defer p.stop()
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == ""; {
		if m := addrRE.FindStringSubmatch(p.stderr.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/v1/transactions", "application/x-ndjson", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("serve refused the history: %d %s", resp.StatusCode, msg)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var st struct {
			Checked int `json:"checked"`
			Pending int `json:"pending_verdicts"`
		}
		resp, err := http.Get("http://" + addr + "/v1/state")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if st.Checked > 0 && st.Pending == 0 { // the batch is in, and every verdict final
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve still has %d verdicts pending", st.Pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err = http.Get("http://" + addr + "/v1/violations")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// workers starts the checkers of every shard of n.
func workers(t *testing.T, url, prefix string, n int, timeout time.Duration, extra ...string) map[string]*proc {
	t.Helper()
	out := map[string]*proc{}
	for _, kind := range []string{"k", "s"} {
		for i := range n {
			id := fmt.Sprintf("%s:%d", kind, i)
			out[id] = worker(t, url, prefix, id, n, timeout, extra...)
		}
	}
	return out
}

// worker starts the checker of one shard.
func worker(t *testing.T, url, prefix, id string, n int, timeout time.Duration, extra ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--nats", url, "--prefix", prefix, "--shard", id, "--shards", fmt.Sprint(n),
		"--listen", "127.0.0.1:0", "--timeout", timeout.String(), "--memory-mb", "0"}, extra...)
	return start(t, binary(t), args...)
}

// drain runs `findings --drain` and returns the merged findings and its
// summary.
func drain(t *testing.T, url, prefix string) (string, string) {
	t.Helper()
	cmd := exec.Command(binary(t), "findings", "--nats", url, "--prefix", prefix, "--listen", "", "--drain", "--drain-timeout", "45s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("findings --drain: %v\n%s", err, stderr.String())
	}
	return string(out), stderr.String()
}
