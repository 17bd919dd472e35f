package evidence

import (
	"cmp"
	"slices"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// keyFacts is what the evidence knows of one key: its writers that took
// effect, their last (and, for a list, first) write of it, and the known
// orders between them.
type keyFacts struct {
	key history.KeyID
	// lists says the key is a list (it has appends or list reads).
	lists bool
	// final and first are each writer's last and first write, delete or
	// append of the key (operation indices); writers lists them in file
	// order.
	final, first map[history.TxnID]int32
	writers      []history.TxnID
	// elems maps a list element to its append (the first one); reads are
	// the list reads of the key by transactions that took effect.
	elems map[history.Value]history.OpRef
	reads []history.OpRef
	// succ holds the direct known orders from each writer: read-modify-
	// writes, list orders, consecutive writers of the version order and
	// of commit order.
	succ map[history.TxnID][]Link
	// rmwFrom maps each writer that read the key before writing it to
	// the one transaction (or the initial state) whose version it read.
	rmwFrom map[history.TxnID]history.TxnID
}

// facts returns the facts of key k, indexing it when needed (nil for a
// key the history does not have).
func (f *Finder) facts(k history.KeyID) *keyFacts {
	if k < 0 || int(k) >= len(f.h.Keys) {
		return nil
	}
	if kf := f.keys[k]; kf != nil {
		return kf
	}
	f.index([]history.KeyID{k})
	return f.keys[k]
}

// index builds the facts of keys, in one pass over the history.
func (f *Finder) index(keys []history.KeyID) {
	h := f.h
	want := make(map[history.KeyID]*keyFacts, len(keys))
	for _, k := range keys {
		kf := &keyFacts{key: k, final: map[history.TxnID]int32{}, first: map[history.TxnID]int32{},
			elems: map[history.Value]history.OpRef{}, succ: map[history.TxnID][]Link{},
			rmwFrom: map[history.TxnID]history.TxnID{}}
		want[k] = kf
		f.keys[k] = kf
	}
	var rmw []history.TxnID // writers of a wanted key, whose reads may order them
	for i := range h.Txns {
		t := history.TxnID(i)
		effective := f.effective(t)
		wrote := false
		for j, op := range h.Txns[i].Ops {
			kf := want[op.Key]
			if kf == nil || op.Kind.IsRange() {
				continue
			}
			ref := history.OpRef{Txn: t, Op: int32(j)}
			switch op.Kind {
			case history.Append:
				kf.lists = true
				if _, ok := kf.elems[op.Value]; !ok {
					kf.elems[op.Value] = ref
				}
			case history.ReadList:
				kf.lists = true
				if effective {
					kf.reads = append(kf.reads, ref)
				}
				continue
			case history.Write, history.Delete:
				wrote = true
			default:
				continue
			}
			if !effective {
				continue
			}
			if _, ok := kf.final[t]; !ok {
				kf.writers = append(kf.writers, t)
				kf.first[t] = int32(j)
			}
			kf.final[t] = int32(j)
		}
		if wrote && effective {
			rmw = append(rmw, t)
		}
	}
	// Read-modify-writes: a writer's external read of the key, whose
	// version exactly one other transaction installed.
	for _, t := range rmw {
		f.ix.Observations(t, func(o history.Observation) {
			kf := want[o.Key]
			if kf == nil || kf.lists || o.Own >= 0 || o.Pred {
				return
			}
			if _, writes := kf.final[t]; !writes {
				return
			}
			src := f.sources(t, o)
			if len(src) == 1 {
				if _, ok := kf.rmwFrom[t]; !ok {
					kf.rmwFrom[t] = src[0]
				}
			}
			if len(src) == 1 && src[0] != history.Init {
				kf.add(Link{From: src[0], To: t, Basis: ReadModifyWrite, Shown: history.OpRef{Txn: t, Op: o.Op}, HasShown: true})
			}
		})
	}
	for _, k := range keys {
		kf := want[k]
		if kf.lists {
			f.listLinks(kf)
		}
		if vo, ok := h.Header.VersionOrder[k]; ok {
			var prev history.TxnID = -1
			for _, t := range vo {
				if _, writes := kf.final[t]; !writes {
					continue
				}
				if prev >= 0 {
					kf.add(Link{From: prev, To: t, Basis: VersionOrder})
				}
				prev = t
			}
		}
		if f.commitOrder {
			ws := slices.Clone(kf.writers)
			ws = slices.DeleteFunc(ws, func(t history.TxnID) bool { return !h.Txns[t].HasCommitTS })
			slices.SortStableFunc(ws, func(x, y history.TxnID) int { return cmp.Compare(h.Txns[x].CommitTS, h.Txns[y].CommitTS) })
			for i := 1; i < len(ws); i++ {
				if h.Txns[ws[i-1]].CommitTS < h.Txns[ws[i]].CommitTS {
					kf.add(Link{From: ws[i-1], To: ws[i], Basis: CommitOrder})
				}
			}
		}
	}
}

// add records a direct known order, unless one between the same writers
// is known already.
func (kf *keyFacts) add(l Link) {
	if l.From == l.To || slices.ContainsFunc(kf.succ[l.From], func(x Link) bool { return x.To == l.To }) {
		return
	}
	kf.succ[l.From] = append(kf.succ[l.From], l)
}

// listLinks adds the orders the list reads of kf's key show: adjacent
// elements of different appenders, and, for the appends no read shows,
// the last appender of the longest read before each of them.
func (f *Finder) listLinks(kf *keyFacts) {
	h := f.h
	appender := func(v history.Value) (history.TxnID, bool) {
		a, ok := kf.elems[v]
		if !ok || !f.effective(a.Txn) {
			return 0, false
		}
		return a.Txn, true
	}
	seen := map[history.Value]bool{}
	var longest history.OpRef
	longestLen := -1
	// Reads that share a list's storage (history.Lists) show the same
	// adjacent pairs on their common part, which the first of them added
	// (add keeps a pair's first link): each looks only past what earlier
	// reads of its array looked at.
	looked := history.Looked{}
	for _, r := range kf.reads {
		list := h.Txns[r.Txn].Ops[r.Op].List
		for i := looked.From(kf.key, list); i < len(list); i++ {
			v := list[i]
			seen[v] = true
			if i == 0 {
				continue
			}
			a, aok := appender(list[i-1])
			b, bok := appender(v)
			if aok && bok && a != b {
				kf.add(Link{From: a, To: b, Basis: ListOrder, Shown: r, HasShown: true})
			}
		}
		if len(list) > longestLen {
			longest, longestLen = r, len(list)
		}
	}
	if longestLen <= 0 {
		return
	}
	list := h.Txns[longest.Txn].Ops[longest.Op].List
	last, ok := appender(list[len(list)-1])
	if !ok {
		return
	}
	for _, u := range kf.writers {
		if u == last {
			continue
		}
		unseen := true
		for _, op := range h.Txns[u].Ops {
			if op.Kind == history.Append && op.Key == kf.key && seen[op.Value] {
				unseen = false
				break
			}
		}
		if unseen {
			kf.add(Link{From: last, To: u, Basis: ListOrder, Shown: longest, HasShown: true, Unobserved: true})
		}
	}
}

// direct returns a single known order of a's version of kf's key before
// b's: the version order or commit timestamps, or one direct link.
func (f *Finder) direct(kf *keyFacts, a, b history.TxnID) (Link, bool) {
	for _, l := range kf.succ[a] {
		if l.To == b {
			return l, true
		}
	}
	if vo, ok := f.h.Header.VersionOrder[kf.key]; ok {
		ia, ib := slices.Index(vo, a), slices.Index(vo, b)
		if ia >= 0 && ib > ia {
			return Link{From: a, To: b, Basis: VersionOrder}, true
		}
	}
	if f.commitOrder && f.valid(a) && f.valid(b) {
		ta, tb := &f.h.Txns[a], &f.h.Txns[b]
		if ta.HasCommitTS && tb.HasCommitTS && ta.CommitTS < tb.CommitTS {
			return Link{From: a, To: b, Basis: CommitOrder}, true
		}
	}
	return Link{}, false
}

// chain returns the shortest chain of direct known orders from a's
// version of kf's key to b's.
func (f *Finder) chain(kf *keyFacts, a, b history.TxnID) ([]Link, bool) {
	if l, ok := f.direct(kf, a, b); ok {
		return []Link{l}, true
	}
	prev := map[history.TxnID]Link{}
	queue := []history.TxnID{a}
	visited := map[history.TxnID]bool{a: true}
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		for _, l := range kf.succ[t] {
			if visited[l.To] {
				continue
			}
			visited[l.To] = true
			prev[l.To] = l
			if l.To == b {
				var out []Link
				for x := b; x != a; x = prev[x].From {
					out = append(out, prev[x])
				}
				slices.Reverse(out)
				return out, true
			}
			queue = append(queue, l.To)
		}
	}
	return nil, false
}

// order sets e's Order, Basis (and Path) for the order of a's version of
// kf's key before b's: known link by link, inferred from known
// dependencies, or the solver's choice in a best-found cycle.
func (f *Finder) order(e *Edge, kf *keyFacts, a, b history.TxnID, bestFound bool) {
	if a == history.Init {
		e.Basis = Initial
		return
	}
	if links, ok := f.chain(kf, a, b); ok {
		e.Order = links
		e.Basis = links[0].Basis
		if len(links) > 1 {
			e.Basis = Chain
		}
		return
	}
	if sa, ok := kf.rmwFrom[a]; ok {
		if sb, ok := kf.rmwFrom[b]; ok && sa == sb {
			e.Basis = EitherOrder
			return
		}
	}
	if path, ok := f.infer(kf.key, a, b); ok {
		e.Basis, e.Path = Inferred, path
		return
	}
	// No fact shows the order. In a best-found cycle it is the solver's
	// choice; in a cycle of known edges the checker inferred it (its
	// pruning orders writers whose other order closes a cycle of known
	// dependencies, round after round), by a path this search does not
	// rebuild.
	e.Basis = Inferred
	if bestFound {
		e.Basis = Chosen
	}
}

// isKnown reports whether the order of a's version of kf's key before b's
// is known from the history (not the solver's choice).
func (f *Finder) isKnown(kf *keyFacts, a, b history.TxnID) bool {
	if a == history.Init {
		return true
	}
	if _, ok := f.chain(kf, a, b); ok {
		return true
	}
	_, ok := f.infer(kf.key, a, b)
	return ok
}

// antiEdge is the evidence of R --rw/prw(k)--> B: R's external
// observation of k, the version it saw, B's overwriting write, and why
// that version precedes B's.
func (f *Finder) antiEdge(e *Edge, bestFound bool) {
	k := e.Key
	kf := f.facts(k)
	if kf == nil || !f.valid(e.From) {
		return
	}
	bw, ok := kf.final[e.To]
	if !ok {
		return
	}
	if kf.lists {
		f.listAntiEdge(e, kf, bestFound)
		return
	}
	pred := e.Dep == anomaly.PRW
	done := false
	f.ix.Observations(e.From, func(o history.Observation) {
		if done || o.Key != k || o.Own >= 0 || o.Pred != pred {
			return
		}
		all := f.sources(e.From, o)
		// R may have read B's own version only in a history with repeated
		// values; the edge then rests on which version it read.
		srcs := slices.DeleteFunc(slices.Clone(all), func(t history.TxnID) bool { return t == e.To })
		if len(srcs) == 0 {
			return
		}
		done = true
		e.Ops = []Op{{Ref: history.OpRef{Txn: e.From, Op: o.Op}, Key: k}, {Ref: history.OpRef{Txn: e.To, Op: bw}, Key: k}}
		// The version read: the first source whose order before B is
		// known. With several sources the edge holds whichever R read
		// only when every one's order is known.
		src, every := -1, len(srcs) == len(all)
		for i, s := range srcs {
			if f.isKnown(kf, s, e.To) {
				if src < 0 {
					src = i
				}
			} else {
				every = false
			}
		}
		src = max(src, 0)
		if len(all) > 1 {
			e.Writers = all
		}
		e.ReadFrom, e.HasReadFrom = f.versionOp(kf, srcs[src]), true
		f.order(e, kf, srcs[src], e.To, bestFound)
		if len(all) > 1 && !every && e.Basis != Missing {
			e.Basis = Inferred
			if bestFound {
				e.Basis = Chosen
			}
		}
	})
}

// versionOp is the operation that installed t's version of kf's key (the
// initial state for history.Init).
func (f *Finder) versionOp(kf *keyFacts, t history.TxnID) Op {
	if t == history.Init {
		return InitialOp(kf.key)
	}
	return Op{Ref: history.OpRef{Txn: t, Op: kf.final[t]}, Key: kf.key}
}

// listAntiEdge is antiEdge for a list: R's list read, the appender of its
// last element not R's own (the version it saw), and B's first append.
func (f *Finder) listAntiEdge(e *Edge, kf *keyFacts, bestFound bool) {
	for _, r := range kf.reads {
		if r.Txn != e.From {
			continue
		}
		list := f.h.Txns[r.Txn].Ops[r.Op].List
		src := history.Init
		readFrom := InitialOp(kf.key)
		for i := len(list) - 1; i >= 0; i-- {
			if a, ok := kf.elems[list[i]]; ok && a.Txn != e.From && f.effective(a.Txn) {
				src, readFrom = a.Txn, Op{Ref: a, Key: kf.key}
				break
			}
		}
		if src == e.To {
			continue // this read saw B's element
		}
		e.Ops = []Op{{Ref: r, Key: kf.key}, {Ref: history.OpRef{Txn: e.To, Op: kf.first[e.To]}, Key: kf.key}}
		e.ReadFrom, e.HasReadFrom = readFrom, true
		f.order(e, kf, src, e.To, bestFound)
		return
	}
}
