package online

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// arrivalNear returns h's transactions in a random order that keeps each
// session's order and takes each at most lag places after its place in
// h (as a service receives a run's transactions: each session's as they
// finish, the sessions' interleaved).
func arrivalNear(r *rand.Rand, h *history.History, lag int) *history.History {
	out := emptyLike(h)
	per := h.SessionOrder()
	at := make([]int, len(per))
	var ready []int
	for len(out.Txns) < len(h.Txns) {
		oldest := len(h.Txns)
		for s, ts := range per {
			if at[s] < len(ts) {
				oldest = min(oldest, int(ts[at[s]]))
			}
		}
		ready = ready[:0]
		for s, ts := range per {
			if at[s] < len(ts) && int(ts[at[s]]) < oldest+lag {
				ready = append(ready, s)
			}
		}
		s := ready[r.IntN(len(ready))]
		out.Txns = append(out.Txns, h.Txns[per[s][at[s]]])
		at[s]++
	}
	return out
}

// TestWriteSkewsDoNotHoldTheWindow streams a long history of a simulated
// snapshot-isolation store with cold keys at SER, where write skews come
// every round, and requires the held window to stay within a bound that
// does not grow with the stream: neither a finding's transactions nor a
// cold key's unseen appends may hold everything after them.
func TestWriteSkewsDoNotHoldTheWindow(t *testing.T) {
	txns := 60000
	if testing.Short() {
		txns = 15000
	}
	r := rand.New(rand.NewPCG(7, 39))
	h := arrivalNear(r, simSI(r, siConfig{txns: txns, sessions: 8, keys: 40, appendsPerKey: 20, fenceEvery: 20, skew: true}), 64)
	f := fenceName
	c, err := New(Config{Level: level.Get(level.Serializable), FenceKey: &f})
	if err != nil {
		t.Fatal(err)
	}
	const roundMin = 512
	c.st.roundMin, c.st.nextRound = roundMin, roundMin
	maxHeld := 0
	findings := 0
	for i := 0; i < len(h.Txns); i += 16 {
		got, err := c.Add(h, h.Txns[i:min(i+16, len(h.Txns))])
		if err != nil {
			t.Fatal(err)
		}
		findings += len(got)
		maxHeld = max(maxHeld, int(c.Stats().Held))
	}
	st := c.Stats()
	t.Logf("%d transactions, %d findings online, %d rounds, %d forgotten, at most %d held", st.Arrived, findings, st.Rounds, st.Forgotten, maxHeld)
	if findings < 10 {
		t.Fatalf("%d findings online: the history does not make write skews as it goes", findings)
	}
	if maxHeld > 16*roundMin {
		t.Fatalf("the window grew to %d transactions of %d (bound %d)", maxHeld, st.Arrived, 16*roundMin)
	}
}
