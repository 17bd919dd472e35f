package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestRunBadger runs `isoscope run` on Badger in a directory: the history
// carries the database's start and commit timestamps on every committed
// transaction, each session's increasing, and snapshot isolation holds.
// Running again on the same directory goes on above the timestamps the
// first run left; --isolation other than serializable, and --lock-rmw, are
// bad usage.
func TestRunBadger(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "badger")
	var last uint64
	for run := range 2 {
		file := filepath.Join(dir, "run.jsonl")
		code, out, errs := runRun(t, context.Background(), "--db", "badger://"+store, "--level", "si",
			"--sessions", "6", "--txns", "500", "--keys", "20", "--seed", "3", "-o", file)
		if code != ExitHolds || !strings.Contains(out, "snapshot-isolation holds") || !strings.Contains(errs, "ran mt on Badger v4") {
			t.Fatalf("run %d: exit %d\nstdout %s\nstderr %s", run, code, out, errs)
		}
		h := readHistoryFile(t, file)
		if !strings.Contains(h.Header.Source, "(badger://"+store+")") {
			t.Errorf("source %q", h.Header.Source)
		}
		committed := 0
		var lowest uint64 = 1<<64 - 1
		for s, txns := range h.SessionOrder() {
			var prev uint64
			for _, id := range txns {
				tx := &h.Txns[id]
				if tx.Status != history.Committed {
					if tx.HasStartTS || tx.HasCommitTS {
						t.Fatalf("%s transaction %s has timestamps", tx.Status, tx.ID)
					}
					continue
				}
				committed++
				if !tx.HasStartTS || !tx.HasCommitTS || tx.StartTS > tx.CommitTS || tx.StartTS <= prev {
					t.Fatalf("session %s: transaction %s start_ts %d commit_ts %d (%v, %v) after a commit at %d",
						h.Sessions[s], tx.ID, tx.StartTS, tx.CommitTS, tx.HasStartTS, tx.HasCommitTS, prev)
				}
				prev = tx.CommitTS
				lowest = min(lowest, tx.StartTS)
			}
		}
		if committed < 450 {
			t.Errorf("run %d: %d committed", run, committed)
		}
		// A reopened store continues above the versions it holds: the
		// commit timestamps of the transactions that wrote (a read-only
		// one commits at its start and leaves no version behind).
		if lowest <= last {
			t.Errorf("run %d starts at %d, not above the first run's last version %d", run, lowest, last)
		}
		for i := range h.Txns {
			if tx := &h.Txns[i]; tx.Status == history.Committed && tx.StartTS < tx.CommitTS {
				last = max(last, tx.CommitTS)
			}
		}
		if _, err := os.Stat(filepath.Join(store, "MANIFEST")); err != nil {
			t.Errorf("no Badger directory: %v", err)
		}
	}
	code, _, errs := runRun(t, context.Background(), "--db", "badger::memory:", "--isolation", "repeatable-read", "-o", filepath.Join(dir, "rr.jsonl"))
	if code != ExitBadInput || !strings.Contains(errs, "badger has one isolation level") {
		t.Errorf("--isolation repeatable-read: exit %d, %s", code, errs)
	}
	code, _, errs = runRun(t, context.Background(), "--db", "badger::memory:", "--lock-rmw", "-o", filepath.Join(dir, "lock.jsonl"))
	if code != ExitBadInput || !strings.Contains(errs, "badger has no locking reads") {
		t.Errorf("--lock-rmw: exit %d, %s", code, errs)
	}
}
