package natsshard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/natsshard"
	"github.com/isoscope/isoscope/internal/shard"
	"github.com/isoscope/isoscope/internal/testservice"
)

// TestShardedMixedForms: a stream whose first half was published as JSON
// lines (publish --pieces json, what publishers wrote before the binary
// form) and whose second half in the binary form is checked as one
// `serve` and chronos check the whole history, at 2 and 4 shards.
func TestShardedMixedForms(t *testing.T) {
	url := testservice.NATS(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "h.jsonl")
	run(t, "gen", "--timestamps", "--out", file, "--workload", "general", "--txns", "3000", "--sessions", "20", "--keys", "300",
		"--ts-fault", "early-commit", "--ts-faults", "4", "--seed", "11")
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.SplitAfter(string(body), "\n")
	header, txns := all[0], all[1:]
	halves := []string{filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.jsonl")}
	for i, part := range [][]string{txns[:len(txns)/2], txns[len(txns)/2:]} {
		if err := os.WriteFile(halves[i], []byte(header+strings.Join(part, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const timeout = time.Second
	want := chronos(t, file)
	if len(want) < 4 {
		t.Fatalf("chronos found %d findings; the planted faults should show", len(want))
	}
	explained := lines(t, "serve", single(t, file, timeout), true)
	for _, n := range []int{2, 4} {
		prefix := fmt.Sprintf("isotest%d.mixed%d", time.Now().UnixNano(), n)
		cleanup(t, url, prefix)
		ws := workers(t, url, prefix, n, timeout)
		run(t, "publish", halves[0], "--pieces", "json", "--stream", "h", "--nats", url, "--prefix", prefix, "--shards", fmt.Sprint(n))
		run(t, "publish", halves[1], "--pieces", "binary", "--stream", "h", "--nats", url, "--prefix", prefix, "--shards", fmt.Sprint(n))
		merged, summary := drain(t, url, prefix)
		for _, w := range ws {
			w.stop()
		}
		if got := lines(t, "findings", merged, true); !slices.Equal(got, explained) {
			t.Fatalf("%d shards: the merged findings of JSON and binary pieces differ from serve's:\nmerged: %s\nserve:  %s", n,
				strings.Join(got, "\n  "), strings.Join(explained, "\n  "))
		}
		if !allChecked(summary) {
			t.Fatalf("%d shards: not every piece was checked: %s", n, summary)
		}
		t.Logf("%d shards, half JSON and half binary: %d findings, as serve and chronos; %s", n, len(want), strings.TrimSpace(summary))
	}
}

// TestShardedBadPieces: messages of pieces that cannot be read — cut
// short, of another version, garbage after the magic's NUL, a JSON line
// that is not one — and good pieces cut for another number of shards or
// not saying how they were cut, put among good ones on a key shard's subject are each
// refused, logged with the subject and the message's sequence, and
// counted as refused pieces (by their Isoscope-Pieces header); the worker
// goes on and checks the rest (pairs' findings, which read nothing of a
// refused message, are serve's).
func TestShardedBadPieces(t *testing.T) {
	url := testservice.NATS(t)
	file := filepath.Join(t.TempDir(), "pairs.jsonl")
	if err := os.WriteFile(file, []byte(pairs), 0o644); err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	explained := lines(t, "serve", single(t, file, timeout), true)
	prefix := fmt.Sprintf("isotest%d.bad", time.Now().UnixNano())
	cleanup(t, url, prefix)
	ws := workers(t, url, prefix, 2, timeout)

	// A good message, in the binary form, to cut and spoil.
	var good []byte
	{
		var e shard.Encoder
		h, txn := pairsTxn(t)
		for _, p := range shard.Split(h, txn, 1) {
			if p.ID.Kind == shard.Keys {
				if err := e.Add(h, txn, &p); err != nil {
					t.Fatal(err)
				}
			}
		}
		good = e.Append(nil)
	}
	version := slices.Clone(good)
	version[len(shard.Magic)] = 9
	bad := [][]byte{good[:len(good)-3], version, append([]byte{0}, strings.Repeat("\xff", 40)...), []byte("{\"id\":\n"), good, good}
	// The last two are good pieces cut for 3 shards, and by a publisher
	// that does not say how it cut them.
	sharding := []string{shard.Sharding(2), shard.Sharding(2), shard.Sharding(2), shard.Sharding(2), shard.Sharding(3), ""}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject := prefix + ".k.0"
	var seqs []uint64
	for _, b := range bad {
		m := nats.NewMsg(subject)
		m.Data = b
		m.Header.Set(natsshard.PiecesHeader, "5")
		m.Header.Set(natsshard.PieceHeader, "1")
		m.Header.Set(natsshard.EncodingHeader, shard.Encoding)
		if sharding[len(seqs)] != "" {
			m.Header.Set(natsshard.ShardingHeader, sharding[len(seqs)])
		}
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	run(t, "publish", file, "--nats", url, "--prefix", prefix, "--shards", "2")
	merged, summary := drain(t, url, prefix)
	k0 := ws["k:0"]
	select {
	case <-k0.done:
		t.Fatalf("the worker of k:0 stopped on bad pieces:\n%s", k0.stderr.String())
	default:
	}
	for _, w := range ws {
		w.stop()
	}
	log := k0.stderr.String()
	for i, seq := range seqs {
		if name := fmt.Sprintf("%s message %d", subject, seq); !strings.Contains(log, name) || strings.Contains(log, "panic") {
			t.Errorf("bad message %d (%q…): the worker's log does not name %q:\n%s", i, bad[i][:min(8, len(bad[i]))], name, log)
		}
	}
	if !strings.Contains(log, "version 9") {
		t.Errorf("the message of version 9 is not refused for its version:\n%s", log)
	}
	if !strings.Contains(log, "cut for 3 shards") || !strings.Contains(log, "no sharding named") {
		t.Errorf("the pieces cut for 3 shards, or not saying how they were cut, are not refused for it:\n%s", log)
	}
	if !strings.Contains(summary, fmt.Sprintf("(%d refused)", 5*5+1)) {
		t.Errorf("the refused pieces are not counted by their headers (5 each for the binary ones, 1 for the JSON one): %s", summary)
	}
	if got := lines(t, "findings", merged, true); !slices.Equal(got, explained) {
		t.Fatalf("the merged findings differ from serve's:\nmerged: %s\nserve:  %s", strings.Join(got, "\n  "), strings.Join(explained, "\n  "))
	}
	t.Logf("%d bad messages refused and counted; %s", len(bad), strings.TrimSpace(summary))
}

// pairsTxn returns pairs read, and its first transaction.
func pairsTxn(t *testing.T) (*history.History, *history.Txn) {
	t.Helper()
	h, err := native.Read(strings.NewReader(pairs), "pairs")
	if err != nil {
		t.Fatal(err)
	}
	return h, &h.Txns[0]
}
