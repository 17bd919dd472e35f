package polygraph

import (
	"math"

	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
)

// chains answers reachability over a known graph that contains the session
// order, in O(sessions) memory per transaction instead of the n² bits of a
// reachability matrix. Every session's transactions lie on a chain joined
// by so edges, so t reaches u exactly when t reaches some transaction of
// u's session at or before u: it is enough to keep, for every transaction
// and every session, the earliest position in that session it reaches
// (the chain-decomposition technique of reachability indexes; Jagadish,
// TODS 1990). This is what lets the polygraph skip the writer pairs the
// known graph already orders (VeriStrong §6.1.1 prunes them; here they are
// never created) and scale to 100,000 transactions.
type chains struct {
	sess  []int32 // per transaction: its chain, -1 when not on one
	pos   []int32 // per transaction: its position on its chain
	count int     // number of chains
	// first[t*count+s] is the earliest position on chain s that t
	// reaches by a non-empty path (math.MaxInt32 for none).
	first []int32
}

// maxChainCells bounds transactions × sessions (the index's size).
const maxChainCells = 1 << 26

// newChains lays the present transactions on their sessions' chains.
func newChains(h *history.History, present func(history.TxnID) bool) *chains {
	c := &chains{sess: make([]int32, len(h.Txns)), pos: make([]int32, len(h.Txns)), count: len(h.Sessions)}
	next := make([]int32, len(h.Sessions))
	for i := range h.Txns {
		c.sess[i], c.pos[i] = -1, -1
		if present(history.TxnID(i)) {
			s := h.Txns[i].Session
			c.sess[i], c.pos[i] = s, next[s]
			next[s]++
		}
	}
	return c
}

// knownGraph lays the edges between transactions (those from or to the
// initial state are left out) into a graph over n transactions, with a
// topological order of it, or reports false when the edges hold a cycle.
func knownGraph(n int, parts ...[]Edge) (*graph.Graph, []int32, bool) {
	m := 0
	for _, edges := range parts {
		m += len(edges)
	}
	b := graph.NewBuilder(n, m)
	for _, edges := range parts {
		for _, e := range edges {
			if e.From >= 0 && e.To >= 0 {
				b.Add(int32(e.From), int32(e.To), 0, 0)
			}
		}
	}
	g := b.Build()
	order, ok := g.TopoOrder(graph.AllLabels)
	return g, order, ok
}

// compute fills first from an acyclic graph that includes the session
// order, and its topological order. It stops with false (first then
// incomplete) when gd says to.
func (c *chains) compute(g *graph.Graph, order []int32, gd *guard) bool {
	n, k := len(c.sess), c.count
	if cap(c.first) >= n*k {
		c.first = c.first[:n*k]
	} else {
		c.first = make([]int32, n*k)
	}
	for i := range c.first {
		c.first[i] = math.MaxInt32
	}
	for i := len(order) - 1; i >= 0; i-- {
		if gd.step() {
			return false
		}
		v := order[i]
		row := c.first[int(v)*k : int(v)*k+k]
		lo, hi := g.Out(v)
		for e := lo; e < hi; e++ {
			w := g.To(e)
			if s := c.sess[w]; s >= 0 && c.pos[w] < row[s] {
				row[s] = c.pos[w]
			}
			for s, p := range c.first[int(w)*k : int(w)*k+k] {
				if p < row[s] {
					row[s] = p
				}
			}
		}
	}
	return true
}

// reaches reports whether a reaches b by a non-empty path.
func (c *chains) reaches(a, b history.TxnID) bool {
	if a < 0 || b < 0 || c.sess[b] < 0 {
		return false
	}
	return c.first[int(a)*c.count+int(c.sess[b])] <= c.pos[b]
}

// reachedBy returns, for every transaction t and session s, the latest
// position on chain s of a transaction that reaches t (-1 for none): the
// mirror of first, for enumerating the transactions t neither reaches nor
// is reached by. g and order are as for compute. It stops early, with
// the table incomplete, when gd says to.
func (c *chains) reachedBy(g *graph.Graph, order []int32, gd *guard) []int32 {
	n, k := len(c.sess), c.count
	last := make([]int32, n*k)
	for i := range last {
		last[i] = -1
	}
	for _, v := range order {
		if gd.step() {
			break
		}
		row := last[int(v)*k : int(v)*k+k]
		lo, hi := g.Out(v)
		for e := lo; e < hi; e++ {
			wrow := last[int(g.To(e))*k : int(g.To(e))*k+k]
			if s := c.sess[v]; s >= 0 && c.pos[v] > wrow[s] {
				wrow[s] = c.pos[v]
			}
			for s, p := range row {
				if p > wrow[s] {
					wrow[s] = p
				}
			}
		}
	}
	return last
}

// minimal keeps, in place, the transactions of ts (one per chain at most)
// that no other of them reaches: an edge into a dropped one is implied by
// the edge into one that reaches it followed by that path.
func (c *chains) minimal(ts []history.TxnID) []history.TxnID {
	if len(ts) < 2 {
		return ts
	}
	k := c.count
	var buf [64]int32
	least := buf[:0]
	if k > len(buf) {
		least = make([]int32, 0, k)
	}
	least = least[:k]
	for s := range least {
		least[s] = math.MaxInt32
	}
	for _, t := range ts {
		for s, p := range c.first[int(t)*k : int(t)*k+k] {
			least[s] = min(least[s], p)
		}
	}
	out := ts[:0]
	for _, t := range ts {
		if least[c.sess[t]] > c.pos[t] {
			out = append(out, t)
		}
	}
	return out
}
