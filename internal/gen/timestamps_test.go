package gen

import (
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// checkTimestamps: every transaction has a start_ts, exactly the committed
// ones a commit_ts above it; all timestamps are distinct multiples of
// TimestampStep; a snapshot-isolation history's file order (end order) is
// commit_ts order among committed transactions; a serial one's starts
// follow the previous commit.
func checkTimestamps(t *testing.T, name string, h *history.History, serial bool) {
	t.Helper()
	seen := map[uint64]bool{}
	var lastCommit uint64
	for i := range h.Txns {
		tx := &h.Txns[i]
		if !tx.HasStartTS || tx.HasCommitTS != (tx.Status == history.Committed) {
			t.Fatalf("%s: transaction %d: start %v commit %v status %s", name, i+1, tx.HasStartTS, tx.HasCommitTS, tx.Status)
		}
		stamps := []uint64{tx.StartTS}
		if tx.HasCommitTS {
			stamps = append(stamps, tx.CommitTS)
			if tx.CommitTS <= tx.StartTS || tx.CommitTS <= lastCommit {
				t.Fatalf("%s: transaction %d: start %d commit %d after a commit at %d", name, i+1, tx.StartTS, tx.CommitTS, lastCommit)
			}
			if serial && tx.StartTS <= lastCommit {
				t.Fatalf("%s: serial transaction %d starts at %d before the last commit %d", name, i+1, tx.StartTS, lastCommit)
			}
			lastCommit = tx.CommitTS
		}
		for _, s := range stamps {
			if s%TimestampStep != 0 || seen[s] {
				t.Fatalf("%s: timestamp %d repeats or is off the step", name, s)
			}
			seen[s] = true
		}
	}
}

func TestTimestamps(t *testing.T) {
	for _, m := range []Mode{Serial, SnapshotIsolation} {
		h, _ := generate(t, Config{Txns: 3000, Sessions: 8, Keys: 50, Dist: workload.Zipfian, Mode: m, ReadOnlyRatio: 0.2, AbortRatio: 0.1, Seed: 4, Timestamps: true})
		checkTimestamps(t, "mt/"+m.String(), h, m == Serial)
		r, err := GenerateRange(RangeConfig{Workload: RandomBench, Mode: m, Txns: 2000, Sessions: 8, Keys: 50, Seed: 4, Timestamps: true})
		if err != nil {
			t.Fatal(err)
		}
		checkTimestamps(t, "randombench/"+m.String(), r, m == Serial)
	}
	g, err := GenerateGeneral(GeneralConfig{Txns: 2000, Sessions: 4, Keys: 50, Ops: 8, ReadRatio: 0.5, Seed: 4, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	checkTimestamps(t, "general", g, true)
	// Without the option, no timestamps; with it, nothing else changes.
	off, _ := generate(t, Config{Txns: 500, Sessions: 4, Keys: 10, Mode: SnapshotIsolation, Seed: 2})
	on, _ := generate(t, Config{Txns: 500, Sessions: 4, Keys: 10, Mode: SnapshotIsolation, Seed: 2, Timestamps: true})
	for i := range off.Txns {
		a, b := off.Txns[i], on.Txns[i]
		if a.HasStartTS || a.HasCommitTS || a.Begin != b.Begin || a.Status != b.Status || len(a.Ops) != len(b.Ops) {
			t.Fatalf("transaction %d differs beyond its timestamps", i+1)
		}
	}
}

func TestInjectTimestampFaults(t *testing.T) {
	h, _ := generate(t, Config{Txns: 2000, Sessions: 8, Keys: 30, Dist: workload.Zipfian, Mode: SnapshotIsolation, Seed: 9, Timestamps: true})
	before := make([]history.Txn, len(h.Txns))
	copy(before, h.Txns)
	planted, err := InjectTimestampFaults(h, EarlyCommit, 5, 1)
	if err != nil || len(planted) != 5 {
		t.Fatalf("%d planted, %v", len(planted), err)
	}
	for _, p := range planted {
		w, r := &h.Txns[p.Txns[0]], &h.Txns[p.Txns[1]]
		if !(w.CommitTS < r.StartTS) || w.CommitTS == before[p.Txns[0]].CommitTS || w.StartTS > w.CommitTS {
			t.Errorf("early commit %v: writer %d-%d (was %d), reader starts %d", p.Txns, w.StartTS, w.CommitTS, before[p.Txns[0]].CommitTS, r.StartTS)
		}
	}
	planted, err = InjectTimestampFaults(h, Skew, 5, 2)
	if err != nil || len(planted) != 5 {
		t.Fatalf("%d planted, %v", len(planted), err)
	}
	for _, p := range planted {
		w, r := &h.Txns[p.Txns[0]], &h.Txns[p.Txns[1]]
		if !(r.CommitTS < w.CommitTS) || r.StartTS > r.CommitTS {
			t.Errorf("skew %v: writer commits %d, reader %d-%d", p.Txns, w.CommitTS, r.StartTS, r.CommitTS)
		}
	}
	seen := map[uint64]bool{}
	for i := range h.Txns {
		for _, s := range []uint64{h.Txns[i].StartTS, h.Txns[i].CommitTS} {
			if s != 0 && seen[s] {
				t.Fatalf("timestamp %d repeats after the faults", s)
			}
			seen[s] = true
		}
	}
	if _, err := InjectTimestampFaults(h, Skew, -1, 1); err == nil {
		t.Error("a negative count was accepted")
	}
	if _, err := InjectTimestampFaults(h, TSFault(9), 1, 1); err == nil {
		t.Error("an unknown fault was accepted")
	}
	plain, _ := generate(t, Config{Txns: 10, Sessions: 2, Keys: 3, Seed: 1})
	if _, err := InjectTimestampFaults(plain, Skew, 1, 1); err == nil {
		t.Error("a history without timestamps was accepted")
	}
	if _, err := ParseTSFault("clock"); err == nil {
		t.Error("an unknown fault name was accepted")
	}
}
