package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// readGenerated reads a history gen wrote.
func readGenerated(t *testing.T, file string) *history.History {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := native.Read(f, file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	return h
}

func TestGenRangeWorkloads(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string // substrings of the header's source
		tomb bool
		init bool
	}{
		{[]string{"--workload", "randombench", "--mode", "si", "--tombstones"}, []string{"randombench", "mode=si", "dist=uniform", "deletes=tombstone", "repeated"}, true, false},
		{[]string{"--workload", "randomrange", "--populate", "0.5", "--values", "unique"}, []string{"randomrange", "mode=serial", "values=unique", "populate=0.5"}, false, true},
		{[]string{"--workload", "randomrmwrange", "--global-scans", "--dist", "zipfian", "--keys", "50"}, []string{"randomrmwrange global-scans", "dist=zipfian", "keys=50"}, false, false},
		{[]string{"--workload", "blindw", "--blindw-mixed", "--fault", "0.1", "--ops", "4"}, []string{"blindw mixed", "fault=0.1", "ops=4"}, false, false},
		{[]string{"--workload", "BlindW", "--max-width", "30", "--max-iter", "3", "--value-domain", "7", "--values", "repeated"}, []string{"blindw read-only-or-write-only", "widths=2-30", "iter=1-3", "repeated(1-7)"}, false, false},
	} {
		file := filepath.Join(dir, strings.Join(tc.args[:2], "-")+".jsonl.gz")
		args := append([]string{"gen", "--txns", "300", "--keys", "100", "--seed", "5", "--out", file}, tc.args...)
		if code, _, errs := run(t, "", args...); code != ExitHolds {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		h := readGenerated(t, file)
		if len(h.Txns) != 300 {
			t.Errorf("%v: %d transactions", tc.args, len(h.Txns))
		}
		for _, w := range tc.want {
			if !strings.Contains(h.Header.Source, w) {
				t.Errorf("%v: source %q lacks %q", tc.args, h.Header.Source, w)
			}
		}
		if (h.Header.Deletes == history.TombstoneDeletes) != tc.tomb || (len(h.Header.Initial.Values) > 0) != tc.init {
			t.Errorf("%v: header %+v", tc.args, h.Header)
		}
	}
}

func TestGenRangeThenCheck(t *testing.T) {
	dir := t.TempDir()
	clean, faulty := filepath.Join(dir, "clean.jsonl"), filepath.Join(dir, "faulty.jsonl")
	for _, out := range []struct {
		file  string
		fault string
	}{{clean, "0"}, {faulty, "0.5"}} {
		if code, _, errs := run(t, "", "gen", "--workload", "blindw", "--txns", "300", "--keys", "50", "--seed", "2",
			"--fault", out.fault, "--out", out.file); code != ExitHolds {
			t.Fatalf("gen: exit %d: %s", code, errs)
		}
	}
	if code, out, _ := run(t, "", "check", "--level", "sser", clean); code != ExitHolds {
		t.Errorf("serial BlindW: exit %d: %s", code, out)
	}
	if code, out, _ := run(t, "", "check", "--level", "sser", faulty); code != ExitViolation {
		t.Errorf("serial BlindW with faults: exit %d: %s", code, out)
	}
}

func TestGenRangeBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--workload", "nope"}, "--workload: unknown workload"},
		{[]string{"--workload", "blindw", "--plant", "lost-update"}, "--fault"},
		{[]string{"--workload", "randombench", "--abort-ratio", "0.1"}, "--fault"},
		{[]string{"--workload", "randombench", "--values", "odd"}, "--values"},
		{[]string{"--workload", "randomrange", "--min-width", "9", "--max-width", "3"}, "range widths"},
		{[]string{"--workload", "randomrange", "--fault", "2"}, "fault"},
		{[]string{"--workload", "blindw", "--mode", "rc"}, "--mode"},
	} {
		code, _, errs := run(t, "", append([]string{"gen", "--txns", "10"}, tc.args...)...)
		if code != ExitBadInput || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, errs, tc.msg)
		}
	}
}
