package evidence

import (
	"maps"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// knownGraph is the graph of the dependencies the history shows without
// a choice: wr and pwr from reads that exactly one writer explains, the
// known orders of every key's writers (ww), session order where the level
// or a module has it, and — at levels where every cycle is forbidden —
// the anti-dependencies those give. Real time is checked at the end of a
// search, not stored.
type knownGraph struct {
	out [][]anomaly.Step
	// readers are the transactions that read a writer's version of a key
	// (it exactly explaining their read).
	readers map[wkey][]history.TxnID
	// derived are the orders of two writers of a key that saturate
	// inferred (the other order closes a cycle of known dependencies),
	// each with that path; saturated says saturate ran.
	derived   map[pairKey][]anomaly.Step
	saturated bool
}

// pairKey is an ordered pair of writers of a key.
type pairKey struct {
	a, b history.TxnID
	k    history.KeyID
}

// The bounds of saturate: the histories it runs on, the writers of a key
// it looks at, its rounds and the edges its searches may visit in all.
const (
	maxSaturateTxns    = 20000
	maxSaturateWriters = 64
	maxSaturateRounds  = 4
	maxSaturateWork    = 1 << 25
)

type wkey struct {
	t history.TxnID
	k history.KeyID
}

// maxInitAnti bounds the rw edges a read of the initial state adds: one
// to each writer of the key, when it has at most this many.
const maxInitAnti = 64

// maxSearch bounds the edges one search for a known path looks at.
const maxSearch = 1 << 20

// graph builds the known graph on first need.
func (f *Finder) graph() *knownGraph {
	if f.known != nil {
		return f.known
	}
	h := f.h
	var rest []history.KeyID
	for k := range h.Keys {
		if f.keys[history.KeyID(k)] == nil {
			rest = append(rest, history.KeyID(k))
		}
	}
	if len(rest) > 0 {
		f.index(rest)
	}
	g := &knownGraph{out: make([][]anomaly.Step, len(h.Txns)), readers: map[wkey][]history.TxnID{}}
	add := func(s anomaly.Step) {
		if s.From >= 0 && s.From != s.To {
			g.out[s.From] = append(g.out[s.From], s)
		}
	}
	// In the order of the keys and the writers, not of the maps: the
	// paths the graph's searches find, and so the evidence, must not
	// change from run to run.
	keys := slices.Sorted(maps.Keys(f.keys))
	for _, k := range keys {
		kf := f.keys[k]
		for _, from := range slices.Sorted(maps.Keys(kf.succ)) {
			for _, l := range kf.succ[from] {
				add(anomaly.Step{From: l.From, To: l.To, Dep: anomaly.WW, Key: k})
			}
		}
	}
	anti := func(r, w history.TxnID, kf *keyFacts, dep anomaly.Dep) {
		if !f.anti {
			return
		}
		if w == history.Init {
			if len(kf.writers) <= maxInitAnti {
				for _, x := range kf.writers {
					add(anomaly.Step{From: r, To: x, Dep: dep, Key: kf.key})
				}
			}
			return
		}
		for _, l := range kf.succ[w] {
			add(anomaly.Step{From: r, To: l.To, Dep: dep, Key: kf.key})
		}
	}
	for i := range h.Txns {
		r := history.TxnID(i)
		if !f.effective(r) {
			continue
		}
		f.ix.Observations(r, func(o history.Observation) {
			kf := f.keys[o.Key]
			if o.Own >= 0 || kf == nil || kf.lists {
				return
			}
			src := f.sources(r, o)
			if len(src) != 1 {
				return
			}
			rd, ad := anomaly.WR, anomaly.RW
			if o.Pred {
				rd, ad = anomaly.PWR, anomaly.PRW
			}
			if w := src[0]; w != history.Init {
				add(anomaly.Step{From: w, To: r, Dep: rd, Key: o.Key})
				if !o.Pred {
					g.readers[wkey{w, o.Key}] = append(g.readers[wkey{w, o.Key}], r)
				}
			}
			anti(r, src[0], kf, ad)
		})
	}
	for _, k := range keys {
		kf := f.keys[k]
		if !kf.lists {
			continue
		}
		for _, rd := range kf.reads {
			list := h.Txns[rd.Txn].Ops[rd.Op].List
			w := history.Init
			for j := len(list) - 1; j >= 0; j-- {
				if a, ok := kf.elems[list[j]]; ok && a.Txn != rd.Txn && f.effective(a.Txn) {
					w = a.Txn
					break
				}
			}
			if w != history.Init {
				add(anomaly.Step{From: w, To: rd.Txn, Dep: anomaly.WR, Key: k})
				g.readers[wkey{w, k}] = append(g.readers[wkey{w, k}], rd.Txn)
			}
			anti(rd.Txn, w, kf, anomaly.RW)
		}
	}
	if f.sessions {
		last := map[int32]history.TxnID{}
		for i := range h.Txns {
			t := history.TxnID(i)
			if !f.effective(t) {
				continue
			}
			s := h.Txns[i].Session
			if p, ok := last[s]; ok {
				add(anomaly.Step{From: p, To: t, Dep: anomaly.SO, Key: history.NoKey})
			}
			last[s] = t
		}
	}
	for i := range g.out {
		slices.SortStableFunc(g.out[i], func(x, y anomaly.Step) int { return int(x.To) - int(y.To) })
	}
	f.known = g
	return g
}

// before reports whether real time (the level's, or a module's) or the
// start-order module's timestamps put a before b.
func (f *Finder) before(a, b history.TxnID) (anomaly.Step, bool) {
	x, y := &f.h.Txns[a], &f.h.Txns[b]
	switch {
	case f.realTime && x.HasTime && y.HasTime && x.End < y.Begin,
		f.starts && x.HasCommitTS && y.HasStartTS && x.CommitTS < y.StartTS:
		return anomaly.Step{From: a, To: b, Dep: anomaly.RT, Key: history.NoKey}, true
	}
	return anomaly.Step{}, false
}

// infer looks for known dependencies that put a's version of key k
// before b's: a path from a to b (b's version first would close it into
// a cycle), or to a transaction that read b's version (b first would make
// that reader anti-depend on a, closing a cycle with one
// anti-dependency). It returns the path, ending, in the second case, with
// the wr step from b to that reader.
func (f *Finder) infer(k history.KeyID, a, b history.TxnID) ([]anomaly.Step, bool) {
	if !f.valid(a) || !f.valid(b) {
		return nil, false
	}
	g := f.graph()
	if path, ok := f.search(g, k, a, b); ok {
		return path, true
	}
	if !g.saturated {
		f.saturate(g)
		if path, ok := g.derived[pairKey{a, b, k}]; ok {
			return path, true
		}
		return f.search(g, k, a, b)
	}
	return nil, false
}

// saturate infers, round after round as the solver's pruning does, the
// orders of writers of each key that the known graph forces (the other
// order would close a cycle of known dependencies), adds them to it as
// ww edges, and records the path that forces each. It is bounded
// (maxSaturate…): what it leaves out, infer cannot show.
func (f *Finder) saturate(g *knownGraph) {
	g.saturated = true
	g.derived = map[pairKey][]anomaly.Step{}
	if len(f.h.Txns) > maxSaturateTxns {
		return
	}
	keys := make([]history.KeyID, 0, len(f.keys))
	for k, kf := range f.keys {
		if len(kf.writers) >= 2 && len(kf.writers) <= maxSaturateWriters {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	work := 0
	for round := 0; round < maxSaturateRounds; round++ {
		changed := false
		for _, k := range keys {
			kf := f.keys[k]
			for _, a := range kf.writers {
				for _, b := range kf.writers {
					if a == b || work > maxSaturateWork {
						continue
					}
					if _, ok := g.derived[pairKey{a, b, k}]; ok {
						continue
					}
					if _, ok := g.derived[pairKey{b, a, k}]; ok {
						continue
					}
					if _, ok := f.chain(kf, a, b); ok {
						continue
					}
					path, ok, w := f.searchWork(g, k, a, b)
					work += w
					if !ok {
						continue
					}
					g.derived[pairKey{a, b, k}] = path
					g.out[a] = append(g.out[a], anomaly.Step{From: a, To: b, Dep: anomaly.WW, Key: k})
					if f.anti {
						// The readers of a's version anti-depend on b.
						for _, r := range g.readers[wkey{a, k}] {
							if r != b {
								g.out[r] = append(g.out[r], anomaly.Step{From: r, To: b, Dep: anomaly.RW, Key: k})
							}
						}
					}
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
}

// search is searchWork without the work count.
func (f *Finder) search(g *knownGraph, k history.KeyID, a, b history.TxnID) ([]anomaly.Step, bool) {
	path, ok, _ := f.searchWork(g, k, a, b)
	return path, ok
}

// searchWork searches the known graph for a path from a to b, or to a
// reader of b's version of k (see infer), and says how many edges it
// looked at.
func (f *Finder) searchWork(g *knownGraph, k history.KeyID, a, b history.TxnID) ([]anomaly.Step, bool, int) {
	targets := []history.TxnID{b}
	if f.single {
		for _, r := range g.readers[wkey{b, k}] {
			if r != a && !slices.Contains(targets, r) {
				targets = append(targets, r)
			}
		}
	}
	finish := func(path []anomaly.Step, end history.TxnID) []anomaly.Step {
		if end != b {
			path = append(path, anomaly.Step{From: b, To: end, Dep: anomaly.WR, Key: k})
		}
		return path
	}
	prev := map[history.TxnID]anomaly.Step{}
	visited := map[history.TxnID]bool{a: true}
	walk := func(end history.TxnID) []anomaly.Step {
		var out []anomaly.Step
		for x := end; x != a; x = prev[x].From {
			out = append(out, prev[x])
		}
		slices.Reverse(out)
		return out
	}
	queue := []history.TxnID{a}
	work := 0
	for len(queue) > 0 && work < maxSearch {
		t := queue[0]
		queue = queue[1:]
		if f.realTime || f.starts {
			for _, end := range targets {
				work++
				if st, ok := f.before(t, end); ok && !visited[end] {
					return finish(append(walk(t), st), end), true, work
				}
			}
		}
		for _, s := range g.out[t] {
			work++
			if visited[s.To] {
				continue
			}
			visited[s.To] = true
			prev[s.To] = s
			if slices.Contains(targets, s.To) {
				return finish(walk(s.To), s.To), true, work
			}
			queue = append(queue, s.To)
		}
	}
	return nil, false, work
}
