package aion

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/history"
)

// TestReadersStaySorted: string ids whose snapshots tie (one start_ts)
// order by their text, which a reader finds only through its pending
// transaction. Batches expire between arrivals, leaving final readers
// amid pending ones; every key's pending readers must stay in snapshot
// order, or a late write re-checks the wrong ones. It fails when
// readerAfter does not drop the final readers it cannot place.
func TestReadersStaySorted(t *testing.T) {
	for seed := range uint64(200) {
		rnd := rand.New(rand.NewPCG(seed, 5))
		now := time.Unix(0, 0)
		c, err := New(Config{Timeout: time.Second, Clock: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		h := history.New()
		h.Sessions = append(h.Sessions, history.IntValue(0))
		h.Key(history.IntValue(0))
		h.Key(history.IntValue(1))
		ids := rnd.Perm(400)
		for b := range 40 {
			var batch []history.Txn
			for _, id := range ids[b*10 : b*10+10] {
				batch = append(batch, history.Txn{ID: history.StringValue(fmt.Sprintf("t%03d", id)), StartTS: 10, CommitTS: uint64(1000 + id),
					HasStartTS: true, HasCommitTS: true, Ops: []history.Op{{Kind: history.Read, Key: history.KeyID(rnd.IntN(2))}}})
			}
			if err := c.Add(h, batch); err != nil {
				t.Fatal(err)
			}
			if rnd.IntN(3) == 0 {
				now = now.Add(2 * time.Second) // what arrived so far is final
			}
			for k := range c.ks {
				var prev *txn
				for i := range c.ks[k].readers {
					u := c.pending(c.ks[k].readers[i].seq)
					if u == nil {
						continue
					}
					if prev != nil && strings.Compare(prev.id.S, u.id.S) > 0 {
						t.Fatalf("seed %d batch %d: key %d's pending readers out of order: %s before %s", seed, b, k, prev.id.S, u.id.S)
					}
					prev = u
				}
			}
		}
	}
}
