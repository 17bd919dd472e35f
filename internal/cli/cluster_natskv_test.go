package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// natsVersion finds the NATS server's version in a run's output.
var natsVersion = regexp.MustCompile(`NATS (\d+)\.(\d+)\.(\d+)`)

// natsCASRace says whether a nats-server release may let two
// compare-and-sets from one revision both succeed on a replicated
// stream: releases that checked the expected revision before proposing
// the write to the replicas, not in order with the writes in flight
// (nats-server#4320, fixed upstream in July 2023, before 2.10.0; 2.9.10,
// Debian 12's, has it: docs/evidence/nats-kv-cas-race.md). Every 2.9
// release is taken to have it.
func natsCASRace(major, minor int) bool { return major < 2 || major == 2 && minor < 10 }

// TestRunNatsKVFaults: three nats-server processes, a KV bucket of three
// replicas whose reads the stream's leader answers, lightweight
// transactions (one key's compare-and-set by revision each) while a node
// is cut off, killed or paused every second; checked at strict
// serializability, which for transactions of one key each is
// linearizability per key, what JetStream KV claims. On a release with
// the compare-and-set race the only anomalies allowed are lost updates
// (two compare-and-sets from one revision both committed), which the test
// reports; on any other release strict serializability must hold.
func TestRunNatsKVFaults(t *testing.T) {
	t.Parallel() // each stands up its own cluster, on ports of its own
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kinds := []string{"partition", "kill", "pause"}
	code, out, errs, file := clusterRun(t, ctx, &runCommand{}, "nats-kv-leader", "--faults", strings.Join(kinds, ","),
		"--fault-interval", "1s", "--workload", "lwt", "--duration", "12s", "--sessions", "6", "--keys", "20",
		"--level", "sser", "--seed", "7")
	checkFaultHistory(t, errs, file, kinds...)
	m := natsVersion.FindStringSubmatch(errs + out)
	if m == nil {
		t.Fatalf("the run does not name the NATS server's version")
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if !natsCASRace(major, minor) {
		if code != ExitHolds || !strings.HasPrefix(out, "strict-serializable holds") {
			t.Errorf("%s: exit %d, want strict serializability to hold", m[0], code)
		}
		return
	}
	var res, resErr bytes.Buffer
	if c := Main(ctx, []string{"check", "--level", "sser", "--json", file}, nil, &res, &resErr); c != ExitHolds && c != ExitViolation {
		t.Fatalf("check: exit %d: %s", c, resErr.String())
	}
	var r struct {
		Outcome string         `json:"outcome"`
		Counts  map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(res.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	for kind, n := range r.Counts {
		if kind != "lost-update" {
			t.Errorf("%s: %d %s anomalies, beyond the compare-and-set race's lost updates", m[0], n, kind)
		}
	}
	t.Logf("%s has the compare-and-set race: %s, %d lost updates", m[0], r.Outcome, r.Counts["lost-update"])
}

// TestRunNatsKVRefusesSeveralKeys: a workload whose transactions can
// touch several keys is refused on nats-kv (exit 2, saying what to run),
// before any transaction; lwt is not.
func TestRunNatsKVRefusesSeveralKeys(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"--workload", "mt"}, {"--workload", "list-append"}, {"--workload", "general"}} {
		code, _, errs := runRunWith(t, ctx, &runCommand{}, append([]string{"--cluster", "nats-kv:1", "--txns", "50",
			"-o", t.TempDir() + "/run.jsonl"}, args...)...)
		if code != ExitBadInput || !strings.Contains(errs, "use --workload lwt, or list-append with --ops 1") {
			t.Errorf("%v: exit %d, %q; want %d and what to run", args, code, errs, ExitBadInput)
		}
	}
	if code, out, errs := runRunWith(t, ctx, &runCommand{}, "--cluster", "nats-kv:1", "--workload", "lwt", "--txns", "50",
		"--level", "sser", "-o", t.TempDir()+"/run.jsonl"); code != ExitHolds {
		t.Errorf("lwt: exit %d\n%s%s", code, errs, out)
	}
}
