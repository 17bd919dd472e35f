package natsshard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/natsshard"
)

// freePorts returns n ports free on loopback now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// cluster starts three nats-server processes with JetStream, clustered
// on loopback, each with its own store, and returns them and the URL of
// all three. They are stopped by their PIDs when the test ends.
func cluster(t *testing.T) ([]*proc, string) {
	t.Helper()
	server, err := exec.LookPath("nats-server")
	if err != nil {
		t.Fatal("the failover test runs a three-server NATS cluster: nats-server is not installed (apt-get install nats-server)")
	}
	ports := freePorts(t, 6)
	dir := t.TempDir()
	var procs []*proc
	var urls []string
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3+j]))
			}
		}
		store := filepath.Join(dir, fmt.Sprintf("n%d", i))
		procs = append(procs, start(t, server, "-a", "127.0.0.1", "-p", strconv.Itoa(ports[i]), "-n", fmt.Sprintf("iso-%d", i),
			"--cluster_name", "isotest", "--cluster", fmt.Sprintf("nats://127.0.0.1:%d", ports[3+i]), "--routes", strings.Join(routes, ","),
			"-js", "-sd", store))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	url := strings.Join(urls, ",")
	// Ready when JetStream has a meta leader and takes a replicated stream.
	nc, err := nats.Connect(url)
	for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		nc, err = nats.Connect(url)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "READY", Subjects: []string{"ready"}, Replicas: 3})
		if err == nil {
			js.DeleteStream(ctx, "READY")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster has no JetStream: %v\n%s", err, procs[0].stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return procs, url
}

// progress reads shard's checkpoint from the bucket.
func progress(ctx context.Context, kv jetstream.KeyValue, shard string) (natsshard.Progress, error) {
	var p natsshard.Progress
	e, err := kv.Get(ctx, "worker."+strings.Replace(shard, ":", ".", 1))
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal(e.Value(), &p)
}

var replayedRE = regexp.MustCompile(`msg="replayed up to the checkpoint".* seconds=([0-9.e-]+)`)

// TestShardedFailover: on a three-server NATS cluster, with streams of
// three replicas, a history is published in four parts while the checkers
// of 2 key shards and 2 session shards run; after the second part one
// worker is killed with SIGKILL while its Ext verdicts are pending, the
// third part goes out while it is dead and one of the three NATS servers
// is killed, and the worker is started again. The merged findings are
// exactly `check --checker chronos`'s, none lost and none twice, every
// piece published is checked, and the test says how long the worker took
// to recover.
func TestShardedFailover(t *testing.T) {
	servers, url := cluster(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "h.jsonl")
	run(t, "gen", "--timestamps", "--workload", "general", "--txns", "12000", "--sessions", "30", "--keys", "600",
		"--ts-fault", "early-commit", "--ts-faults", "6", "--seed", "11", "--out", file)
	want := chronos(t, file)
	parts := split(t, file, 4)
	const prefix, n, timeout = "isofail", 2, 2 * time.Second
	publish := func(part string) *exec.Cmd {
		return exec.Command(binary(t), "publish", part, "--nats", url, "--prefix", prefix, "--shards", strconv.Itoa(n), "--replicas", "3", "--stream", "h")
	}
	if out, err := publish(parts[0]).CombinedOutput(); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	ws := workers(t, url, prefix, n, timeout, "--replicas", "3")
	if out, err := publish(parts[1]).CombinedOutput(); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}

	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, (&natsshard.Config{Prefix: prefix}).Bucket())
	if err != nil {
		t.Fatal(err)
	}
	// Kill k:0 once it has checked the second part and holds pending
	// verdicts.
	const victim = "k:0"
	stream, err := js.Stream(ctx, (&natsshard.Config{Prefix: prefix}).PiecesStream())
	if err != nil {
		t.Fatal(err)
	}
	last, err := stream.GetLastMsgForSubject(ctx, prefix+".k.0")
	if err != nil {
		t.Fatal(err)
	}
	var before natsshard.Progress
	for deadline := time.Now().Add(20 * time.Second); ; {
		p, err := progress(ctx, kv, victim)
		if err == nil && p.Seq >= last.Sequence && p.Pending > 0 {
			before = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not checkpoint the second part with verdicts pending: %+v, %v\n%s", victim, p, err, ws[victim].stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ws[victim].kill()
	t.Logf("killed worker %s (SIGKILL) at checkpoint %d, %d pieces checked, %d Ext verdicts pending", victim, before.Seq, before.Pieces, before.Pending)

	// The third part goes out while it is dead, and a NATS server dies
	// while it does.
	third := publish(parts[2])
	thirdOut := &lockedBuffer{}
	third.Stdout, third.Stderr = thirdOut, thirdOut
	if err := third.Start(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	servers[0].kill()
	if err := third.Wait(); err != nil {
		t.Fatalf("publishing while a NATS server died: %v\n%s", err, thirdOut.String())
	}
	t.Logf("killed NATS server 1 of 3 (SIGKILL) while the third part was published; the part was stored %s later", time.Since(killed).Round(time.Millisecond))

	restarted := time.Now()
	again := worker(t, url, prefix, victim, n, timeout, "--replicas", "3")
	var replay string
	for deadline := time.Now().Add(60 * time.Second); ; {
		if m := replayedRE.FindStringSubmatch(again.stderr.String()); m != nil {
			replay = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted worker did not replay to its checkpoint:\n%s", again.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	caughtUp := time.Since(restarted)
	secs, _ := strconv.ParseFloat(replay, 64)
	t.Logf("restarted %s: replayed its subject to checkpoint %d in %.3f s; %s from its start to there", victim, before.Seq, secs, caughtUp.Round(time.Millisecond))

	if out, err := publish(parts[3]).CombinedOutput(); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	merged, summary := drain(t, url, prefix)
	got := lines(t, "findings", merged, false)
	if !slices.Equal(got, want) {
		t.Fatalf("the merged findings differ from chronos's:\nmerged:  %s\nchronos: %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if !allChecked(summary) {
		t.Fatalf("not every piece was checked: %s", summary)
	}
	t.Logf("%d findings, as chronos: %s", len(got), strings.TrimSpace(summary))
	if errs := again.stderr.String(); strings.Contains(errs, "level=ERROR") {
		t.Fatalf("the restarted worker logged an error:\n%s", errs)
	}
}

// split cuts file's transaction lines into n files, in order.
func split(t *testing.T, file string, n int) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var txns []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"ops"`) {
			txns = append(txns, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(txns) < n {
		t.Fatal(errors.New("too few transactions to split"))
	}
	var out []string
	for i := range n {
		part := filepath.Join(filepath.Dir(file), fmt.Sprintf("part%d.jsonl", i))
		lo, hi := i*len(txns)/n, (i+1)*len(txns)/n
		if err := os.WriteFile(part, []byte(strings.Join(txns[lo:hi], "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, part)
	}
	return out
}
