package natsshard_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/testservice"
)

// TestShardedDifferential: on generated timestamped histories with planted
// timestamp faults, the sharded deployment — a publisher, a checker per
// shard (2 and 4 key shards and as many session shards, each a process of
// its own) and the aggregator — reports exactly the findings one `serve`
// reports, explanations included, and both report what `check --checker
// chronos` reports; every piece published is checked.
func TestShardedDifferential(t *testing.T) {
	url := testservice.NATS(t)
	dir := t.TempDir()
	histories := []struct{ name, args string }{
		{"early-commit", "--workload general --txns 3000 --sessions 20 --keys 300 --ts-fault early-commit --ts-faults 4 --seed 5"},
		{"skew", "--workload mt --txns 3000 --sessions 20 --keys 200 --ts-fault skew --ts-faults 4 --seed 9"},
	}
	const timeout = time.Second
	for _, hist := range histories {
		file := filepath.Join(dir, hist.name+".jsonl")
		run(t, append(strings.Fields("gen --timestamps --out "+file), strings.Fields(hist.args)...)...)
		want := chronos(t, file)
		if len(want) < 4 {
			t.Fatalf("%s: chronos found %d findings; the planted faults should show", hist.name, len(want))
		}
		one := single(t, file, timeout)
		if got := lines(t, "serve", one, false); !slices.Equal(got, want) {
			t.Fatalf("%s: serve and chronos differ:\nserve:   %s\nchronos: %s", hist.name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		explained := lines(t, "serve", one, true)
		for _, n := range []int{2, 4} {
			prefix := fmt.Sprintf("isotest%d.%s%d", time.Now().UnixNano(), strings.ReplaceAll(hist.name, "-", ""), n)
			cleanup(t, url, prefix)
			run(t, "publish", file, "--nats", url, "--prefix", prefix, "--shards", fmt.Sprint(n))
			ws := workers(t, url, prefix, n, timeout)
			merged, summary := drain(t, url, prefix)
			for _, w := range ws {
				w.stop()
			}
			if got := lines(t, "findings", merged, true); !slices.Equal(got, explained) {
				t.Fatalf("%s, %d shards: the merged findings differ from serve's:\nmerged: %s\nserve:  %s", hist.name, n,
					strings.Join(got, "\n  "), strings.Join(explained, "\n  "))
			}
			if !allChecked(summary) {
				t.Fatalf("%s, %d shards: not every piece was checked: %s", hist.name, n, summary)
			}
			t.Logf("%s, %d shards: %d findings, as serve and chronos; %s", hist.name, n, len(want), strings.TrimSpace(summary))
		}
	}
}

// TestShardedSerializable: at serializability (Aion-SER: each key's writers
// in commit-timestamp order, every read the state the commits before its
// commit_ts left), on a history with skewed timestamps, 2 key shards
// report what one `serve --level ser` and `check --checker chronos
// --level ser` report.
func TestShardedSerializable(t *testing.T) {
	url := testservice.NATS(t)
	file := filepath.Join(t.TempDir(), "skew.jsonl")
	run(t, "gen", "--timestamps", "--workload", "general", "--txns", "3000", "--sessions", "20", "--keys", "300",
		"--ts-fault", "skew", "--ts-faults", "4", "--seed", "7", "--out", file)
	const timeout = time.Second
	want := chronos(t, file, true)
	if len(want) == 0 {
		t.Fatal("chronos finds nothing at SER; the planted faults should show")
	}
	one := single(t, file, timeout, "--level", "ser")
	if got := lines(t, "serve", one, false); !slices.Equal(got, want) {
		t.Fatalf("serve and chronos differ at SER:\nserve:   %s\nchronos: %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	prefix := fmt.Sprintf("isotest%d.ser", time.Now().UnixNano())
	cleanup(t, url, prefix)
	run(t, "publish", file, "--nats", url, "--prefix", prefix, "--shards", "2")
	ws := workers(t, url, prefix, 2, timeout, "--level", "ser")
	merged, summary := drain(t, url, prefix)
	for _, w := range ws {
		w.stop()
	}
	if got, explained := lines(t, "findings", merged, true), lines(t, "serve", one, true); !slices.Equal(got, explained) {
		t.Fatalf("the merged findings differ from serve's at SER:\nmerged: %s\nserve:  %s", strings.Join(got, "\n  "), strings.Join(explained, "\n  "))
	}
	if !allChecked(summary) {
		t.Fatalf("not every piece was checked, or a finding was lost: %s", summary)
	}
	t.Logf("SER, 2 shards: %d findings, as serve and chronos; %s", len(want), strings.TrimSpace(summary))
}

// allChecked reads findings --drain's summary: every piece published was
// checked, none refused, and every finding the shards found was written or
// merged with another of its pair of writers.
func allChecked(summary string) bool {
	var written, found, merged, dup, txns, checked, published, refused, shards int
	line := summary
	for l := range strings.Lines(summary) {
		if strings.Contains(l, " findings of the ") {
			line = l
		}
	}
	_, err := fmt.Sscanf(strings.TrimSpace(line),
		"%d findings of the %d the shards found (%d merged: a pair of writers named by several shards; %d read again and dropped); %d transactions checked, %d of %d pieces published checked (%d refused) by %d shards",
		&written, &found, &merged, &dup, &txns, &checked, &published, &refused, &shards)
	return err == nil && checked == published && published > 0 && refused == 0 && written+merged == found
}

// TestShardedBadgerRun: a workload run on Badger (whose timestamps
// isoscope's own oracle gives) publishes each transaction as it finishes
// to 2 key shards and 2 session shards (run --collector-shards); the
// merged findings — a pair of concurrent writers that several shards name,
// each by its own shared key, merged into the one finding of the whole
// transactions — are what one `serve` and `check --checker chronos` find
// in the run's history file, and every piece is checked.
func TestShardedBadgerRun(t *testing.T) {
	url := testservice.NATS(t)
	prefix := fmt.Sprintf("isotest%d.badger", time.Now().UnixNano())
	cleanup(t, url, prefix)
	const timeout = time.Second
	ws := workers(t, url, prefix, 2, timeout)
	file := filepath.Join(t.TempDir(), "run.jsonl")
	// Badger detects conflicts on reads only: blind writes of one key by
	// concurrent transactions both commit, and snapshot isolation's
	// NoConflict axiom says so (exit 1, a violation).
	cmd := exec.Command(binary(t), "run", "--db", "badger::memory:", "--workload", "general", "--txns", "2000", "--sessions", "8", "--level", "si",
		"--out", file, "--collector", url, "--collector-shards", "2", "--collector-prefix", prefix)
	if out, err := cmd.CombinedOutput(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() > 1 {
		t.Fatalf("run: %v\n%s", err, out)
	}
	merged, summary := drain(t, url, prefix)
	for _, w := range ws {
		w.stop()
	}
	want := chronos(t, file)
	if got := lines(t, "findings", merged, false); !slices.Equal(got, want) {
		t.Fatalf("the merged findings differ from chronos's:\nmerged:  %s\nchronos: %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if got, one := lines(t, "findings", merged, true), lines(t, "serve", single(t, file, timeout), true); !slices.Equal(got, one) {
		t.Fatalf("the merged findings differ from serve's:\nmerged: %s\nserve:  %s", strings.Join(got, "\n  "), strings.Join(one, "\n  "))
	}
	if !allChecked(summary) {
		t.Fatalf("not every piece was checked, or a finding was lost: %s", summary)
	}
	t.Logf("Badger run: %d findings, as chronos; %s", len(want), strings.TrimSpace(summary))
}

// pairs is a history whose conflicting writers share keys in several
// shards: T1 and T2 write keys 0 to 7 with one commit_ts (a concurrent
// write under SI, named once; under SER one finding per key), and T4
// overwrites keys 10 to 12 while T3 does, having read key 12 first (a lost
// update, which a single checker names by key 12).
const pairs = `{"id":1,"session":0,"start_ts":1,"commit_ts":10,"ops":[["w",0,1],["w",1,1],["w",2,1],["w",3,1],["w",4,1],["w",5,1],["w",6,1],["w",7,1]]}
{"id":2,"session":1,"start_ts":2,"commit_ts":10,"ops":[["w",7,2],["w",6,2],["w",5,2],["w",4,2],["w",3,2],["w",2,2],["w",1,2],["w",0,2]]}
{"id":3,"session":2,"start_ts":20,"commit_ts":30,"ops":[["w",10,3],["w",11,3],["w",12,3]]}
{"id":4,"session":3,"start_ts":21,"commit_ts":31,"ops":[["r",12,null],["w",10,4],["w",12,4],["w",11,4]]}
`

// TestShardedPairs: on pairs, at SI (2 and 4 key shards) and at SER (2),
// the shards report
// what one serve and chronos report: at SI each pair of writers once, by
// the key one checker names, though several shards name it.
func TestShardedPairs(t *testing.T) {
	url := testservice.NATS(t)
	file := filepath.Join(t.TempDir(), "pairs.jsonl")
	if err := os.WriteFile(file, []byte(pairs), 0o644); err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	for _, ser := range []bool{false, true} {
		level := "si"
		if ser {
			level = "ser"
		}
		want := chronos(t, file, ser)
		one := single(t, file, timeout, "--level", level)
		if got := lines(t, "serve", one, false); !slices.Equal(got, want) {
			t.Fatalf("%s: serve and chronos differ:\nserve:   %s\nchronos: %s", level, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		explained := lines(t, "serve", one, true)
		shards := []int{2, 4}
		if ser {
			shards = shards[:1] // one finding per key: nothing to merge
		}
		for _, n := range shards {
			prefix := fmt.Sprintf("isotest%d.pairs%s%d", time.Now().UnixNano(), level, n)
			cleanup(t, url, prefix)
			run(t, "publish", file, "--nats", url, "--prefix", prefix, "--shards", fmt.Sprint(n))
			ws := workers(t, url, prefix, n, timeout, "--level", level)
			merged, summary := drain(t, url, prefix)
			for _, w := range ws {
				w.stop()
			}
			if got := lines(t, "findings", merged, true); !slices.Equal(got, explained) {
				t.Fatalf("%s, %d shards: the merged findings differ from serve's:\nmerged: %s\nserve:  %s", level, n, strings.Join(got, "\n  "), strings.Join(explained, "\n  "))
			}
			if !allChecked(summary) {
				t.Fatalf("%s, %d shards: not every piece was checked, or a finding was lost: %s", level, n, summary)
			}
			t.Logf("%s, %d shards: %d findings, as serve and chronos; %s", level, n, len(want), strings.TrimSpace(summary))
		}
	}
}
