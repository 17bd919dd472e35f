package natsshard_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/db/dbtest"
)

// TestShardedDifferential: on generated timestamped histories with planted
// timestamp faults, the sharded deployment — a publisher, a checker per
// shard (2 and 4 key shards and as many session shards, each a process of
// its own) and the aggregator — reports exactly the findings one `serve`
// reports, explanations included, and both report what `check --checker
// chronos` reports; every piece published is checked.
func TestShardedDifferential(t *testing.T) {
	url := dbtest.NATS(t)
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

// allChecked reads findings --drain's summary: every piece published was
// checked, none refused, none read twice.
func allChecked(summary string) bool {
	var found, dup, txns, checked, published, refused, shards int
	_, err := fmt.Sscanf(strings.TrimSpace(summary[strings.LastIndex(strings.TrimSpace(summary), "\n")+1:]),
		"%d findings (%d read again and dropped); %d transactions checked, %d of %d pieces published checked (%d refused) by %d shards",
		&found, &dup, &txns, &checked, &published, &refused, &shards)
	return err == nil && checked == published && published > 0 && refused == 0
}
