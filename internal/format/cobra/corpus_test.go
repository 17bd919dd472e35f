package cobra

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// corpora is the shared corpora directory, relative to this package.
const corpora = "../../../../shared/corpora"

// corpusRows returns the paths of LABELS.tsv rows whose format column
// satisfies match; it skips the test when the corpora are not there.
func corpusRows(t *testing.T, match func(format string) bool) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(corpora, "LABELS.tsv"))
	if os.IsNotExist(err) {
		t.Skipf("no corpora at %s", corpora)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		cols := strings.Split(sc.Text(), "\t")
		if first || len(cols) < 2 {
			continue
		}
		if match(cols[1]) {
			paths = append(paths, filepath.Join(corpora, cols[0]))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestCorpus loads every Cobra history of the corpora.
func TestCorpus(t *testing.T) {
	paths := corpusRows(t, func(f string) bool { return strings.HasPrefix(f, "cobra") })
	// Transactions per directory, as counted from the raw logs.
	want := map[string]int{
		"cock-G2": 446, "cock-blog": 21, "fauna-page": 8156,
		"yuga-G2-a": 37190, "yuga-G2-b": 26994, "yuga-G2-c": 29419,
	}
	if len(paths) != len(want) {
		t.Errorf("LABELS.tsv lists %d Cobra histories, want %d", len(paths), len(want))
	}
	for _, p := range paths {
		h, err := ReadDir(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		st := h.Stats()
		ix := history.NewIndex(h)
		t.Logf("%s: %d sessions, %d transactions (%d committed, %d aborted), %d operations, %d keys, %d initial values, unique values per key: %v",
			filepath.Base(p), st.Sessions, st.Transactions, st.Committed, st.Aborted, st.Operations, st.Keys, len(h.Header.Initial.Values), ix.Unique())
		if n, ok := want[filepath.Base(p)]; ok && st.Transactions != n {
			t.Errorf("%s: %d transactions, want %d", p, st.Transactions, n)
		}
		if !ix.Unique() {
			k, v, refs := ix.Duplicate()
			t.Errorf("%s: values not unique per key: %s=%s written by %s and %s", p, h.KeyName(k), v, h.TxnName(refs[0].Txn), h.TxnName(refs[1].Txn))
		}
	}
}

// TestVeriStrongCorpus reads VeriStrong's Cobra histories (every write
// with the shared id 0xabddefee): each read of a shared id finds a write
// of its key with the same value hash, the way VeriStrong's reader pairs
// them.
func TestVeriStrongCorpus(t *testing.T) {
	dir := filepath.Join(corpora, "veristrong-perf", "fig13-14-15-table1")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no corpora: %v", err)
	}
	for _, name := range []string{"tpcc-10k", "rubis-10k", "twitter-10k"} {
		h, err := ReadDir(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		ix := history.NewIndex(h)
		shared, unmatched := 0, 0
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				if op.Kind != history.Read || op.Value.Kind != history.String {
					continue
				}
				shared++
				found := false
				ix.Writers(op.Key, op.Value, func(history.OpRef, bool) { found = true })
				if !found {
					unmatched++
				}
			}
		}
		t.Logf("%s: %d transactions, %d reads of shared write ids, unique values per key: %v", name, len(h.Txns), shared, ix.Unique())
		if shared == 0 || unmatched != 0 {
			t.Errorf("%s: %d reads of shared write ids, %d of them match no write", name, shared, unmatched)
		}
	}
}
