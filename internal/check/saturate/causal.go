package saturate

import (
	"context"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// keyWriters are the writers of each key grouped by session, in session
// order: key k's groups are gFirst[k] to gFirst[k+1]; group g holds the
// writers wTxn[gStart[g]:gStart[g+1]] of session g's, at positions
// wPos[gStart[g]:gStart[g+1]] in it. As inferCC walks the topological
// order, each group keeps its session and the position of its last walked
// writer in hot[g] (what the scan over a key's groups, inferCC's hot loop,
// reads), and in walk[g] how many of its writers have been walked (a
// prefix: the order extends session order) and the last two of them: a
// writer in a reader's causal past has been walked, so the last walked
// one below the reader's clock is the one to find, almost always the last
// walked one or the one before.
//
// When keys times sessions is not much more than the writes, the keys'
// last walked positions are kept densely as well, by key and session
// (dense[k*sessions+s], -1 for none; at[k*sessions+s] the group), so that
// the hot loop reads three arrays in step — the key's positions and the
// two clocks — and needs no session ids; densePrev holds the walked
// writers' before the last, which settles almost every query whose last
// walked writer is beyond the reader's clock.
type keyWriters struct {
	gFirst    []int32
	gStart    []int32 // one more entry: the end
	hot       []groupHot
	walk      []groupWalk
	sessions  int
	dense     []int32
	densePrev []int32
	at        []int32
	wTxn      []history.TxnID
	wPos      []int32
	// group is, for each entry of state.wKey (a transaction's written
	// key), its group; without the dense layout only (with it, at finds
	// the group).
	group []int32
}

// denseKeys allows the dense layout (tests switch it off to check the
// other).
var denseKeys = true

// groupHot is a group's session and its last walked writer's position
// (-1: none yet).
type groupHot struct {
	session, last int32
}

// groupWalk is the rest of a group's state in the walk: its writers
// walked so far, the last one's transaction, and the one before's
// position (-1: none) and transaction.
type groupWalk struct {
	done, prev      int32
	lastTxn, prevTx history.TxnID
}

func (s *state) keyWriters() *keyWriters {
	nk := len(s.h.Keys)
	count := make([]int32, nk+1)
	for _, k := range s.wKey {
		count[k+1]++
	}
	for k := range nk {
		count[k+1] += count[k]
	}
	kw := &keyWriters{wTxn: make([]history.TxnID, len(s.wKey)), wPos: make([]int32, len(s.wKey)), sessions: max(len(s.h.Sessions), 1)}
	cells := int64(nk) * int64(kw.sessions)
	dense := denseKeys && cells <= max(4*int64(len(s.wKey)), 1<<20)
	fill := count[:nk]
	start := append([]int32(nil), count...)
	// Sessions in order and each in session order: every key's writers
	// come out grouped by session, in session order. Without the dense
	// layout, at keeps where each entry of state.wKey went, to find its
	// group.
	var at []int32
	if !dense {
		at = make([]int32, len(s.wKey))
	}
	for _, txns := range s.bySession {
		for _, t := range txns {
			for e := s.wFirst[t]; e < s.wFirst[t+1]; e++ {
				k := s.wKey[e]
				kw.wTxn[fill[k]], kw.wPos[fill[k]] = t, s.pos[t]
				if at != nil {
					at[e] = fill[k]
				}
				fill[k]++
			}
		}
	}
	if dense {
		kw.dense, kw.densePrev, kw.at = make([]int32, cells), make([]int32, cells), make([]int32, cells)
		for i := range kw.dense {
			kw.dense[i], kw.densePrev[i], kw.at[i] = -1, -1, -1
		}
	}
	var groupOf []int32 // index here → group, without the dense layout
	if !dense {
		groupOf = make([]int32, len(s.wKey))
	}
	kw.gFirst = make([]int32, nk+1)
	for k := range nk {
		kw.gFirst[k] = int32(len(kw.hot))
		for i := start[k]; i < start[k+1]; i++ {
			sess := s.sess[kw.wTxn[i]]
			if n := len(kw.hot); i == start[k] || kw.hot[n-1].session != sess {
				kw.hot = append(kw.hot, groupHot{session: sess, last: -1})
				kw.walk = append(kw.walk, groupWalk{prev: -1})
				kw.gStart = append(kw.gStart, i)
				if dense {
					kw.at[k*kw.sessions+int(sess)] = int32(len(kw.hot) - 1)
				}
			}
			if !dense {
				groupOf[i] = int32(len(kw.hot) - 1)
			}
		}
	}
	kw.gFirst[nk] = int32(len(kw.hot))
	kw.gStart = append(kw.gStart, int32(len(kw.wTxn)))
	if !dense {
		kw.group = make([]int32, len(s.wKey))
		for e, i := range at {
			kw.group[e] = groupOf[i]
		}
	}
	return kw
}

// walked records that t's writes have been walked.
func (kw *keyWriters) walked(s *state, t history.TxnID) {
	p, sess := s.pos[t], int(s.sess[t])
	for e := s.wFirst[t]; e < s.wFirst[t+1]; e++ {
		if kw.dense != nil {
			i := int(s.wKey[e])*kw.sessions + sess
			g := &kw.walk[kw.at[i]]
			g.done++
			g.prev, g.prevTx, g.lastTxn = kw.dense[i], g.lastTxn, t
			kw.densePrev[i], kw.dense[i] = kw.dense[i], p
			continue
		}
		h, g := &kw.hot[kw.group[e]], &kw.walk[kw.group[e]]
		g.done++
		g.prev, g.prevTx, h.last, g.lastTxn = h.last, g.lastTxn, p, t
	}
}

// lastBefore returns the index of the last walked writer of group g at a
// position below bound (some walked writer's is), or -1.
func (kw *keyWriters) lastBefore(g, bound int32) int32 {
	lo, hi := kw.gStart[g], kw.gStart[g]+kw.walk[g].done // the first writer at bound or beyond is in [lo, hi]
	first := lo
	for lo < hi {
		mid := int32(uint32(lo+hi) >> 1)
		if kw.wPos[mid] < bound {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == first {
		return -1
	}
	return lo - 1
}

// clocks is a pool of vector clocks over the sessions, each with its
// ceiling beside it: per session, how far that session's writers are
// known to precede the transaction — its causal past, raised by the
// inferred edges into it (a writer so-before one with an edge into it
// precedes it too).
type clocks struct {
	k    int
	mem  []int32
	free []int32
}

func (c *clocks) alloc() int32 {
	if n := len(c.free); n > 0 {
		id := c.free[n-1]
		c.free = c.free[:n-1]
		return id
	}
	c.mem = append(c.mem, make([]int32, 2*c.k)...)
	return int32(len(c.mem)/(2*c.k) - 1)
}

// of is clock id.
func (c *clocks) of(id int32) []int32 { return c.mem[int(id)*2*c.k : int(id)*2*c.k+c.k] }

// ceiling is clock id's ceiling.
func (c *clocks) ceiling(id int32) []int32 { return c.mem[int(id)*2*c.k+c.k : int(id+1)*2*c.k] }

// inferCC infers causal consistency's edges. In a topological order of so
// ∪ wr each transaction's vector clock (per session, how many of its
// transactions precede or are it by so and wr) is the maximum of its
// session predecessor's and its writers'; then for each key x it read from
// t1 and each session, the last writer of x in that session within the
// clock precedes t1, unless it already reaches t1 or an earlier inference
// put it, or a writer after it in its session, before t1 (then the edge
// follows: t1's ceiling keeps track).
// A clock is freed once the transactions that take it in (its readers, its
// session successor) have.
func (s *state) inferCC(ctx context.Context) error {
	kw := s.keyWriters()
	s.inf = make([]inference, 0, len(s.rKey)/2)
	c := &clocks{k: max(len(s.h.Sessions), 1)}
	initCeiling := make([]int32, c.k) // the initial state's ceiling
	vc := make([]int32, s.n)
	refs := make([]int32, s.n)
	for i := range s.n {
		vc[i] = -1
		if s.pos[i] >= 0 {
			refs[i] = s.rdFirst[i+1] - s.rdFirst[i]
			if int(s.pos[i])+1 < len(s.bySession[s.sess[i]]) {
				refs[i]++
			}
		}
	}
	release := func(t history.TxnID) {
		if refs[t]--; refs[t] == 0 {
			c.free = append(c.free, vc[t])
			vc[t] = -1
		}
	}
	var sources []history.TxnID
	for idx, t3 := range s.topo {
		if idx%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		id := c.alloc()
		v := c.of(id)
		own := s.sess[t3]
		var pred history.TxnID = -1
		if p := s.pos[t3]; p > 0 {
			pred = s.bySession[own][p-1]
			copy(v, c.of(vc[pred]))
		} else {
			clear(v)
		}
		s.epoch++
		sources = sources[:0]
		for r := s.rFirst[t3]; r < s.rFirst[t3+1]; r++ {
			w := s.rWriter[r]
			if w == history.Init || s.txnMark[w] == s.epoch {
				continue
			}
			s.txnMark[w], s.first[w] = s.epoch, r
			sources = append(sources, w)
			if v[s.sess[w]] > s.pos[w] {
				// w is in the causal past merged so far, and so is its own.
				continue
			}
			for i, x := range c.of(vc[w]) {
				v[i] = max(v[i], x)
			}
		}
		// v[own] is still t3's position: its session's writers before it.
		var lastKey history.KeyID = -1
		var lastWriter history.TxnID
		for r := s.rFirst[t3]; r < s.rFirst[t3+1]; r++ {
			x, t1 := s.rKey[r], s.rWriter[r]
			if x == lastKey && t1 == lastWriter {
				continue // the same read again
			}
			lastKey, lastWriter = x, t1
			// What t1 is known to follow: its causal past and the writers
			// already inferred before it (and their session predecessors).
			v1 := initCeiling
			if t1 != history.Init {
				v1 = c.ceiling(vc[t1])
			}
			q := query{s: s, kw: kw, t1: t1, t3: t3, r: r, own: own, ceiling: v1}
			if kw.dense != nil {
				base := int(x) * kw.sessions
				last := kw.dense[base : base+kw.sessions]
				prev := kw.densePrev[base : base+kw.sessions]
				v, v1 := v[:len(last)], v1[:len(last)]
				for sess, l := range last {
					// Skip the session when t3 has seen nothing of it t1
					// has not, or every walked writer of x there is in
					// t1's causal past (none walked yet: l is -1), or the
					// last is beyond t3's clock and the one before in t1's
					// past.
					if bound, known := v[sess], v1[sess]; bound > known && l >= known && (l < bound || prev[sess] >= known) {
						q.session(kw.at[base+sess], int32(sess), l, bound, known)
					}
				}
				continue
			}
			for g := kw.gFirst[x]; g < kw.gFirst[x+1]; g++ {
				a := kw.hot[g]
				if bound, known := v[a.session], v1[a.session]; bound > known && a.last >= known {
					q.session(g, a.session, a.last, bound, known)
				}
			}
		}
		v[own] = s.pos[t3] + 1
		copy(c.ceiling(id), v)
		vc[t3] = id
		kw.walked(s, t3)
		if pred >= 0 {
			release(pred)
		}
		for _, w := range sources {
			release(w)
		}
		if refs[t3] == 0 {
			c.free = append(c.free, id)
			vc[t3] = -1
		}
	}
	return nil
}

// query is one read's search for the writers it missed: t3's read r of
// key x from t1; own is t3's session.
type query struct {
	s       *state
	kw      *keyWriters
	t1, t3  history.TxnID
	r       int32
	own     int32
	ceiling []int32 // t1's
}

// session adds the inference from session sess (group g, its last walked
// writer at position last), where t3's clock is bound and t1's ceiling
// known and some walked writer of x at or beyond known exists: the last
// walked writer below bound, unless it is below known (t1 already follows
// it) or is t1. The edge raises t1's ceiling.
func (q *query) session(g, sess, last, bound, known int32) {
	s, kw := q.s, q.kw
	var t2 history.TxnID
	pos := last
	switch w := &kw.walk[g]; {
	case last < bound:
		t2 = w.lastTxn
	case w.prev < bound:
		// The last walked writer is not in t3's causal past (walked
		// before t3, concurrent with it); the one before is.
		if w.prev < known {
			return
		}
		t2, pos = w.prevTx, w.prev
	default:
		j := kw.lastBefore(g, bound)
		if j < 0 || kw.wPos[j] < known {
			return
		}
		t2, pos = kw.wTxn[j], kw.wPos[j]
	}
	if t2 == q.t1 {
		return
	}
	q.ceiling[sess] = max(q.ceiling[sess], pos+1)
	f := inference{from: t2, to: q.t1, reader: q.t3, read: q.r, beta: -1, why: byPath}
	switch {
	case sess == q.own:
		f.why = bySession
	case s.txnMark[t2] == s.epoch:
		f.why, f.beta = byRead, s.first[t2]
	}
	s.inf = append(s.inf, f)
}

// score ranks inference i for the depiction of a cycle: one whose premise
// only the level (and not a weaker one) has names the violation best.
func (s *state) score(i int32) int {
	f := &s.inf[i]
	switch {
	case f.why == byPath:
		return 2
	case f.why == bySession, s.ax != level.AxiomRC && s.rOp[f.beta] > s.rOp[f.read]:
		return 1
	}
	return 0
}

// acyclic reports whether so ∪ wr with the inferred edges is acyclic:
// Kahn's algorithm over the transactions that took effect and the initial
// state, whose node has an edge to every transaction an inference puts
// before it.
func (s *state) acyclic() bool {
	n := s.n
	// The inferred edges by source (the initial state's are the last
	// node's), counted then filled.
	out := make([]int32, n+2)
	indeg := make([]int32, n+1)
	initFirst := make([]bool, n)
	inits := 0
	for _, f := range s.inf {
		out[f.from+1]++
		if f.to == history.Init {
			indeg[n]++
			if !initFirst[f.from] {
				initFirst[f.from] = true
				inits++
				indeg[f.from]++
			}
		} else {
			indeg[f.to]++
		}
	}
	if inits == 0 {
		// No inference puts anything before the initial state: its node
		// takes no part.
		indeg[n] = 0
	}
	for i := range n + 1 {
		out[i+1] += out[i]
	}
	to := make([]int32, len(s.inf))
	fill := append([]int32(nil), out[:n+1]...)
	for _, f := range s.inf {
		t := int32(f.to)
		if f.to == history.Init {
			t = int32(n)
		}
		to[fill[f.from]] = t
		fill[f.from]++
	}
	effective := 1
	queue := make([]int32, 0, n+1)
	for i := range n {
		if s.pos[i] < 0 {
			continue
		}
		effective++
		indeg[i] += s.rdIn(history.TxnID(i))
		if s.pos[i] > 0 {
			indeg[i]++
		}
	}
	for i := range n + 1 {
		if (i == n || s.pos[i] >= 0) && indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	for head := 0; head < len(queue); head++ {
		v := queue[head]
		release := func(u int32) {
			if indeg[u]--; indeg[u] == 0 {
				queue = append(queue, u)
			}
		}
		if int(v) == n {
			for t, first := range initFirst {
				if first {
					release(int32(t))
				}
			}
			continue
		}
		t := history.TxnID(v)
		if next := int(s.pos[t]) + 1; next < len(s.bySession[s.sess[t]]) {
			release(int32(s.bySession[s.sess[t]][next]))
		}
		for _, u := range s.rd[s.rdFirst[t]:s.rdFirst[t+1]] {
			release(int32(u))
		}
		for _, u := range to[out[t]:out[t+1]] {
			release(u)
		}
	}
	return len(queue) == effective
}

// cycles reports nothing when so ∪ wr with the inferred edges is acyclic;
// otherwise it builds that graph and returns one anomaly per strongly
// connected component: the read that missed a write, through the
// inferred edge of the component whose premise names it best.
func (s *state) cycles(ctx context.Context) ([]anomaly.Anomaly, error) {
	if s.acyclic() {
		return nil, ctx.Err()
	}
	g := s.graph(true)
	var out []anomaly.Anomaly
	in := make([]int32, g.Nodes())
	ww := dsg.Label(anomaly.WW)
	p := &pathFinder{s: s}
	for c, comp := range g.NontrivialSCCs(graph.AllLabels) {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		for _, v := range comp {
			in[v] = int32(c) + 1
		}
		best, score := int32(-1), -1
		for _, v := range comp {
			lo, hi := g.Out(v)
			for e := lo; e < hi; e++ {
				if g.Label(e) == ww && in[g.To(e)] == int32(c)+1 {
					if sc := s.score(g.Data(e)); sc > score {
						best, score = g.Data(e), sc
					}
				}
			}
		}
		if best >= 0 {
			out = append(out, s.depict(best, p))
		}
	}
	return out, nil
}

// depict is inference i's violation: its premise, a path of so and wr from
// the writer the reader missed to the reader, then the anti-dependency.
func (s *state) depict(i int32, p *pathFinder) anomaly.Anomaly {
	f := s.inf[i]
	var path []anomaly.Step
	switch f.why {
	case byRead:
		path = []anomaly.Step{{From: f.from, To: f.reader, Dep: anomaly.WR, Key: s.rKey[f.beta]}}
	case bySession:
		path = []anomaly.Step{{From: f.from, To: f.reader, Dep: anomaly.SO, Key: history.NoKey}}
	default:
		path = p.path(f.from, f.reader)
	}
	return dsg.Missed(s.h, path, history.OpRef{Txn: f.reader, Op: s.rOp[f.read]}, f.to, f.from, s.rKey[f.read], false)
}

// pathFinder finds shortest paths of so and wr, breadth-first over the
// transactions no later than the target in the topological order.
type pathFinder struct {
	s      *state
	mark   []uint32
	epoch  uint32
	parent []history.TxnID
	queue  []history.TxnID
}

// path returns the steps of a shortest path of so and wr from a to b (b
// reachable from a).
func (p *pathFinder) path(a, b history.TxnID) []anomaly.Step {
	s := p.s
	if p.mark == nil {
		p.mark, p.parent = make([]uint32, s.n), make([]history.TxnID, s.n)
	}
	p.epoch++
	p.mark[a], p.queue = p.epoch, append(p.queue[:0], a)
	limit := s.at[b]
	for i := 0; i < len(p.queue) && p.mark[b] != p.epoch; i++ {
		u := p.queue[i]
		visit := func(w history.TxnID) {
			if p.mark[w] != p.epoch && s.at[w] <= limit {
				p.mark[w], p.parent[w] = p.epoch, u
				p.queue = append(p.queue, w)
			}
		}
		if next := int(s.pos[u]) + 1; next < len(s.bySession[s.sess[u]]) {
			visit(s.bySession[s.sess[u]][next])
		}
		for _, w := range s.rd[s.rdFirst[u]:s.rdFirst[u+1]] {
			visit(w)
		}
	}
	var steps []anomaly.Step
	for w := b; w != a && p.mark[w] == p.epoch; w = p.parent[w] {
		u := p.parent[w]
		st := anomaly.Step{From: u, To: w, Dep: anomaly.SO, Key: history.NoKey}
		if s.sess[u] != s.sess[w] || s.pos[w] != s.pos[u]+1 {
			st.Dep, st.Key = anomaly.WR, s.keyReadFrom(w, u)
		}
		steps = append(steps, st)
	}
	for l, r := 0, len(steps)-1; l < r; l, r = l+1, r-1 {
		steps[l], steps[r] = steps[r], steps[l]
	}
	return steps
}
