package natsshard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/natsshard"
	"github.com/isoscope/isoscope/internal/testservice"
)

// mergedStatus is the aggregator's /v1/state once everything published
// under prefix is checked.
func mergedStatus(t *testing.T, url, prefix string) natsshard.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	agg, err := natsshard.NewAggregator(ctx, natsshard.AggregatorConfig{Config: natsshard.Config{URL: url, Prefix: prefix}})
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	done := make(chan error, 1)
	go func() { done <- agg.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if _, err := agg.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(agg.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/v1/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st natsshard.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestShardedRetry: the skewed history of `gen --txns 200 --timestamps
// --ts-fault skew --ts-faults 3 --seed 7` published twice to a sharded
// deployment (every piece stored twice, as a publisher that retried
// everything would) gives the merged findings one `serve` gives for one
// post, every piece counted as checked, the second copies as duplicates,
// nothing suppressed. Published again with one transaction changed, the
// shard whose piece differs refuses it, and the findings it then
// suppresses are a warning in `findings`' summary and its /v1/state.
func TestShardedRetry(t *testing.T) {
	url := testservice.NATS(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "skew.jsonl")
	run(t, "gen", "--txns", "200", "--timestamps", "--ts-fault", "skew", "--ts-faults", "3", "--seed", "7", "--out", file)
	const timeout = time.Second
	want := lines(t, "serve", single(t, file, timeout), true)
	if len(want) != 10 {
		t.Fatalf("one serve found %d findings, want the 10 the planted skews give", len(want))
	}
	const shards = 2
	prefix := fmt.Sprintf("isotest%d.retry", time.Now().UnixNano())
	cleanup(t, url, prefix)
	for range 2 {
		run(t, "publish", file, "--nats", url, "--prefix", prefix, "--shards", fmt.Sprint(shards), "--stream", "skew")
	}
	ws := workers(t, url, prefix, shards, timeout)
	merged, summary := drain(t, url, prefix)
	if got := lines(t, "findings", merged, true); !slices.Equal(got, want) {
		t.Errorf("published twice, the merged findings differ from one serve's:\nmerged: %s\nserve:  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if !allChecked(summary) || strings.Contains(summary, "WARNING") {
		t.Errorf("published twice: %s", summary)
	}
	st := mergedStatus(t, url, prefix)
	if st.Suppressed != 0 || len(st.Warnings) != 0 || st.DuplicatePieces == 0 || 2*st.DuplicatePieces != uint64(st.Published.Pieces) {
		t.Errorf("published twice: %d suppressed, warnings %q, %d of %d pieces duplicates", st.Suppressed, st.Warnings, st.DuplicatePieces, st.Published.Pieces)
	}
	for _, w := range ws {
		w.stop()
	}

	// Transaction 1's write of key 26 changed: a different transaction
	// under a used id on that key's shard, the same one elsewhere.
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(body, []byte(`["w",26,1]]}`), []byte(`["w",26,100001]]}`), 1)
	if bytes.Equal(changed, body) {
		t.Fatal("transaction 1 is not what the test expects")
	}
	other := filepath.Join(dir, "changed.jsonl")
	if err := os.WriteFile(other, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	prefix = fmt.Sprintf("isotest%d.conflict", time.Now().UnixNano())
	cleanup(t, url, prefix)
	run(t, "publish", file, "--nats", url, "--prefix", prefix, "--shards", fmt.Sprint(shards), "--stream", "skew")
	run(t, "publish", other, "--nats", url, "--prefix", prefix, "--shards", fmt.Sprint(shards), "--stream", "skew")
	ws = workers(t, url, prefix, shards, timeout)
	merged, summary = drain(t, url, prefix)
	for _, w := range ws {
		w.stop()
	}
	st = mergedStatus(t, url, prefix)
	found := len(lines(t, "findings", merged, true))
	if st.Suppressed == 0 || st.RefusedPieces == 0 || found+int(st.Suppressed) < len(want) {
		t.Fatalf("a changed transaction: %d findings, %d suppressed, %d pieces refused", found, st.Suppressed, st.RefusedPieces)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], fmt.Sprintf("%d findings suppressed", st.Suppressed)) ||
		!strings.Contains(summary, "WARNING: "+st.Warnings[0]) {
		t.Errorf("a changed transaction: warnings %q, summary %s", st.Warnings, summary)
	}
}
