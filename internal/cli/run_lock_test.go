package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/pipeline"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/textfmt"
)

// TestRunRefusesTableInUse starts a second run on the table of a run
// under way, on PostgreSQL, MariaDB and a SQLite file: the second is
// refused at once with exit 2, naming the table, its holder and --table,
// and touches nothing; the first goes on and holds, with no word of an
// outside writer.
func TestRunRefusesTableInUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"postgres", func(t *testing.T) string { return testservice.Postgres(t) }},
		{"mariadb", func(t *testing.T) string { return testservice.MySQL(t) }},
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "runs.db") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			table := testservice.Table()
			dropAfter(t, addr, table)
			dir := t.TempDir()
			var code2 int
			var errs2 string
			var took time.Duration
			first := &runCommand{hooks: pipeline.Hooks{Recorded: func(n int) {
				if n != 25 {
					return
				}
				start := time.Now()
				code2, _, errs2 = runRun(t, context.Background(), "--db", addr, "--table", table, "--sessions", "4",
					"--txns", "200", "-o", filepath.Join(dir, "second.jsonl"))
				took = time.Since(start)
			}}}
			code, out, errs := runRunWith(t, context.Background(), first, "--db", addr, "--table", table, "--sessions", "4",
				"--keys", "20", "--txns", "400", "-o", filepath.Join(dir, "first.jsonl"))
			if code2 != ExitBadInput || !strings.Contains(errs2, "table "+table+" in ") || !strings.Contains(errs2, "in use by another isoscope run (") ||
				!strings.Contains(errs2, "--table") {
				t.Errorf("the second run: exit %d, stderr\n%s", code2, errs2)
			}
			if took > 5*time.Second {
				t.Errorf("the second run took %s to be refused", took)
			}
			if code != ExitHolds || !strings.Contains(out, "serializable holds") || strings.Contains(errs, "outside this run") {
				t.Errorf("the first run: exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			t.Logf("the second run, refused in %s:\n%s", took.Round(time.Millisecond), errs2)
		})
	}
}

// TestRunSaysOutsideWriter has another program write into a run's table
// in the middle of the run (on PostgreSQL, which takes the writes beside
// the run's transactions): the run's summary warns that something outside
// the run wrote to its table, with the count of reads that saw its value.
// (The write waits for the row locks of the run's transactions: a run
// that ends before any of them reads the value is run again.)
func TestRunSaysOutsideWriter(t *testing.T) {
	addr := testservice.Postgres(t)
	table := testservice.Table()
	dropAfter(t, addr, table)
	raw, err := sql.Open("pgx", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for try := 1; ; try++ {
		var wrote error
		c := &runCommand{hooks: pipeline.Hooks{Recorded: func(n int) {
			if n == 50 {
				// A value no transaction of the run writes (the run's
				// values are positive), one row at a time: one row lock
				// each, which cannot deadlock with the run.
				for k := 0; k < 10 && wrote == nil; k++ {
					_, wrote = raw.Exec("UPDATE "+table+" SET v = -424242 WHERE k = $1", k)
				}
			}
		}}}
		file := filepath.Join(t.TempDir(), "h.jsonl")
		code, out, errs := runRunWith(t, context.Background(), c, "--db", addr, "--table", table, "--sessions", "4",
			"--keys", "10", "--txns", "400", "-o", file)
		if wrote != nil {
			t.Fatal(wrote)
		}
		reads := 0
		for _, txn := range readHistoryFile(t, file).Txns {
			for _, op := range txn.Ops {
				if op.Kind == history.Read && op.Value == history.IntValue(-424242) {
					reads++
				}
			}
		}
		warned := strings.Contains(errs, "warning: something outside this run wrote to table "+table+": "+textfmt.Count(reads, "read")+" in ")
		switch {
		case reads > 0 && warned && strings.Contains(errs, "= -424242"):
			t.Logf("exit %d\n%s", code, errs)
			return
		case reads > 0 || strings.Contains(errs, "outside this run"):
			t.Fatalf("%d reads of the outside value; exit %d\nstdout %s\nstderr %s", reads, code, out, errs)
		case try == 3:
			t.Fatalf("no transaction read the outside value in %d runs", try)
		}
	}
}
