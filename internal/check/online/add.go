package online

import (
	"fmt"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// staleRead is a committed transaction's list read that ended inside its
// key's settled prefix, at position q: it read a state older than the
// append of the element at q, so it depends by anti-dependency on that
// (forgotten) appender. At serializability and snapshot isolation it is a
// violation once a path from the appender to the reader is certain
// (judgeStale); until then it is pending.
type staleRead struct {
	r      *rec
	key    history.Value
	q      int
	el     elem
	judged bool
}

func (s *state) add(src *history.History, batch []history.Txn) ([]Finding, error) {
	for i := range batch {
		t := &batch[i]
		if err := validate(src, t); err != nil {
			return nil, err
		}
		for _, o := range t.Ops {
			if o.Kind != history.Append {
				continue
			}
			if ks := s.keys[src.Keys[o.Key]]; ks != nil {
				if _, dup := ks.index[o.Value]; dup {
					return nil, fmt.Errorf("%s appends %s to key %s, which a transaction before it appended: list-append histories append each element once", where(t), o.Value, src.Keys[o.Key])
				}
			}
		}
	}
	if !s.headerOK {
		s.headerOK = true
		s.unique = src.Header.UniqueValues
	}
	before := len(s.findings)
	for i := range batch {
		s.arrive(src, &batch[i])
	}
	if len(s.held) >= s.nextRound {
		if err := s.round(); err != nil {
			return nil, err
		}
	}
	return slices.Clone(s.findings[before:]), nil
}

// arrive takes one transaction: its reads cut by their keys' settled
// prefixes (and judged where they end inside one), its session's fences.
func (s *state) arrive(src *history.History, t *history.Txn) {
	s.arrived++
	label := src.Sessions[t.Session]
	ss := s.sess[label]
	if ss == nil {
		ss = &session{label: label, fenceVis: -1, idx: len(s.order)}
		s.sess[label] = ss
		s.order = append(s.order, ss)
	}
	r := &rec{id: t.ID, sess: ss, status: t.Status, line: t.Line, seq: s.arrived, fence: s.isFence(src, t)}
	r.ops = make([]op, len(t.Ops))
	counted := false
	for j, o := range t.Ops {
		key := src.Keys[o.Key]
		p := op{kind: o.Kind, key: key, val: o.Value}
		switch o.Kind {
		case history.Read, history.Write:
			s.registers = true
		case history.ReadList:
			p.full = len(o.List)
		}
		if ks := s.keys[key]; ks != nil {
			ks.touched = s.arrived
		} else if s.dropped(key) {
			// The key's settled state was dropped under the memory
			// bound: its operations cannot be judged.
			p.stale = true
			if !counted {
				counted = true
				s.droppedTouch++
			}
			if o.Kind == history.ReadList {
				p.list = nil
			}
			r.ops[j] = p
			continue
		}
		if o.Kind == history.ReadList {
			s.cutRead(r, t, j, &p, o.List)
		}
		r.ops[j] = p
	}
	// Only a committed fence is one: an aborted fence's read shows
	// nothing (no path runs through it) and its append no read shows,
	// and a fence of unknown outcome may never have taken effect.
	fence := r.fence && r.status == history.Committed
	if fence && r.ops[0].kind == history.ReadList {
		ss.fenceVis = max(ss.fenceVis, r.ops[0].full)
	}
	r.fenceVis = ss.fenceVis
	if fence {
		for _, w := range ss.waiting {
			w.nextFence = r
		}
		ss.waiting = ss.waiting[:0]
	}
	ss.waiting = append(ss.waiting, r)
	s.held = append(s.held, r)
	s.recsB += recBytes(r)
}

// cutRead sets p.list to the part of list (t's read at ops[j]) past its
// key's settled prefix, or marks the read stale and judges it when it
// ends inside the prefix or departs from it.
func (s *state) cutRead(r *rec, t *history.Txn, j int, p *op, list []history.Value) {
	ks := s.keys[p.key]
	if ks != nil && len(ks.aborted) > 0 {
		for _, e := range list {
			id, ok := ks.aborted[e]
			if !ok {
				continue
			}
			// An element of a forgotten aborted transaction.
			p.stale = true
			switch r.status {
			case history.Committed:
				s.localFinding(r, t, anomaly.AbortedRead, anomaly.G1a, p.key, e, id)
			case history.Unknown:
				s.unjudged = append(s.unjudged, r)
			}
			return
		}
	}
	if ks == nil || len(ks.settled) == 0 && len(ks.ghosts) == 0 {
		p.list = slices.Clone(list)
		return
	}
	P := ks.settled
	n := min(len(list), len(P))
	agree := 0
	for agree < n && list[agree] == P[agree].val {
		agree++
	}
	if agree == len(P) {
		p.list = slices.Clone(list[len(P):])
		if r.status != history.Committed {
			// Leading ghosts are cut like the settled prefix; a ghost
			// further on cannot be placed.
			isGhost := func(v history.Value) bool {
				return slices.ContainsFunc(ks.ghosts, func(g elem) bool { return g.val == v })
			}
			lead := 0
			for lead < len(p.list) && isGhost(p.list[lead]) {
				lead++
			}
			p.list = p.list[lead:]
			if slices.ContainsFunc(p.list, isGhost) {
				p.stale = true
				if r.status != history.Aborted {
					s.unjudged = append(s.unjudged, r)
				}
			}
			return
		}
		for _, e := range p.list {
			if _, dup := ks.index[e]; dup {
				p.stale = true
				s.localFinding(r, t, anomaly.DuplicateElements, anomaly.None, p.key, e, history.NullValue)
				return
			}
		}
		if len(ks.ghosts) > 0 && !s.cutGhost(r, t, j, p, ks) {
			return
		}
		if len(p.list) == 0 && len(P) > 0 && !P[len(P)-1].last {
			s.localFinding(r, t, anomaly.IntermediateRead, anomaly.G1b, p.key, P[len(P)-1].val, P[len(P)-1].appID)
		}
		return
	}
	p.stale = true
	if r.status == history.Aborted {
		return // an aborted transaction's reads count for nothing
	}
	if r.status != history.Committed {
		// Whether it counts depends on whether the transaction took
		// effect; at read committed a plain prefix that ends at an
		// appender's last append is no finding either way.
		if !s.ser && agree == len(list) && (agree == 0 || P[agree-1].last) {
			return
		}
		s.unjudged = append(s.unjudged, r)
		return
	}
	// The transaction's own earlier appends to the key end its read.
	var own []history.Value
	for _, o := range t.Ops[:j] {
		if o.Kind == history.Append && t.Ops[j].Key == o.Key {
			own = append(own, o.Value)
		}
	}
	if seen := map[history.Value]bool{}; true {
		for _, e := range list {
			if seen[e] {
				s.localFinding(r, t, anomaly.DuplicateElements, anomaly.None, p.key, e, history.NullValue)
				return
			}
			seen[e] = true
		}
	}
	ext := list
	if len(own) > 0 {
		if len(list) < len(own) || !slices.Equal(list[len(list)-len(own):], own) {
			s.localFinding(r, t, anomaly.NotMyOwnWrite, anomaly.None, p.key, own[len(own)-1], history.NullValue)
			return
		}
		ext = list[:len(list)-len(own)]
	}
	if len(ext) > len(P) || agree < len(ext) {
		s.localFinding(r, t, anomaly.IncompatibleOrder, anomaly.None, p.key, history.NullValue, ks.reader)
		return
	}
	// A prefix of the settled list: stale.
	q := len(ext)
	if q > 0 && !P[q-1].last {
		s.localFinding(r, t, anomaly.IntermediateRead, anomaly.G1b, p.key, P[q-1].val, P[q-1].appID)
		return
	}
	if s.ser {
		st := &staleRead{r: r, key: p.key, q: q, el: P[q]}
		s.stale = append(s.stale, st)
		s.judgeStale(st, nil)
	}
}

// localFinding reports an anomaly of t's own operations (and, where
// other is set, of one forgotten transaction named by its id): certain
// at once.
func (s *state) localFinding(r *rec, t *history.Txn, kind anomaly.Kind, ph anomaly.Phenomenon, key, val, other history.Value) {
	h := history.New()
	h.Header.Present, h.Header.Version, h.Header.UniqueValues = true, 1, s.unique
	h.Sessions = []history.Value{r.sess.label}
	tx := history.Txn{ID: t.ID, Status: t.Status, Line: t.Line}
	for _, o := range t.Ops {
		c := history.Op{Kind: o.Kind, Value: o.Value, List: o.List}
		tx.Ops = append(tx.Ops, c)
	}
	// Keys in the small history are by name.
	for j := range tx.Ops {
		tx.Ops[j].Key = h.Key(r.ops[j].key)
	}
	h.Txns = append(h.Txns, tx)
	a := anomaly.Anomaly{Kind: kind, Phenomenon: ph, Txns: []history.TxnID{0}, Key: h.Key(key), Value: val}
	if !other.IsNull() {
		h.Sessions = append(h.Sessions, history.StringValue("?"))
		h.Txns = append(h.Txns, history.Txn{ID: other, Session: 1})
		a.Txns = append(a.Txns, 1)
	}
	s.report(Finding{Anomaly: a, History: h, Arrived: s.arrived}, []history.Value{t.ID, other})
}

// report keeps f unless every transaction it names was named by a
// finding before it.
func (s *state) report(f Finding, ids []history.Value) {
	fresh := false
	for _, id := range ids {
		if !id.IsNull() && !s.reported[id] {
			fresh = true
		}
	}
	if !fresh {
		return
	}
	for _, id := range ids {
		if !id.IsNull() && len(s.reported) < maxReported {
			s.reported[id] = true
		}
	}
	s.findings = append(s.findings, f)
}

// maxReported bounds the ids remembered to report each finding once.
const maxReported = 1 << 16

// cutGhost judges committed read p (t's ops[j], already cut by the
// settled prefix) of a key with ghost elements. The ghosts it shows first
// join the settled prefix in its order (an order against reach closes a
// cycle: reported); a ghost it misses is an append that precedes the
// reader which it did not see (a violation once the path is certain); a
// ghost shown after an element appended since is counted misplaced. It
// returns false when the read was left out.
func (s *state) cutGhost(r *rec, t *history.Txn, j int, p *op, ks *keyState) bool {
	var own []history.Value
	for _, o := range t.Ops[:j] {
		if o.Kind == history.Append && t.Ops[j].Key == o.Key {
			own = append(own, o.Value)
		}
	}
	e := p.list
	if len(own) > 0 && len(e) >= len(own) && slices.Equal(e[len(e)-len(own):], own) {
		e = e[:len(e)-len(own)]
	}
	which := func(v history.Value) int {
		for i, g := range ks.ghosts {
			if g.val == v {
				return i
			}
		}
		return -1
	}
	lead := 0
	for lead < len(e) && which(e[lead]) >= 0 {
		lead++
	}
	for _, v := range e[lead:] {
		if which(v) >= 0 {
			p.stale = true
			s.misplaced++
			return false
		}
	}
	// The leading ghosts, in the read's order: none may follow a ghost
	// its appender's path reaches.
	idx := make([]int, lead)
	for n := range lead {
		idx[n] = which(e[n])
	}
	for a := range lead {
		for b := a + 1; b < lead; b++ {
			if ks.reach[[2]int{idx[b], idx[a]}] {
				s.foundStale(r, anomaly.Cycle, anomaly.G1c, p.key, ks.ghosts[idx[a]])
			}
		}
	}
	if lead < len(ks.ghosts) {
		// Some ghost missing: judge by the one fences settle first.
		best := -1
		for i, g := range ks.ghosts {
			if !slices.Contains(idx, i) && (best < 0 || g.bfence < ks.ghosts[best].bfence) {
				best = i
			}
		}
		for _, i := range idx {
			if ks.reach[[2]int{best, i}] {
				s.foundStale(r, anomaly.Cycle, anomaly.G1c, p.key, ks.ghosts[best])
			}
		}
		st := &staleRead{r: r, key: p.key, q: -1, el: ks.ghosts[best]}
		s.stale = append(s.stale, st)
		s.judgeStale(st, nil)
	}
	if lead == 0 {
		return true
	}
	for _, i := range idx {
		ks.index[ks.ghosts[i].val] = len(ks.settled)
		ks.settled = append(ks.settled, ks.ghosts[i])
	}
	var rest []elem
	remap := map[int]int{}
	for i, g := range ks.ghosts {
		if !slices.Contains(idx, i) {
			remap[i] = len(rest)
			rest = append(rest, g)
		}
	}
	reach := map[[2]int]bool{}
	for pair := range ks.reach {
		a, okA := remap[pair[0]]
		b, okB := remap[pair[1]]
		if okA && okB {
			reach[[2]int{a, b}] = true
		}
	}
	ks.ghosts, ks.reach = rest, reach
	p.list = p.list[lead:]
	return true
}
