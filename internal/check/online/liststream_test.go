package online

import (
	"math/rand/v2"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// listStream produces a serial list store's transactions one at a time,
// holding only what is in use: sessions issue transactions of 1–4
// operations (half whole-list reads, half appends of fresh elements) on
// a pool of active keys, each retired (and forgotten) after a number of
// appends and replaced by a fresh key; every session runs a fence first
// and after every fenceEvery of its own transactions. Each transaction
// commits at once, so the stream is serializable.
type listStream struct {
	r             *rand.Rand
	sessions      int
	appendsPerKey int
	fenceEvery    int
	keys          []streamKey
	nextKey       int64
	elem, id      int64
	since         []int
	started       []bool
	fences        []history.Value
}

type streamKey struct {
	name    history.Value
	list    []history.Value
	appends int
}

func newListStream(seed uint64, sessions, active, appendsPerKey, fenceEvery int) *listStream {
	g := &listStream{r: rand.New(rand.NewPCG(seed, 35)), sessions: sessions, appendsPerKey: appendsPerKey, fenceEvery: fenceEvery,
		since: make([]int, sessions), started: make([]bool, sessions)}
	for range active {
		g.keys = append(g.keys, g.fresh())
	}
	return g
}

func (g *listStream) fresh() streamKey {
	g.nextKey++
	return streamKey{name: history.IntValue(g.nextKey)}
}

// next returns the next transaction of a session drawn at random, after
// that session's fence when one is due; keys are interned in src.
func (g *listStream) next(src *history.History) []history.Txn {
	s := g.r.IntN(g.sessions)
	var out []history.Txn
	if g.fenceEvery > 0 && (!g.started[s] || g.since[s] >= g.fenceEvery) {
		g.started[s], g.since[s] = true, 0
		g.id++
		g.elem++
		e := history.IntValue(g.elem)
		fk := src.Key(fenceName)
		out = append(out, history.Txn{ID: history.IntValue(g.id), Session: int32(s),
			Ops: []history.Op{{Kind: history.ReadList, Key: fk, List: slices.Clone(g.fences)}, {Kind: history.Append, Key: fk, Value: e}}})
		g.fences = append(g.fences, e)
	}
	g.since[s]++
	g.id++
	t := history.Txn{ID: history.IntValue(g.id), Session: int32(s)}
	for range 1 + g.r.IntN(4) {
		i := g.r.IntN(len(g.keys))
		k := &g.keys[i]
		if g.r.IntN(2) == 0 {
			t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: src.Key(k.name), List: slices.Clone(k.list)})
			continue
		}
		g.elem++
		e := history.IntValue(g.elem)
		t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: src.Key(k.name), Value: e})
		k.list = append(k.list, e)
		k.appends++
		if k.appends >= g.appendsPerKey {
			g.keys[i] = g.fresh()
		}
	}
	return append(out, t)
}
