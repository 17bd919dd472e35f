package online

import (
	"context"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
)

// appRef is a held transaction's append of an element.
type appRef struct {
	r    *rec
	last bool // its last append to the key
}

// kview is what the held transactions show of a list key past its
// settled prefix: the order the longest read of a committed transaction
// gives, who appended each element, and the readers by where their read
// ends.
type kview struct {
	order  []history.Value
	pos    map[history.Value]int
	apps   map[history.Value]appRef
	enders map[int][]*rec
}

// blocker stands for a transaction not yet arrived among the sources of
// an edge: never held, never forgotten.
var blocker = &rec{}

// view is the held window's dependency structure.
type view struct {
	keys map[history.Value]*kview
	// prev is each held transaction's predecessor in its session among
	// the held ones.
	prev map[*rec]*rec
	// writers finds a register write by key and value.
	writers map[[2]history.Value]*rec
	// src and csrc cache in and certainIn.
	src, csrc map[*rec][]*rec
}

// in returns the sources of r (cached for the round).
func (s *state) in(v *view, r *rec) []*rec {
	if x, ok := v.src[r]; ok {
		return x
	}
	x := slices.Clone(s.sources(v, r, nil, false))
	v.src[r] = x
	return x
}

// certainIn returns the sources of r whose path to r holds in every
// history the stream may still become (cached for the round): sources
// less the readers of a whole list before an append no read has shown,
// whose anti-dependency goes to whichever append a later read shows
// next.
func (s *state) certainIn(v *view, r *rec) []*rec {
	if x, ok := v.csrc[r]; ok {
		return x
	}
	x := slices.Clone(s.sources(v, r, nil, true))
	v.csrc[r] = x
	return x
}

// ext returns the part of r's list read at ops[j] that others appended:
// the read less r's own earlier appends to the key at its end.
func ext(r *rec, j int) []history.Value {
	o := &r.ops[j]
	var own []history.Value
	for _, p := range r.ops[:j] {
		if p.kind == history.Append && p.key == o.key {
			own = append(own, p.val)
		}
	}
	if len(own) == 0 || len(o.list) < len(own) || !slices.Equal(o.list[len(o.list)-len(own):], own) {
		return o.list
	}
	return o.list[:len(o.list)-len(own)]
}

func (s *state) kv(v *view, k history.Value) *kview {
	kv := v.keys[k]
	if kv == nil {
		kv = &kview{pos: map[history.Value]int{}, apps: map[history.Value]appRef{}, enders: map[int][]*rec{}}
		v.keys[k] = kv
	}
	return kv
}

// buildView indexes the held transactions.
func (s *state) buildView() *view {
	v := &view{keys: map[history.Value]*kview{}, prev: map[*rec]*rec{}, writers: map[[2]history.Value]*rec{}, src: map[*rec][]*rec{}, csrc: map[*rec][]*rec{}}
	last := map[*session]*rec{}
	for _, r := range s.held {
		// Session order runs between the transactions that may take
		// effect: an aborted one is in no cycle (its reads count for
		// nothing, a read of its element is an aborted read), and an edge
		// from it would hold every later transaction of its session.
		if r.status != history.Aborted {
			if p := last[r.sess]; p != nil {
				v.prev[r] = p
			}
			last[r.sess] = r
		}
		for j, o := range r.ops {
			if o.stale && o.kind != history.ReadList {
				continue // on a key whose state was dropped
			}
			switch o.kind {
			case history.Append:
				kv := s.kv(v, o.key)
				lastApp := true
				for _, q := range r.ops[j+1:] {
					if q.kind == history.Append && q.key == o.key {
						lastApp = false
					}
				}
				if _, ok := kv.apps[o.val]; !ok {
					kv.apps[o.val] = appRef{r: r, last: lastApp}
				}
			case history.Write:
				v.writers[[2]history.Value{o.key, o.val}] = r
			case history.ReadList:
				kv := s.kv(v, o.key)
				if o.stale || r.status != history.Committed {
					continue
				}
				e := ext(r, j)
				kv.enders[len(e)] = append(kv.enders[len(e)], r)
				if len(e) > len(kv.order) {
					kv.order = e
				}
			}
		}
	}
	for _, kv := range v.keys {
		for i, e := range kv.order {
			if _, ok := kv.pos[e]; !ok {
				kv.pos[e] = i
			}
		}
	}
	return v
}

// sources returns the held transactions with an edge into r that the
// rule of forgetting must respect (a superset of the dependency edges
// into r: session order, every element r read, the element before each
// it appended and, at SER and SI, the readers that ended just before
// one).
func (s *state) sources(v *view, r *rec, out []*rec, certain bool) []*rec {
	out = out[:0]
	if p := v.prev[r]; p != nil && s.ser {
		out = append(out, p)
	}
	for j, o := range r.ops {
		switch o.kind {
		case history.ReadList:
			if o.stale {
				continue
			}
			out = readFrom(v, r, j, out)
		case history.Read:
			if w := v.writers[[2]history.Value{o.key, o.val}]; w != nil && w != r {
				out = append(out, w)
			}
		case history.Append:
			if o.stale {
				continue
			}
			kv := v.keys[o.key]
			i, ok := kv.pos[o.val]
			if !ok {
				// Unobserved: after the last element the lists show,
				// and after every read of all of them.
				if n := len(kv.order); n > 0 {
					if a, ok := kv.apps[kv.order[n-1]]; !ok {
						out = append(out, blocker)
					} else if a.r != r {
						out = append(out, a.r)
					}
				}
				if s.ser && !certain {
					for _, x := range kv.enders[len(kv.order)] {
						if x != r {
							out = append(out, x)
						}
					}
				}
				continue
			}
			if i > 0 {
				if a, ok := kv.apps[kv.order[i-1]]; !ok {
					// Its appender has not arrived: nothing after it
					// is settled.
					out = append(out, blocker)
				} else if a.r != r {
					out = append(out, a.r)
				}
			}
			if s.ser {
				for _, x := range kv.enders[i] {
					if x != r {
						out = append(out, x)
					}
				}
			}
		}
	}
	return out
}

// readClosed returns the held transactions each of whose reads' writers
// arrived and is itself in the set: the largest sub-history whose
// findings no later arrival can change.
func (s *state) readClosed(v *view) map[*rec]bool {
	in := make(map[*rec]bool, len(s.held))
	for _, r := range s.held {
		in[r] = true
	}
	for changed := true; changed; {
		changed = false
		for _, r := range s.held {
			if !in[r] {
				continue
			}
			ok := true
			for j, o := range r.ops {
				switch o.kind {
				case history.ReadList:
					if o.stale {
						continue
					}
					kv := v.keys[o.key]
					for _, e := range ext(r, j) {
						if a, found := kv.apps[e]; !found || !in[a.r] {
							ok = false
						}
					}
				case history.Read:
					if o.val.IsNull() {
						continue
					}
					if w := v.writers[[2]history.Value{o.key, o.val}]; w == nil || !in[w] {
						ok = false
					}
				}
			}
			if !ok {
				in[r] = false
				changed = true
			}
		}
	}
	return in
}

// build returns the history of recs (in arrival order), their stale
// reads left out, each list read cut by its key's settled prefix.
func (s *state) build(recs []*rec) (*history.History, []*rec) {
	h := history.New()
	h.Header.Present, h.Header.Version, h.Header.UniqueValues = true, 1, s.unique
	sess := map[*session]int32{}
	for _, r := range recs {
		id, ok := sess[r.sess]
		if !ok {
			id = int32(len(h.Sessions))
			h.Sessions = append(h.Sessions, r.sess.label)
			sess[r.sess] = id
		}
		t := history.Txn{ID: r.id, Session: id, Status: r.status, Line: r.line}
		t.Ops = make([]history.Op, 0, len(r.ops))
		for _, o := range r.ops {
			if o.stale {
				continue
			}
			t.Ops = append(t.Ops, history.Op{Kind: o.kind, Key: h.Key(o.key), Value: o.val, List: o.list})
		}
		h.Txns = append(h.Txns, t)
	}
	return h, recs
}

// checkWindow runs the offline checker on recs and reports its findings;
// with v (a round, not the drain), those whose cycle runs through a
// version order the lists do not show yet are marked Chosen.
func (s *state) checkWindow(ctx context.Context, recs []*rec, v *view) (check.Result, error) {
	h, _ := s.build(recs)
	res, err := check.Run(ctx, h, s.cfg.Level, check.Options{})
	if err != nil {
		return res, err
	}
	for _, a := range res.Anomalies {
		// A cycle through an order of appends no read has shown yet is
		// reported at once all the same: the window is read-closed, so
		// the violation is certain whatever later reads show; only which
		// cycle shows it may change. Held for later reads, a finding's
		// transactions would hold every later one that reads or follows
		// them, and with violations coming every round (write skews at
		// snapshot isolation) the window would grow without end.
		chosen := v != nil && !determined(v, h, recs, &a)
		ids := make([]history.Value, 0, len(a.Txns))
		for _, t := range a.Txns {
			if t >= 0 {
				ids = append(ids, h.Txns[t].ID)
			}
		}
		small, b := shrink(h, a)
		s.report(Finding{Anomaly: b, History: small, Arrived: s.arrived, Chosen: chosen}, ids)
	}
	return res, nil
}

// round runs one garbage-collection round: the read-closed part of the
// window is checked, then the transactions no later arrival can reach
// are forgotten, their list elements settled.
func (s *state) round() error {
	s.rounds++
	v := s.buildView()
	in := s.readClosed(v)
	var closed []*rec
	for _, r := range s.held {
		if in[r] {
			closed = append(closed, r)
		}
	}
	if _, err := s.checkWindow(context.Background(), closed, v); err != nil {
		return err
	}
	s.judgeAll(v)
	if !s.registers {
		s.forget(v, in)
		s.forgetAborted()
		s.recount()
		s.evict()
	}
	s.nextRound = max(s.roundMin, 4*len(s.held))
	return nil
}

// fencePos returns the position in the fence list of fence f's element,
// or -1 when no read has shown it yet.
func (s *state) fencePos(v *view, f *rec) int {
	if f == nil || s.fkey == nil || len(f.ops) != 2 || f.ops[1].kind != history.Append {
		return -1
	}
	kv := v.keys[*s.fkey]
	if kv == nil {
		return -1
	}
	i, ok := kv.pos[f.ops[1].val]
	if !ok {
		return -1
	}
	base := 0
	if ks := s.keys[*s.fkey]; ks != nil {
		base = len(ks.settled)
	}
	return base + i
}

// forget forgets what the rule allows (package doc): committed
// transactions of the read-closed part whose appends every key's order
// places, at SER and SI past a fence of their session that every
// session's fences have read; then the largest subset of them closed
// under the edges into it.
func (s *state) forget(v *view, in map[*rec]bool) {
	minVis := -1
	if s.ser {
		minVis = int(^uint(0) >> 1)
		for _, ss := range s.order {
			minVis = min(minVis, ss.fenceVis)
		}
	}
	cand := map[*rec]bool{}
	for _, r := range s.held {
		if !in[r] || r.status != history.Committed {
			continue
		}
		ok := true
		for _, o := range r.ops {
			if o.kind == history.Append && !o.stale {
				if _, placed := v.keys[o.key].pos[o.val]; !placed && !s.ghostable(v, r, o) {
					ok = false
				}
			}
		}
		if ok && s.ser {
			p := s.fencePos(v, r.nextFence)
			ok = p >= 0 && minVis > p
		}
		if ok {
			cand[r] = true
		}
	}
	fw := &forward{}
	for {
		s.close(v, cand)
		// A key's unseen appends go as ghosts only where each held
		// appender of one follows them: its session has read past the
		// forgotten appender's next fence, as a transaction that
		// arrives later has, or a path of session order, reads and
		// appends after appends leads to it from the forgotten
		// appender. Either way its append follows theirs in every
		// order the history allows. Otherwise a cold key, appended now
		// and then and read by no one, would hold its first appender,
		// and everything after it, until a read shows the key.
		drop := false
		for _, kv := range v.keys {
			var in, out []*rec
			for e, a := range kv.apps {
				if _, placed := kv.pos[e]; placed || a.r.status == history.Aborted {
					continue
				}
				if cand[a.r] {
					in = append(in, a.r)
				} else {
					out = append(out, a.r)
				}
			}
			for _, g := range in {
				for _, x := range out {
					if !s.follows(v, fw, g, x) {
						delete(cand, g)
						drop = true
						break
					}
				}
			}
		}
		if !drop {
			break
		}
	}
	if s.dropHook {
		for _, r := range s.held {
			if !cand[r] && in[r] && r.status == history.Committed {
				cand[r] = true
				break
			}
		}
	}
	if len(cand) == 0 {
		return
	}
	s.settle(v, cand)
}

// forward is the held window's order edges (session order, reads of
// elements, appends after appends: the dependencies no level lets a
// store turn the other way), forwards, and what each transaction reaches
// by them, built as asked for.
type forward struct {
	out   map[*rec][]*rec
	reach map[*rec]map[*rec]bool
}

// follows says whether held x's unseen append follows g's in every order
// the history allows: x's fences read past g's next fence, or a path of
// order edges leads from g to x.
func (s *state) follows(v *view, fw *forward, g, x *rec) bool {
	if p := s.fencePos(v, g.nextFence); p >= 0 && x.fenceVis > p {
		return true
	}
	if fw.out == nil {
		fw.out = map[*rec][]*rec{}
		fw.reach = map[*rec]map[*rec]bool{}
		for _, r := range s.held {
			for _, y := range s.orderIn(v, r) {
				fw.out[y] = append(fw.out[y], r)
			}
		}
	}
	seen := fw.reach[g]
	if seen == nil {
		seen = map[*rec]bool{}
		stack := []*rec{g}
		for len(stack) > 0 {
			r := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, y := range fw.out[r] {
				if !seen[y] {
					seen[y] = true
					stack = append(stack, y)
				}
			}
		}
		fw.reach[g] = seen
	}
	return seen[x]
}

// readFrom appends to out the held appenders of the elements r's list
// read at ops[j] shows.
func readFrom(v *view, r *rec, j int, out []*rec) []*rec {
	kv := v.keys[r.ops[j].key]
	for _, e := range ext(r, j) {
		if a, ok := kv.apps[e]; ok && a.r != r {
			out = append(out, a.r)
		}
	}
	return out
}

// orderIn returns the held transactions with an order edge into r:
// its predecessor in its session, the appenders of the elements it read
// and of the element before each it appended that a read shows.
func (s *state) orderIn(v *view, r *rec) []*rec {
	var out []*rec
	if p := v.prev[r]; p != nil {
		out = append(out, p)
	}
	for j, o := range r.ops {
		if o.stale {
			continue
		}
		switch o.kind {
		case history.ReadList:
			if r.status == history.Committed {
				out = readFrom(v, r, j, out)
			}
		case history.Append:
			kv := v.keys[o.key]
			if i, ok := kv.pos[o.val]; ok && i > 0 {
				if a, ok := kv.apps[kv.order[i-1]]; ok && a.r != r {
					out = append(out, a.r)
				}
			}
		}
	}
	return out
}

// close shrinks cand to its largest subset closed under the edges into
// it from held transactions.
func (s *state) close(v *view, cand map[*rec]bool) {
	outs := map[*rec][]*rec{}
	var queue []*rec
	var buf []*rec
	for _, r := range s.held {
		if !cand[r] {
			continue
		}
		buf = s.in(v, r)
		drop := false
		for _, x := range buf {
			if cand[x] {
				outs[x] = append(outs[x], r)
			} else {
				drop = true
			}
		}
		if drop {
			queue = append(queue, r)
		}
	}
	for len(queue) > 0 {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if !cand[r] {
			continue
		}
		delete(cand, r)
		for _, y := range outs[r] {
			if cand[y] {
				queue = append(queue, y)
			}
		}
	}
}

// settle forgets the transactions of gone: each key's order grows its
// settled prefix by the elements they appended, and the held reads are
// cut by it.
func (s *state) settle(v *view, gone map[*rec]bool) {
	moved := map[history.Value][]history.Value{}
	for k, kv := range v.keys {
		n := 0
		for n < len(kv.order) {
			a, ok := kv.apps[kv.order[n]]
			if !ok || !gone[a.r] {
				break
			}
			n++
		}
		if n == 0 {
			continue
		}
		ks := s.keys[k]
		if ks == nil {
			ks = &keyState{index: map[history.Value]int{}}
			s.keys[k] = ks
		}
		for _, e := range kv.order[:n] {
			a := kv.apps[e]
			el := elem{val: e, app: a.r.seq, appID: a.r.id, bfence: -1, last: a.last, sessions: len(s.order)}
			if s.ser {
				el.bfence = s.fencePos(v, a.r.nextFence)
			}
			ks.index[e] = len(ks.settled)
			ks.settled = append(ks.settled, el)
			s.keyElems++
		}
		ks.reader = kv.apps[kv.order[n-1]].r.id
		if rs := kv.enders[len(kv.order)]; len(rs) > 0 {
			ks.reader = rs[0].id
		}
		moved[k] = kv.order[:n]
	}
	// Unseen appends become their keys' ghosts, with the paths between
	// their appenders.
	group := map[history.Value][]*rec{}
	for _, r := range s.held {
		if !gone[r] {
			continue
		}
		for _, o := range r.ops {
			if o.kind != history.Append || o.stale {
				continue
			}
			if _, placed := v.keys[o.key].pos[o.val]; !placed && !slices.Contains(group[o.key], r) {
				group[o.key] = append(group[o.key], r)
			}
		}
	}
	var multi []groupRef
	for k, rs := range group {
		ks := s.keys[k]
		if ks == nil {
			ks = &keyState{index: map[history.Value]int{}}
			s.keys[k] = ks
		}
		if ks.reach == nil {
			ks.reach = map[[2]int]bool{}
		}
		// The ghosts of earlier rounds precede these where fences say
		// so; no path leads back to them (they were forgotten first).
		old := len(ks.ghosts)
		first := make([]int, len(rs)) // each appender's first ghost
		for n, r := range rs {
			first[n] = len(ks.ghosts)
			last := map[history.Value]int{}
			for j, o := range r.ops {
				if o.kind == history.Append && o.key == k {
					last[o.val] = j
				}
			}
			for j, o := range r.ops {
				if o.kind != history.Append || o.key != k || o.stale {
					continue
				}
				isLast := true
				for _, q := range r.ops[j+1:] {
					if q.kind == history.Append && q.key == k {
						isLast = false
					}
				}
				if _, placed := v.keys[k].pos[o.val]; placed {
					continue
				}
				g := len(ks.ghosts)
				ks.ghosts = append(ks.ghosts, elem{val: o.val, app: r.seq, appID: r.id, bfence: s.fencePos(v, r.nextFence), last: isLast, sessions: len(s.order)})
				s.keyElems++
				for i := range old {
					if r.fenceVis > ks.ghosts[i].bfence || slices.Contains(r.after, ks.ghosts[i].app) {
						ks.reach[[2]int{i, g}] = true
					}
				}
			}
		}
		if len(rs) > 1 {
			multi = append(multi, groupRef{k: k, rs: rs, first: first})
		}
	}
	if len(multi) > 0 {
		s.groupReach(v, multi)
	}
	// The held appenders the new ghosts stay beside follow them (forget
	// made sure): a read that shows one of theirs and misses a ghost is
	// a stale read with a certain path, and once they are ghosts too
	// they follow them.
	for k, rs := range group {
		for e, a := range v.keys[k].apps {
			if _, placed := v.keys[k].pos[e]; placed || gone[a.r] || a.r.status == history.Aborted {
				continue
			}
			for _, g := range rs {
				if !slices.Contains(a.r.after, g.seq) {
					a.r.after = append(a.r.after, g.seq)
				}
			}
		}
	}
	s.dropHeld(gone)
	for _, r := range s.held {
		for j := range r.ops {
			o := &r.ops[j]
			m := moved[o.key]
			if o.kind != history.ReadList || o.stale || len(m) == 0 {
				continue
			}
			agree := 0
			for agree < len(m) && agree < len(o.list) && o.list[agree] == m[agree] {
				agree++
			}
			if agree == len(m) {
				o.list = slices.Clone(o.list[len(m):])
				continue
			}
			// Ends inside what is now settled: at read committed only
			// (elsewhere the reader's anti-dependency keeps the appender).
			o.stale = true
			ks := s.keys[o.key]
			q := len(ks.settled) - len(m) + agree
			if r.status == history.Committed && q > 0 && agree == len(ext(r, j)) && !ks.settled[q-1].last {
				s.foundStale(r, anomaly.IntermediateRead, anomaly.G1b, o.key, ks.settled[q-1])
			}
		}
	}
	for _, ss := range s.order {
		w := ss.waiting[:0]
		for _, r := range ss.waiting {
			if !r.gone {
				w = append(w, r)
			}
		}
		clear(ss.waiting[len(w):])
		ss.waiting = w
	}
	st := s.stale[:0]
	for _, x := range s.stale {
		switch {
		case x.judged:
		case x.r.gone && x.r.sess.idx >= x.el.sessions:
			s.lateGone++
		case x.r.gone:
			s.unresolved++
		default:
			st = append(st, x)
		}
	}
	clear(s.stale[len(st):])
	s.stale = st
}

// judgeAll judges the pending stale reads against the held window.
func (s *state) judgeAll(v *view) {
	for _, st := range s.stale {
		if !st.judged {
			s.judgeStale(st, v)
		}
	}
}

// judgeStale reports st once a path from its forgotten appender to its
// reader is certain: a fence that read the appender's session's next
// fence precedes the reader (in session order, through held
// transactions' edges), or the reader's own append to the key follows
// the settled prefix.
func (s *state) judgeStale(st *staleRead, v *view) {
	certain := st.el.bfence >= 0 && st.r.fenceVis > st.el.bfence || slices.Contains(st.r.after, st.el.app)
	if !certain && v != nil {
		if kv := v.keys[st.key]; kv != nil && st.q >= 0 {
			for _, o := range st.r.ops {
				if o.kind == history.Append && o.key == st.key {
					if _, ok := kv.pos[o.val]; ok {
						certain = true
					}
				}
			}
		}
		if !certain && st.el.bfence >= 0 {
			seen := map[*rec]bool{st.r: true}
			stack := []*rec{st.r}
			var buf []*rec
			for len(stack) > 0 && !certain {
				r := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if r.fenceVis > st.el.bfence || slices.Contains(r.after, st.el.app) {
					certain = true
					break
				}
				buf = s.certainIn(v, r)
				for _, x := range buf {
					if !seen[x] {
						seen[x] = true
						stack = append(stack, x)
					}
				}
			}
		}
	}
	if !certain {
		return
	}
	st.judged = true
	s.foundStale(st.r, anomaly.Cycle, anomaly.GSingle, st.key, st.el)
}

// foundStale reports a finding about held reader r and the forgotten
// appender of el.
func (s *state) foundStale(r *rec, kind anomaly.Kind, ph anomaly.Phenomenon, key history.Value, el elem) {
	h, _ := s.build([]*rec{r})
	h.Sessions = append(h.Sessions, history.StringValue("?"))
	h.Txns = append(h.Txns, history.Txn{ID: el.appID, Session: int32(len(h.Sessions) - 1)})
	a := anomaly.Anomaly{Kind: kind, Phenomenon: ph, Txns: []history.TxnID{0, 1}, Key: h.Key(key), Value: el.val}
	s.report(Finding{Anomaly: a, History: h, Arrived: s.arrived}, []history.Value{r.id, el.appID})
}

// determined says whether every version-order edge of a's cycle (ww, rw)
// joins appends the lists already show: an edge between appends no read
// has shown yet is a choice of the solver, which later reads may turn the
// other way (the violation stays, its cycle changes), so such a finding
// waits for the reads that settle it, or for the drain.
func determined(v *view, h *history.History, recs []*rec, a *anomaly.Anomaly) bool {
	for _, st := range a.Cycle {
		if st.Dep != anomaly.WW && st.Dep != anomaly.RW || st.Key == history.NoKey || st.To < 0 || int(st.To) >= len(recs) {
			continue
		}
		key := h.Keys[st.Key]
		kv := v.keys[key]
		for _, o := range recs[st.To].ops {
			if o.kind != history.Append || o.key != key {
				continue
			}
			if kv == nil {
				return false
			}
			if _, ok := kv.pos[o.val]; !ok {
				return false
			}
		}
	}
	return true
}

// ghostable says whether r's unobserved append o may be forgotten as one
// of its key's ghosts: at SER and SI only, where fences order it before
// every later transaction of the sessions that read them. (forget then
// requires every held appender of the key that no read has shown and
// that may take effect to go with it.)
func (s *state) ghostable(v *view, r *rec, o op) bool { return s.ser }

// groupRef is one key's appenders forgotten together with unseen
// appends, and the index of each one's first ghost.
type groupRef struct {
	k     history.Value
	rs    []*rec
	first []int
}

// groupReach records, for each group, the pairs of its appenders joined
// by a path among the held transactions: each held transaction's set of
// group members that reach it, propagated along the edges to a fixpoint.
func (s *state) groupReach(v *view, groups []groupRef) {
	type member struct{ g, i int }
	var members []member
	bit := map[*rec][]int{}
	for g, gr := range groups {
		for i, r := range gr.rs {
			bit[r] = append(bit[r], len(members))
			members = append(members, member{g, i})
		}
	}
	words := (len(members) + 63) / 64
	sets := make(map[*rec][]uint64, len(s.held))
	for r, bs := range bit {
		set := make([]uint64, words)
		for _, b := range bs {
			set[b/64] |= 1 << (b % 64)
		}
		sets[r] = set
	}
	for changed := true; changed; {
		changed = false
		for _, r := range s.held {
			for _, x := range s.certainIn(v, r) {
				from := sets[x]
				if from == nil {
					continue
				}
				to := sets[r]
				if to == nil {
					to = make([]uint64, words)
					sets[r] = to
				}
				for w := range to {
					if n := to[w] | from[w]; n != to[w] {
						to[w], changed = n, true
					}
				}
			}
		}
	}
	for g, gr := range groups {
		ks := s.keys[gr.k]
		for j, r := range gr.rs {
			set := sets[r]
			for b, m := range members {
				if m.g != g || m.i == j || set[b/64]&(1<<(b%64)) == 0 {
					continue
				}
				i := m.i
				for a := gr.first[i]; a < len(ks.ghosts) && ks.ghosts[a].app == gr.rs[i].seq; a++ {
					for c := gr.first[j]; c < len(ks.ghosts) && ks.ghosts[c].app == r.seq; c++ {
						ks.reach[[2]int{a, c}] = true
					}
				}
			}
		}
	}
}

// forgetAborted forgets the held aborted transactions whose elements no
// held read shows, keeping only their elements (with their ids) in their
// keys' state. An aborted transaction is in no cycle — its reads count
// for nothing — so what a later arrival can still make of it is an
// aborted read: a read that shows one of its elements, which cutRead
// reports on arrival. A held read that shows one keeps it, so that the
// round's check of the window finds that aborted read.
func (s *state) forgetAborted() {
	var aborted []*rec
	elems := map[[2]history.Value]bool{}
	for _, r := range s.held {
		if r.status != history.Aborted {
			continue
		}
		aborted = append(aborted, r)
		for _, o := range r.ops {
			if o.kind == history.Append {
				elems[[2]history.Value{o.key, o.val}] = true
			}
		}
	}
	if len(aborted) == 0 {
		return
	}
	shown := map[[2]history.Value]bool{}
	for _, r := range s.held {
		if r.status == history.Aborted {
			continue
		}
		for _, o := range r.ops {
			if o.kind != history.ReadList {
				continue
			}
			for _, e := range o.list {
				if k := [2]history.Value{o.key, e}; elems[k] {
					shown[k] = true
				}
			}
		}
	}
	gone := map[*rec]bool{}
	for _, r := range aborted {
		keep := false
		for _, o := range r.ops {
			if o.kind == history.Append && shown[[2]history.Value{o.key, o.val}] {
				keep = true
			}
		}
		if keep {
			continue
		}
		for _, o := range r.ops {
			if o.kind != history.Append || o.stale {
				continue
			}
			ks := s.keys[o.key]
			if ks == nil {
				ks = &keyState{index: map[history.Value]int{}, touched: s.arrived}
				s.keys[o.key] = ks
			}
			if ks.aborted == nil {
				ks.aborted = map[history.Value]history.Value{}
			}
			if _, dup := ks.aborted[o.val]; !dup {
				ks.aborted[o.val] = r.id
				s.keyElems++
			}
		}
		gone[r] = true
	}
	if len(gone) == 0 {
		return
	}
	s.dropHeld(gone)
}

// dropHeld takes the transactions of gone out of the held ones, marking
// each gone and counting it as forgotten.
func (s *state) dropHeld(gone map[*rec]bool) {
	kept := s.held[:0]
	for _, r := range s.held {
		if gone[r] {
			r.gone = true
			s.forgot++
			continue
		}
		kept = append(kept, r)
	}
	clear(s.held[len(kept):])
	s.held = kept
}
