package polygraph

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// TestChainsMinimal: on random acyclic graphs over transactions in
// sessions, the transactions chains.minimal keeps of a set with one per
// session are exactly those no other of the set reaches, reachability
// computed by a depth-first search of the graph itself.
func TestChainsMinimal(t *testing.T) {
	dropped := 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 11))
		n, k := 2+r.IntN(60), 1+r.IntN(8)
		h := &history.History{Txns: make([]history.Txn, n), Sessions: make([]history.Value, k)}
		for i := range h.Txns {
			h.Txns[i].Session = int32(r.IntN(k))
		}
		// Session order between consecutive transactions of a session, and
		// random edges forward in id order: acyclic.
		var edges []Edge
		last := make([]int, k)
		for s := range last {
			last[s] = -1
		}
		for i := range h.Txns {
			s := h.Txns[i].Session
			if last[s] >= 0 {
				edges = append(edges, Edge{From: history.TxnID(last[s]), To: history.TxnID(i), Dep: anomaly.SO})
			}
			last[s] = i
		}
		for range r.IntN(2 * n) {
			a, b := r.IntN(n), r.IntN(n)
			if a != b {
				edges = append(edges, Edge{From: history.TxnID(min(a, b)), To: history.TxnID(max(a, b)), Dep: anomaly.WR})
			}
		}
		g, order, ok := knownGraph(n, edges)
		if !ok {
			t.Fatalf("seed %d: the graph is cyclic", seed)
		}
		c := newChains(h, func(history.TxnID) bool { return true })
		if !c.compute(g, order, newGuard(context.Background(), 0)) {
			t.Fatalf("seed %d: compute stopped", seed)
		}
		reaches := func(a, b history.TxnID) bool {
			seen := make([]bool, n)
			stack := []int32{int32(a)}
			for len(stack) > 0 {
				v := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				lo, hi := g.Out(v)
				for e := lo; e < hi; e++ {
					w := g.To(e)
					if w == int32(b) {
						return true
					}
					if !seen[w] {
						seen[w] = true
						stack = append(stack, w)
					}
				}
			}
			return false
		}
		for range 20 {
			var ts []history.TxnID
			for s := range k {
				var of []history.TxnID
				for i := range h.Txns {
					if h.Txns[i].Session == int32(s) {
						of = append(of, history.TxnID(i))
					}
				}
				if len(of) > 0 && r.IntN(4) > 0 {
					ts = append(ts, of[r.IntN(len(of))])
				}
			}
			var want []history.TxnID
			for _, x := range ts {
				if !slices.ContainsFunc(ts, func(y history.TxnID) bool { return y != x && reaches(y, x) }) {
					want = append(want, x)
				}
			}
			got := c.minimal(slices.Clone(ts))
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d: minimal of %v = %v, want %v (edges %v)", seed, ts, got, want, edges)
			}
			dropped += len(ts) - len(got)
		}
	}
	if dropped == 0 {
		t.Error("no transaction was dropped: the test does not exercise minimal")
	}
}
