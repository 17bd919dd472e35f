package polygraph

import (
	"context"
	"errors"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestBuildStopsWithItsContext: building gives up with the context's error
// once it ends — an interrupted check of a large history must not go on
// reading candidates (it did, ignoring SIGTERM, on 100,000 transactions
// with repeated values) — and builds as before with a live one.
func TestBuildStopsWithItsContext(t *testing.T) {
	h := history.New()
	x := h.Key(history.IntValue(0))
	h.Sessions = append(h.Sessions, history.IntValue(0))
	h.Txns = append(h.Txns,
		history.Txn{ID: history.IntValue(1), Ops: []history.Op{{Kind: history.Write, Key: x, Value: history.IntValue(1)}}},
		history.Txn{ID: history.IntValue(2), Ops: []history.Op{{Kind: history.Read, Key: x, Value: history.IntValue(1)}}})
	ix := history.NewIndex(h)
	l := level.Get(level.ReadCommitted)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := build(ctx, ix, l, false, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled build: %v", err)
	}
	p, err := build(context.Background(), ix, l, false, 0)
	if err != nil || len(p.Reads) != 1 {
		t.Fatalf("a build: %v, %d reads", err, len(p.Reads))
	}
}
