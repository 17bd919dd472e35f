package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/serve"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestBlackBoxHeapTarget: while the live heap is above HeapTarget, each
// batch after a collection lowers the checker's bound by a quarter, down
// to a quarter of MemoryBytes; once the heap has room, the bound rises
// back to MemoryBytes. The verdict stays the offline checker's.
func TestBlackBoxHeapTarget(t *testing.T) {
	h, _, err := gen.GenerateListAppend(gen.ListAppendConfig{Txns: 3000, Sessions: 4, ActiveKeys: 6, AppendsPerKey: 10, MaxOps: 4, ReadRatio: 0.5,
		Dist: workload.Uniform, Mode: gen.SnapshotIsolation, Seed: 9, FenceEvery: 5})
	if err != nil {
		t.Fatal(err)
	}
	off, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const mem = 64 << 20
	var target atomic.Int64
	target.Store(1) // any heap is above it
	url, srv, stop := blackBoxServer(t, serve.BlackBoxConfig{Level: level.Get(level.SnapshotIsolation), MemoryBytes: mem, HeapTarget: target.Load})
	bound := func() int64 {
		srv.Sync()
		var st struct {
			BlackBox *serve.BlackBoxState `json:"black_box"`
		}
		if err := json.Unmarshal([]byte(get(t, url+"/v1/state")), &st); err != nil || st.BlackBox == nil {
			t.Fatalf("state: %v", err)
		}
		return st.BlackBox.Bound
	}
	order := shuffled(h, 3)
	send := func(from, to int) {
		for i := from; i < to; i += 50 {
			runtime.GC() // a fresh measurement of the live heap for the next batch
			if code, msg := post(t, url+"?stream=s&keyspace=k", body(t, h, order[i:min(i+50, to)])); code != http.StatusAccepted {
				t.Fatalf("batch at %d: %d %s", i, code, msg)
			}
			srv.Sync()
		}
	}
	send(0, len(order)/2)
	if b := bound(); b != mem/4 {
		t.Errorf("bound %d after %d batches above the heap target, want %d", b, len(order)/100, mem/4)
	}
	target.Store(1 << 62) // room
	send(len(order)/2, len(order))
	if b := bound(); b != mem {
		t.Errorf("bound %d after %d batches with room, want %d", b, len(order)/100, mem)
	}
	sum, lines := stop()
	if got := sum.Violations > 0; got != (off.Outcome == check.Violated) {
		t.Errorf("online %d violations (%d lines), offline %s", sum.Violations, len(lines), off.Outcome)
	}
}
