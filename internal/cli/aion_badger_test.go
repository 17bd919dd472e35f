package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestAionAgreesOnBadger: on histories from a real store with real
// timestamps — Badger, which is not snapshot isolation (concurrent blind
// writers of a key both commit) — Aion, fed the committed and aborted
// transactions in shuffled batches, finds exactly what Chronos finds, for
// the key-value and list-append workloads, at SI and SER.
func TestAionAgreesOnBadger(t *testing.T) {
	violations := 0
	for _, w := range []string{"mt", "general", "blindw", "list-append"} {
		file := filepath.Join(t.TempDir(), "run.jsonl")
		code, out, errs := runRun(t, context.Background(), "--db", "badger::memory:", "--workload", w, "--level", "si",
			"--sessions", "8", "--txns", "600", "--keys", "12", "--seed", "5", "-o", file)
		if code != ExitHolds && code != ExitViolation {
			t.Fatalf("%s: exit %d\n%s\n%s", w, code, out, errs)
		}
		h := readHistoryFile(t, file)
		for _, ser := range []bool{false, true} {
			id := level.SnapshotIsolation
			if ser {
				id = level.Serializable
			}
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "chronos"})
			if err != nil {
				t.Fatalf("%s: %v", w, err)
			}
			var want []string
			for i := range res.Anomalies {
				want = append(want, finding(h, &res.Anomalies[i]))
			}
			slices.Sort(want)

			c, err := aion.New(aion.Config{Serializable: ser, Timeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			// A random merge of the sessions: out of timestamp order,
			// each session's transactions in order (the session order
			// is the arrival order).
			var queues [][]history.TxnID
			for _, txns := range h.SessionOrder() {
				queues = append(queues, slices.Clone(txns))
			}
			rnd := rand.New(rand.NewPCG(1, 2))
			var batch []history.Txn
			for len(queues) > 0 {
				q := rnd.IntN(len(queues))
				batch = append(batch, h.Txns[queues[q][0]])
				if queues[q] = queues[q][1:]; len(queues[q]) == 0 {
					queues = slices.Delete(queues, q, q+1)
				}
				if len(batch) == 40 || len(queues) == 0 {
					if err := c.Add(h, batch); err != nil {
						t.Fatalf("%s: %v", w, err)
					}
					batch = batch[:0]
				}
			}
			if err := c.Finish(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range c.Take() {
				got = append(got, finding(v.History, &v.Anomaly))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%s ser=%v:\nchronos %d: %s\naion    %d: %s", w, ser, len(want), strings.Join(want, "\n  "), len(got), strings.Join(got, "\n  "))
			}
			t.Logf("%s ser=%v: %d findings agree", w, ser, len(got))
			violations += len(got)
		}
	}
	if violations == 0 {
		t.Fatal("no findings: Badger's blind-write race did not show")
	}
}

// finding renders a finding by input ids, for comparison across histories.
func finding(h *history.History, a *anomaly.Anomaly) string {
	names := make([]string, len(a.Txns))
	for i, t := range a.Txns {
		names[i] = h.TxnName(t)
	}
	return fmt.Sprintf("%s/%s %s key=%s", a.Kind, a.Phenomenon, strings.Join(names, ","), h.KeyName(a.Key))
}
