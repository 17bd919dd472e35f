package inventory

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/isoscope/isoscope"
	"github.com/isoscope/isoscope/internal/testservice"
	"github.com/isoscope/isoscope/isoscopetest"
)

// load runs clerks concurrently, each making reservations of 1 to 3 units
// of one of two items, against a new shop at level, and returns the
// audited history, and by how much each item was oversold.
func load(t *testing.T, level sql.IsolationLevel, retries, clerks, reservations int, seed uint64) (*isoscope.History, map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := sql.Open("pgx", testservice.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(clerks + 1)
	stock := map[string]int{"lamp": 10_000, "chair": 10_000}
	shop, err := Open(ctx, db, Config{Prefix: testservice.Table(), Level: level, Retries: retries}, stock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := shop.Drop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	initial, err := shop.Initial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := isoscope.NewRecorder(isoscope.RecorderOptions{Initial: initial, Source: "examples/inventory, PostgreSQL " + level.String()})
	if err != nil {
		t.Fatal(err)
	}
	shop.Audit(rec)
	var wg sync.WaitGroup
	for c := range clerks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clerk := shop.Clerk(fmt.Sprintf("clerk-%d", c))
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			for n := range reservations {
				item := []string{"lamp", "chair"}[rng.IntN(2)]
				if _, err := clerk.Reserve(ctx, fmt.Sprintf("customer-%d-%d", c, n), item, 1+rng.IntN(3)); err != nil {
					t.Errorf("clerk %d: %v", c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	h, err := rec.History()
	if err != nil {
		t.Fatal(err)
	}
	oversold, err := shop.Oversold(ctx, stock)
	if err != nil {
		t.Fatal(err)
	}
	return h, oversold
}

// TestReadCommittedLosesReservations: at READ COMMITTED the shop loses
// reservations — two clerks read the same stock and both write it back
// less their own quantity — and isoscope finds it from the audit alone: a
// lost update, which cursor stability (read committed without lost
// updates, the weakest level that forbids them) proscribes, while the
// history is read committed, as PostgreSQL promises. Whether a round interleaves two
// reservations that way is up to the scheduler, so the test runs rounds
// until one does (it fails if none of 10 does); in every round, isoscope
// finds the lost update exactly when the stock is oversold.
func TestReadCommittedLosesReservations(t *testing.T) {
	for round := range 10 {
		h, oversold := load(t, sql.LevelReadCommitted, 0, 8, 15, uint64(round))
		isoscopetest.RequireLevel(t, h, isoscope.ReadCommitted)
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.CursorStability})
		if err != nil {
			t.Fatal(err)
		}
		lost := res.Outcome == isoscope.Violated
		for _, a := range res.Anomalies {
			if a.Kind != isoscope.LostUpdate {
				t.Fatalf("round %d: a %s at READ COMMITTED, where only lost updates are expected: %s", round, a.Kind, a.Explanation)
			}
		}
		if lost != (len(oversold) > 0) {
			t.Fatalf("round %d: isoscope found %d lost updates, and the stock is oversold by %v", round, len(res.Anomalies), oversold)
		}
		if lost {
			t.Logf("round %d: %d transactions; oversold %v; %d lost updates, the first: %s",
				round, h.Len(), oversold, len(res.Anomalies), res.Anomalies[0].Explanation)
			return
		}
	}
	t.Fatal("no round of READ COMMITTED lost a reservation")
}

// TestSerializableKeepsReservations: at SERIALIZABLE, with reservations
// that fail to serialize tried again, the same load oversells nothing and
// its history is serializable, aborted attempts included.
func TestSerializableKeepsReservations(t *testing.T) {
	h, oversold := load(t, sql.LevelSerializable, 100, 8, 15, 1)
	if len(oversold) > 0 {
		t.Fatalf("oversold at SERIALIZABLE: %v", oversold)
	}
	isoscopetest.RequireLevel(t, h, isoscope.Serializable)
	t.Logf("%d transactions, %d aborted and retried", h.Len(), h.Stats().Aborted)
}
