package runner

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/db"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/internal/workload"
)

// newPlan draws a plan or fails the test.
func newPlan(t testing.TB, c workload.PlanConfig, seed uint64) *workload.Plan {
	t.Helper()
	if c.ReadRatio == 0 {
		c.ReadRatio = -1
	}
	p, err := workload.NewPlan(c, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sqlite opens an in-memory SQLite database with a fresh table.
func sqlite(t testing.TB) db.Database {
	t.Helper()
	return testservice.Open(t, "sqlite::memory:")
}

// runRecorded runs c with the history streamed to a buffer, and checks
// that the stream reads back as the history kept in memory.
func runRecorded(t testing.TB, ctx context.Context, c Config) (*Result, *history.History) {
	t.Helper()
	var out bytes.Buffer
	c.Out = &out
	res, err := Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := native.Read(bytes.NewReader(out.Bytes()), "stream")
	if err != nil {
		t.Fatalf("the streamed history does not read back: %v", err)
	}
	if len(back.Txns) != len(res.History.Txns) || back.Header.UniqueValues != res.History.Header.UniqueValues {
		t.Fatalf("streamed %d transactions, kept %d", len(back.Txns), len(res.History.Txns))
	}
	checkSessionOrder(t, back)
	return res, back
}

// checkSessionOrder checks that each session's transactions appear in the
// file in the order they ran: one ends before the next begins.
func checkSessionOrder(t testing.TB, h *history.History) {
	t.Helper()
	for s, txns := range h.SessionOrder() {
		for i := 1; i < len(txns); i++ {
			a, b := &h.Txns[txns[i-1]], &h.Txns[txns[i]]
			if !a.HasTime || !b.HasTime || a.End > b.Begin || a.Begin > a.End {
				t.Fatalf("session %s: transaction %s [%d, %d] and then %s [%d, %d]", h.Sessions[s], a.ID, a.Begin, a.End, b.ID, b.Begin, b.End)
			}
		}
	}
}

// verdict checks h at level name, "LEVEL" (the checker auto picks) or
// "LEVEL@CHECKER".
func verdict(t testing.TB, h *history.History, name string) check.Result {
	t.Helper()
	name, checker, _ := strings.Cut(name, "@")
	l, err := level.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := check.Run(ctx, h, l, check.Options{Checker: checker})
	if err != nil {
		t.Fatalf("checking %s: %v", name, err)
	}
	return res
}
