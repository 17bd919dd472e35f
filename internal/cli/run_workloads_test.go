package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestRunPaperWorkloads runs Boomslang's workloads through `isoscope run`
// on the embedded database: each is checked serializable, its history
// says what ran, promises unique values only where they are fresh, and
// follows --max-width and --value-domain (and their old names, --span and --values).
func TestRunPaperWorkloads(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		source string
		unique bool
		// span and values bound the ranges' widths and the written
		// values (0: not checked).
		span, values int64
	}{
		{"randombench", []string{"--workload", "randombench"}, "workload=randombench sessions=4 txns=200 keys=200 dist=uniform ops=8 span=100 values=8", false, 100, 8},
		{"randomrange", []string{"--workload", "random-range", "--max-width", "5", "--value-domain", "3"}, "ops=8 span=5 values=3", false, 5, 3},
		{"randomrmwrange", []string{"--workload", "randomrmwrange", "--txns", "100"}, "workload=randomrmwrange sessions=4 txns=100 keys=200 dist=uniform ops=8 span=100", true, 0, 0},
		{"blindw", []string{"--workload", "blindw", "--keys", "2000"}, "workload=blindw sessions=4 txns=200 keys=2000 dist=uniform read-ratio=0.5 ops=8", true, 0, 0},
		{"blindw repeated", []string{"--workload", "blindw", "--keys", "2000", "--values", "4"}, "ops=8 values=4", false, 0, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			args := append([]string{"--sessions", "4", "--txns", "200", "--keys", "200", "--dist", "uniform", "--seed", "1", "-o", file}, tc.args...)
			code, out, errs := runRun(t, context.Background(), args...)
			if code != ExitHolds || !strings.Contains(out, "serializable holds (checker ") || !strings.Contains(errs, " on SQLite ") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			h := readHistoryFile(t, file)
			if !strings.Contains(h.Header.Source, tc.source) || h.Header.UniqueValues != tc.unique || h.Header.Deletes != history.PhysicalDeletes {
				t.Errorf("header %+v", h.Header)
			}
			for i := range h.Txns {
				for _, op := range h.Txns[i].Ops {
					switch {
					case op.Kind.IsRange() && tc.span > 0 && op.Range.Hi.N-op.Range.Lo.N > tc.span:
						t.Fatalf("a range [%s, %s) wider than %d", op.Range.Lo, op.Range.Hi, tc.span)
					case op.Kind == history.Write && tc.values > 0 && (op.Value.N < 1 || op.Value.N > tc.values):
						t.Fatalf("a write of %s outside 1..%d", op.Value, tc.values)
					}
				}
			}
		})
	}
	if code, _, errs := runRun(t, context.Background(), "--workload", "randombench", "--max-width", "2000000000"); code != ExitBadInput || !strings.Contains(errs, "max width") {
		t.Errorf("a span of 2·10⁹ keys: exit %d, %s", code, errs)
	}
}
