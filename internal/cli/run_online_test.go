package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/testservice"
)

// onlineFindings reads the JSON lines --online-findings wrote.
func onlineFindings(t *testing.T, name string) []map[string]any {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// checkFenced holds a run's history to the fence convention: the header
// names the fence key, every session's first transaction that did
// anything is a fence (a read of the key, then an append to it; an
// aborted one may stop after the read), and no other transaction touches
// the fence key.
func checkFenced(t *testing.T, h *history.History) {
	t.Helper()
	fk, ok := h.LookupKey(h.Header.FenceKey)
	if h.Header.FenceKey.IsNull() || !ok {
		t.Fatalf("fence key %v not in the history", h.Header.FenceKey)
	}
	first := map[int32]bool{}
	for i := range h.Txns {
		tx := &h.Txns[i]
		fence := len(tx.Ops) == 2 && tx.Ops[0].Kind == history.ReadList && tx.Ops[0].Key == fk && tx.Ops[1].Kind == history.Append && tx.Ops[1].Key == fk ||
			tx.Status != history.Committed && len(tx.Ops) == 1 && tx.Ops[0].Kind == history.ReadList && tx.Ops[0].Key == fk
		if len(tx.Ops) == 0 {
			continue
		}
		if !first[tx.Session] {
			first[tx.Session] = true
			if !fence {
				t.Fatalf("session %v's first transaction %v is no fence: %v", h.Sessions[tx.Session], tx.ID, tx.Ops)
			}
		}
		for _, op := range tx.Ops {
			if op.Key == fk && !fence {
				t.Fatalf("transaction %v touches the fence key but is no fence", tx.ID)
			}
		}
	}
}

// TestRunOnlinePostgres: run --online on PostgreSQL, fenced list-append
// with keys that retire, 5,000 transactions (more than the 4,096 the
// online checker's first round waits for). At REPEATABLE READ, checked at
// serializability, write skews are reported while the run goes (before
// the run's summary),
// the exit status is 1, and the history file, checked offline, is
// violated at SER and holds at SI (PostgreSQL's REPEATABLE READ is
// snapshot isolation); every finding names transactions of the file. At
// SERIALIZABLE the online verdict holds, and so does the offline one.
func TestRunOnlinePostgres(t *testing.T) {
	addr := testservice.Postgres(t)
	dir := t.TempDir()
	for _, c := range []struct {
		iso      string
		want     int
		holdsAt  []level.ID
		violates []level.ID
	}{
		{"repeatable-read", ExitViolation, []level.ID{level.SnapshotIsolation}, []level.ID{level.Serializable}},
		{"serializable", ExitHolds, []level.ID{level.Serializable}, nil},
	} {
		t.Run(c.iso, func(t *testing.T) {
			table := testservice.Table()
			dropAfter(t, addr, table)
			out := filepath.Join(dir, c.iso+".jsonl")
			found := filepath.Join(dir, c.iso+"-findings.jsonl")
			code, stdout, stderr := runRun(t, context.Background(), "--db", addr, "--table", table, "--isolation", c.iso, "--level", "ser",
				"--online", "--memory-mb", "256", "--txns", "5000", "--workload", "list-append", "--appends-per-key", "10", "--keys", "30",
				"--fence-every", "20", "--progress", "never", "-o", out, "--online-findings", found)
			if code != c.want {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, c.want, stdout, stderr)
			}
			h := readHistoryFile(t, out)
			checkFenced(t, h)
			for _, id := range c.holdsAt {
				if res, err := check.Run(context.Background(), h, level.Get(id), check.Options{}); err != nil || res.Outcome != check.Satisfied {
					t.Errorf("offline at %s: %v %v %v", id, err, res.Outcome, res.Anomalies)
				}
			}
			for _, id := range c.violates {
				if res, err := check.Run(context.Background(), h, level.Get(id), check.Options{}); err != nil || res.Outcome != check.Violated {
					t.Errorf("offline at %s: %v %v", id, err, res.Outcome)
				}
			}
			lines := onlineFindings(t, found)
			if c.want == ExitHolds {
				if len(lines) != 0 || !strings.Contains(stdout, "serializable holds, checked online") {
					t.Fatalf("%d findings at SERIALIZABLE\nstdout %s", len(lines), stdout)
				}
				return
			}
			ids := map[string]bool{}
			for _, tx := range h.Txns {
				ids[tx.ID.String()] = true
			}
			skews := 0
			for _, l := range lines {
				if l["kind"] == "write-skew" {
					skews++
				}
				for _, x := range l["transactions"].([]any) {
					if s, ok := x.(string); !(ok && s == "init") && !ids[jsonNumber(x)] {
						t.Fatalf("a finding names transaction %v, not in the history: %v", x, l)
					}
				}
			}
			if skews == 0 {
				t.Fatalf("no write skew among %d findings", len(lines))
			}
			summary := strings.Index(stderr, "ran list-append")
			first := strings.Index(stderr, "online: write-skew")
			if first < 0 || summary < 0 || first > summary {
				t.Fatalf("no write skew said before the run's summary (at %d, summary at %d):\n%s", first, summary, stderr)
			}
			if !strings.Contains(stdout, "serializable violated, found online") {
				t.Fatalf("stdout %s", stdout)
			}
		})
	}
}

// jsonNumber renders a transaction id decoded from JSON as the history
// names it.
func jsonNumber(x any) string {
	if f, ok := x.(float64); ok {
		return history.IntValue(int64(f)).String()
	}
	return history.StringValue(x.(string)).String()
}

// TestRunOnlineSQLite: run --online on the embedded SQLite (serializable)
// holds, checked online, with the fences run --online puts in by
// default; the history file holds every transaction and checks offline
// as online. --online with --collector or --report, or --online-findings
// without --online, is refused with exit 2.
func TestRunOnlineSQLite(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "h.jsonl")
	code, stdout, stderr := runRun(t, context.Background(), "--online", "--txns", "5000", "--workload", "list-append", "--appends-per-key", "10",
		"--progress", "never", "-o", out)
	if code != ExitHolds || !strings.Contains(stdout, "serializable holds, checked online") || !strings.Contains(stderr, "history: "+out+" (") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	h := readHistoryFile(t, out)
	checkFenced(t, h)
	if !strings.Contains(h.Header.Source, "fence-every=100") {
		t.Errorf("source %q: want the default fence interval", h.Header.Source)
	}
	if res, err := check.Run(context.Background(), h, level.Get(level.Serializable), check.Options{}); err != nil || res.Outcome != check.Satisfied {
		t.Errorf("offline: %v %v", err, res.Outcome)
	}
	for _, args := range [][]string{
		{"--online", "--collector", "http://127.0.0.1:1"},
		{"--online", "--report", filepath.Join(dir, "r")},
		{"--online-findings", filepath.Join(dir, "f.jsonl")},
		{"--online", "--workload", "range"},
	} {
		code, _, stderr := runRun(t, context.Background(), append(args, "--txns", "10", "-o", filepath.Join(dir, "x.jsonl"))...)
		if code != ExitBadInput {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, stderr)
		}
	}
}
