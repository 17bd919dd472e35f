package online

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestStreamProbe (ONLINE_PROBE=n) streams n generated transactions with fences and prints the checker's stats.
func TestStreamProbe(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ONLINE_PROBE"))
	if n == 0 {
		t.Skip("ONLINE_PROBE unset")
	}
	f := fenceName
	c, err := New(Config{Level: level.Get(level.Serializable), FenceKey: &f})
	if err != nil {
		t.Fatal(err)
	}
	var batch []history.Txn
	var src *history.History
	fenceEvery := 50
	since := map[int32]int{}
	started := map[int32]bool{}
	var flist []history.Value
	var fid, fel int64 = 1 << 40, 1 << 40
	start := time.Now()
	src = history.New()
	fk := src.Key(fenceName)
	emit := func(h *history.History, tx *history.Txn) error {
		for len(src.Sessions) < len(h.Sessions) {
			src.Sessions = append(src.Sessions, h.Sessions[len(src.Sessions)])
		}
		s := tx.Session
		if !started[s] || since[s] >= fenceEvery {
			started[s], since[s] = true, 0
			fid++
			fel++
			e := history.IntValue(fel)
			batch = append(batch, history.Txn{ID: history.IntValue(fid), Session: s, Ops: []history.Op{{Kind: history.ReadList, Key: fk, List: append([]history.Value(nil), flist...)}, {Kind: history.Append, Key: fk, Value: e}}})
			flist = append(flist, e)
		}
		since[s]++
		cp := *tx
		cp.Ops = append([]history.Op(nil), tx.Ops...)
		for j := range cp.Ops {
			cp.Ops[j].List = append([]history.Value(nil), cp.Ops[j].List...)
			cp.Ops[j].Key = src.Key(h.Keys[cp.Ops[j].Key])
		}
		batch = append(batch, cp)
		if len(batch) >= 256 {
			if _, err := c.Add(src, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		return nil
	}
	_, _, err = gen.GenerateListAppend(gen.ListAppendConfig{Txns: n, Sessions: 10, ActiveKeys: 10, AppendsPerKey: 100, MaxOps: 4, ReadRatio: 0.5, Seed: 1, Emit: emit})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add(src, batch); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v in %v", c.Stats(), time.Since(start))
	res, err := c.Drain(context.Background())
	t.Logf("%s %s %v", res.Outcome, res.Reason, err)
	for i, f := range res.Findings {
		if i < 3 {
			t.Logf("%+v %v", f.Anomaly, names(f))
		}
	}
}
