package online

import (
	"math/rand/v2"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// fenceName is the fence key of the test histories.
var fenceName = history.StringValue("fence")

// simConfig shapes a simulated list store's history.
type simConfig struct {
	txns, sessions, keys, appendsPerKey int
	// fenceEvery runs a fence as each session's first transaction and
	// after every fenceEvery of its own (0: none).
	fenceEvery int
	// stale is the chance a transaction reads an old snapshot (a bug at
	// SER and SI); abort and unknown the chances of those outcomes.
	stale, abort, unknown float64
	// lag keeps this many committed states for stale reads.
	lag int
}

// simLists simulates a list store running transactions one at a time
// (each commits at once, at the end of the current lists), except that a
// transaction reads an old snapshot with chance c.stale: the history in
// commit order, with fences as the convention says.
func simLists(r *rand.Rand, c simConfig) *history.History {
	h, active, newKey := simStart(c.sessions, c.keys)
	fence := h.Key(fenceName)
	// states holds the last committed states, newest last: each maps a
	// key to its list.
	cur := map[history.KeyID][]history.Value{}
	states := []map[history.KeyID][]history.Value{cur}
	since := make([]int, c.sessions)
	started := make([]bool, c.sessions)
	var elem int64
	snapshot := func() map[history.KeyID][]history.Value {
		if r.Float64() < c.stale && len(states) > 1 {
			return states[r.IntN(len(states))]
		}
		return states[len(states)-1]
	}
	commit := func(t history.Txn, own map[history.KeyID][]history.Value, installed bool) {
		h.Txns = append(h.Txns, t)
		if !installed || len(own) == 0 {
			return
		}
		next := make(map[history.KeyID][]history.Value, len(cur)+len(own))
		for k, l := range cur {
			next[k] = l
		}
		for k, es := range own {
			next[k] = append(slices.Clip(cur[k]), es...)
		}
		cur = next
		states = append(states, cur)
		if len(states) > c.lag+1 {
			states = states[1:]
		}
	}
	for len(h.Txns) < c.txns {
		s := r.IntN(c.sessions)
		t := history.Txn{ID: history.IntValue(int64(len(h.Txns) + 1)), Session: int32(s)}
		if c.fenceEvery > 0 && (!started[s] || since[s] >= c.fenceEvery) {
			started[s], since[s] = true, 0
			snap := snapshot()
			elem++
			e := history.IntValue(elem)
			t.Ops = []history.Op{{Kind: history.ReadList, Key: fence, List: slices.Clone(snap[fence])}, {Kind: history.Append, Key: fence, Value: e}}
			commit(t, map[history.KeyID][]history.Value{fence: {e}}, true)
			continue
		}
		since[s]++
		snap := snapshot()
		own := map[history.KeyID][]history.Value{}
		for range 1 + r.IntN(4) {
			i := r.IntN(len(active))
			k := active[i].id
			if r.IntN(2) == 0 {
				list := append(slices.Clone(snap[k]), own[k]...)
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: k, List: list})
				continue
			}
			elem++
			e := history.IntValue(elem)
			own[k] = append(own[k], e)
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: k, Value: e})
			active[i].appends++
			if c.appendsPerKey > 0 && active[i].appends >= c.appendsPerKey {
				active[i] = newKey()
			}
		}
		installed := true
		switch x := r.Float64(); {
		case x < c.abort:
			t.Status, installed = history.Aborted, false
		case x < c.abort+c.unknown:
			t.Status, installed = history.Unknown, r.IntN(2) == 0
		}
		commit(t, own, installed)
	}
	return h
}

// simKey is a simulated store's active key and its appends so far.
type simKey struct {
	id      history.KeyID
	appends int
}

// simStart returns a simulated store's empty history with its sessions,
// its first active keys, and a function that names a fresh key.
func simStart(sessions, keys int) (*history.History, []simKey, func() simKey) {
	h := history.New()
	h.Header = history.Header{Present: true, Version: 1, UniqueValues: true}
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	nextKey := 0
	newKey := func() simKey {
		nextKey++
		return simKey{id: h.Key(history.IntValue(int64(nextKey)))}
	}
	active := make([]simKey, keys)
	for i := range active {
		active[i] = newKey()
	}
	return h, active, newKey
}

// withFences returns h with fences inserted as the convention says: one
// as each session's first transaction and after every n of its own, each
// reading the fence list as the fences before it in file order left it;
// with chance abort a fence aborts first (its element in no list) and is
// run again, as run does after a serialization failure.
func withFences(r *rand.Rand, h *history.History, n int, abort float64) *history.History {
	out := history.New()
	out.Header = h.Header
	out.Sessions = slices.Clone(h.Sessions)
	for _, k := range h.Keys {
		out.Key(k)
	}
	fence := out.Key(fenceName)
	var list []history.Value
	since := make([]int, len(h.Sessions))
	started := make([]bool, len(h.Sessions))
	next := int64(1 << 40)
	id := int64(1 << 40)
	for _, t := range h.Txns {
		s := t.Session
		if !started[s] || since[s] >= n {
			started[s], since[s] = true, 0
			for abort > 0 && r.Float64() < abort {
				next++
				id++
				out.Txns = append(out.Txns, history.Txn{ID: history.IntValue(id), Session: s, Status: history.Aborted,
					Ops: []history.Op{{Kind: history.ReadList, Key: fence, List: slices.Clone(list)}, {Kind: history.Append, Key: fence, Value: history.IntValue(next)}}})
			}
			next++
			id++
			e := history.IntValue(next)
			out.Txns = append(out.Txns, history.Txn{ID: history.IntValue(id), Session: s,
				Ops: []history.Op{{Kind: history.ReadList, Key: fence, List: slices.Clone(list)}, {Kind: history.Append, Key: fence, Value: e}}})
			list = append(list, e)
		}
		since[s]++
		out.Txns = append(out.Txns, t)
	}
	return out
}

// arrival returns h's transactions in a random order that keeps each
// session's order: sessions take turns at random, a few transactions at
// a time, so some lag far behind others.
func arrival(r *rand.Rand, h *history.History) *history.History {
	out := emptyLike(h)
	per := h.SessionOrder()
	at := make([]int, len(per))
	left := len(h.Txns)
	weights := make([]float64, len(per))
	for i := range weights {
		weights[i] = 0.2 + r.Float64()
	}
	for left > 0 {
		s := r.IntN(len(per))
		if at[s] >= len(per[s]) || r.Float64() > weights[s] {
			continue
		}
		for range 1 + r.IntN(8) {
			if at[s] >= len(per[s]) {
				break
			}
			out.Txns = append(out.Txns, h.Txns[per[s][at[s]]])
			at[s]++
			left--
		}
	}
	return out
}

// emptyLike returns a history with h's header, sessions and keys and no
// transactions.
func emptyLike(h *history.History) *history.History {
	out := history.New()
	out.Header = h.Header
	out.Sessions = h.Sessions
	for _, k := range h.Keys {
		out.Key(k)
	}
	return out
}
