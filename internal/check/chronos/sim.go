package chronos

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// A transaction's progress in the replay.
const (
	pending uint8 = iota
	started
	committed
)

// Event classes, the order of events at one timestamp: commits of
// transactions that started earlier, then transactions that start and
// commit at this very timestamp (each as one event), then starts.
const (
	classCommit uint64 = iota
	classInstant
	classStart
)

// event is a start or commit of a transaction at timestamp ts; ord is the
// class in the high word and the transaction in the low one, the order of
// events at one timestamp.
type event struct {
	ts, ord uint64
}

func (e event) txn() history.TxnID { return history.TxnID(uint32(e.ord)) }
func (e event) class() uint64      { return e.ord >> 32 }

// node is one ongoing entry: transaction txn has started, writes key and
// has not committed. Nodes of a key form a doubly linked list from
// sim.head; a transaction's nodes are chained by sib from sim.first.
type node struct {
	prev, next, sib int32
	txn             history.TxnID
	key             history.KeyID
}

// sim is one replay of a history in timestamp order.
type sim struct {
	ix *history.Index
	h  *history.History
	// repeats finds duplicate elements in list reads (DuplicateElement).
	repeats history.Repeats
	ser     bool
	kinds   []uint8
	eff     []bool
	state   []uint8
	// prev is each transaction's predecessor in its session among those
	// that took effect, or -1.
	prev []history.TxnID
	// The frontier: each key's last committed value and its writer (Init
	// before any), and for list keys the list.
	val    []history.Value
	writer []history.TxnID
	list   [][]history.Value
	// The ongoing map: per key, a list of nodes; per transaction, its
	// nodes; recycled nodes form a free list through next.
	head  []int32
	first []int32
	nodes []node
	free  int32
	// touched marks keys with the current stamp: first accesses, distinct
	// written keys, final writes.
	touched []uint32
	stamp   uint32
	// Conflict partners of the committing transaction, deduplicated by
	// pstamp (allocated at the first conflict).
	pstamp  []uint32
	pat     []int32
	cstamp  uint32
	views   []lview
	apps    map[elemKey]history.OpRef
	tomb    bool
	found   []anomaly.Anomaly
	events  []event
	started int
}

func newSim(ix *history.Index, kinds []uint8, eff []bool, ser bool) *sim {
	h := ix.History()
	s := &sim{
		ix: ix, h: h, ser: ser, kinds: kinds, eff: eff,
		state:   make([]uint8, len(h.Txns)),
		prev:    make([]history.TxnID, len(h.Txns)),
		val:     make([]history.Value, len(h.Keys)),
		writer:  make([]history.TxnID, len(h.Keys)),
		touched: make([]uint32, len(h.Keys)),
		free:    -1,
		tomb:    h.Header.Deletes == history.TombstoneDeletes,
	}
	for k := range s.val {
		s.val[k] = h.InitialValue(history.KeyID(k))
		s.writer[k] = history.Init
	}
	if slices.Contains(kinds, listKey) {
		s.list = make([][]history.Value, len(h.Keys))
	}
	if !ser {
		s.head = make([]int32, len(h.Keys))
		for k := range s.head {
			s.head[k] = -1
		}
		s.first = make([]int32, len(h.Txns))
		for t := range s.first {
			s.first[t] = -1
		}
	}
	last := make([]history.TxnID, len(h.Sessions))
	for i := range last {
		last[i] = -1
	}
	for i := range h.Txns {
		s.prev[i] = -1
		if !eff[i] {
			continue
		}
		sess := h.Txns[i].Session
		if sess >= 0 && int(sess) < len(last) {
			s.prev[i] = last[sess]
			last[sess] = history.TxnID(i)
		}
	}
	return s
}

// run builds and sorts the events, replays them and returns the findings.
func (s *sim) run(ctx context.Context) ([]anomaly.Anomaly, error) {
	s.buildEvents()
	for i, e := range s.events {
		if i&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return s.found, err
			}
		}
		t := e.txn()
		switch {
		case s.ser:
			s.serialCommit(t)
		case e.class() == classStart:
			s.begin(t)
		case e.class() == classInstant:
			s.begin(t)
			s.commit(t)
		default:
			s.commit(t)
		}
	}
	s.events = nil
	return s.found, nil
}

// buildEvents lists the events of the transactions that took effect in
// replay order. Under SI a transaction whose commit_ts is below its
// start_ts is reported and replayed as starting at its commit.
func (s *sim) buildEvents() {
	h := s.h
	n := 0
	for i := range h.Txns {
		if s.eff[i] {
			n++
		}
	}
	if s.ser {
		s.events = make([]event, 0, n)
	} else {
		s.events = make([]event, 0, 2*n)
	}
	for i := range h.Txns {
		if !s.eff[i] {
			continue
		}
		tx := &h.Txns[i]
		id := uint64(uint32(i))
		if s.ser {
			s.events = append(s.events, event{tx.CommitTS, classCommit<<32 | id})
			continue
		}
		st := tx.StartTS
		if tx.CommitTS < st {
			s.found = append(s.found, anomaly.Anomaly{Kind: anomaly.CommitBeforeStart, Txns: []history.TxnID{history.TxnID(i)}, Key: history.NoKey})
			st = tx.CommitTS
		}
		if st == tx.CommitTS {
			s.events = append(s.events, event{st, classInstant<<32 | id})
			continue
		}
		s.events = append(s.events, event{st, classStart<<32 | id}, event{tx.CommitTS, classCommit<<32 | id})
	}
	sortEvents(s.events)
}

// parallelSort is how many events make sortEvents sort two halves at
// once and merge them.
const parallelSort = 1 << 17

// sortEvents sorts events by timestamp, then class and transaction (no two
// events are equal: a large list is sorted in halves on two processors and
// merged, to the same order).
func sortEvents(es []event) {
	if len(es) < parallelSort || runtime.GOMAXPROCS(0) < 2 {
		slices.SortFunc(es, cmpEvents)
		return
	}
	mid := len(es) / 2
	var wg sync.WaitGroup
	wg.Go(func() { slices.SortFunc(es[:mid], cmpEvents) })
	slices.SortFunc(es[mid:], cmpEvents)
	wg.Wait()
	left := slices.Clone(es[:mid])
	i, j, k := 0, mid, 0
	for i < len(left) && j < len(es) {
		if cmpEvents(es[j], left[i]) < 0 {
			es[k], j = es[j], j+1
		} else {
			es[k], i = left[i], i+1
		}
		k++
	}
	copy(es[k:], left[i:])
}

// cmpEvents orders events by timestamp, then class and transaction.
func cmpEvents(a, b event) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	case a.ord < b.ord:
		return -1
	case a.ord > b.ord:
		return 1
	}
	return 0
}

func (s *sim) nextStamp() uint32 {
	s.stamp++
	if s.stamp == 0 {
		clear(s.touched)
		s.stamp = 1
	}
	return s.stamp
}

// session reports that t's session predecessor p had not committed when t
// was checked (SI: at t's start; SER: at t's commit).
func (s *sim) session(t history.TxnID) {
	if p := s.prev[t]; p >= 0 && s.state[p] != committed {
		s.found = append(s.found, anomaly.Anomaly{
			Kind: anomaly.SessionGuaranteeViolation, Txns: []history.TxnID{p, t}, Key: history.NoKey,
		})
	}
}

// begin is t's start event under SI: Session, Int (lists) and Ext, then t
// joins the ongoing writers of every key it writes.
func (s *sim) begin(t history.TxnID) {
	s.session(t)
	s.state[t] = started
	s.started++
	s.reads(t)
	st := s.nextStamp()
	for _, op := range s.h.Txns[t].Ops {
		if op.Kind.IsWrite() && s.touched[op.Key] != st {
			s.touched[op.Key] = st
			s.join(t, op.Key)
		}
	}
}

// commit is t's commit event under SI: NoConflict against the writers of
// its keys still running, then its writes reach the frontier.
func (s *sim) commit(t history.TxnID) {
	s.cstamp++
	if s.cstamp == 0 {
		clear(s.pstamp)
		s.cstamp = 1
	}
	for n := s.first[t]; n >= 0; {
		nd := s.nodes[n]
		s.unlink(n)
		for m := s.head[nd.key]; m >= 0; m = s.nodes[m].next {
			s.conflict(t, s.nodes[m].txn, nd.key)
		}
		s.nodes[n].next = s.free
		s.free = n
		n = nd.sib
	}
	s.first[t] = -1
	s.apply(t)
	s.state[t] = committed
}

// serialCommit is t's commit event under SER: t must see the state the
// commits before it left, and its session's previous transaction must
// have committed before it.
func (s *sim) serialCommit(t history.TxnID) {
	s.session(t)
	s.reads(t)
	s.apply(t)
	s.state[t] = committed
}

// join adds t to the ongoing writers of k.
func (s *sim) join(t history.TxnID, k history.KeyID) {
	n := s.free
	if n >= 0 {
		s.free = s.nodes[n].next
	} else {
		n = int32(len(s.nodes))
		s.nodes = append(s.nodes, node{})
	}
	s.nodes[n] = node{prev: -1, next: s.head[k], sib: s.first[t], txn: t, key: k}
	if h := s.head[k]; h >= 0 {
		s.nodes[h].prev = n
	}
	s.head[k] = n
	s.first[t] = n
}

// unlink removes node n from its key's list.
func (s *sim) unlink(n int32) {
	nd := &s.nodes[n]
	if nd.prev >= 0 {
		s.nodes[nd.prev].next = nd.next
	} else {
		s.head[nd.key] = nd.next
	}
	if nd.next >= 0 {
		s.nodes[nd.next].prev = nd.prev
	}
}

// conflict reports that t, committing, and u, still running, both write k
// (NoConflict), once per pair: a lost update when u read k before writing
// it (its update is based on a version t overwrote), else a concurrent
// write.
func (s *sim) conflict(t, u history.TxnID, k history.KeyID) {
	if s.pstamp == nil {
		s.pstamp = make([]uint32, len(s.h.Txns))
		s.pat = make([]int32, len(s.h.Txns))
	}
	lost := s.h.ReadsFirst(u, k)
	if s.pstamp[u] == s.cstamp {
		if a := &s.found[s.pat[u]]; a.Kind == anomaly.ConcurrentWrite && lost {
			a.Kind, a.Key, a.Ops = anomaly.LostUpdate, k, ConflictOps(s.h, t, u, k, true)
		}
		return
	}
	s.pstamp[u], s.pat[u] = s.cstamp, int32(len(s.found))
	kind := anomaly.ConcurrentWrite
	if lost {
		kind = anomaly.LostUpdate
	}
	s.found = append(s.found, anomaly.Anomaly{
		Kind: kind, Phenomenon: anomaly.GSIa, Txns: []history.TxnID{t, u}, Key: k, Ops: ConflictOps(s.h, t, u, k, lost),
	})
}

// apply installs t's writes in the frontier: the last write or delete of
// each key, and every append in program order. Under SER, two writers of
// a key with the same commit timestamp are reported: the timestamps do not
// order them.
func (s *sim) apply(t history.TxnID) {
	ops := s.h.Txns[t].Ops
	ct := s.h.Txns[t].CommitTS
	st := s.nextStamp()
	for j := len(ops) - 1; j >= 0; j-- {
		op := ops[j]
		if !op.Kind.IsWrite() || s.touched[op.Key] == st {
			continue
		}
		s.touched[op.Key] = st
		k := op.Key
		if w := s.writer[k]; s.ser && w >= 0 && w != t && s.h.Txns[w].CommitTS == ct {
			s.found = append(s.found, anomaly.Anomaly{
				Kind: anomaly.ConcurrentWrite, Txns: []history.TxnID{w, t}, Key: k,
				Ops: []history.OpRef{LastWrite(s.h, w, k), {Txn: t, Op: int32(j)}},
			})
		}
		s.writer[k] = t
		if op.Kind != history.Append {
			s.val[k] = s.h.Installed(op)
		}
	}
	if s.list == nil {
		return
	}
	for _, op := range ops {
		if op.Kind == history.Append {
			s.list[op.Key] = append(s.list[op.Key], op.Value)
		}
	}
}

// reads checks t's reads against the frontier: each external read (the
// first operation on its key) must return the frontier's version (Ext);
// list reads are checked further in lists.go.
func (s *sim) reads(t history.TxnID) {
	ops := s.h.Txns[t].Ops
	st := s.nextStamp()
	s.views = s.views[:0]
	for j, op := range ops {
		k := op.Key
		switch op.Kind {
		case history.Read:
			if s.kinds[k] == listKey {
				s.listRead(t, j, nil, st)
				continue
			}
			first := s.touched[k] != st
			s.touched[k] = st
			if first && !Agrees(op.Value, s.val[k]) {
				s.ext(t, j, k, op.Value)
			}
		case history.Write, history.Delete:
			s.touched[k] = st
		case history.Append:
			s.listAppend(t, j, st)
		case history.ReadList:
			s.listRead(t, j, op.List, st)
		}
	}
}

// ext reports t's external read of v at k, which disagrees with the
// frontier, unless the shared checks already did (no write that took
// effect, or may have, left v as its final state of k: a thin-air,
// aborted, intermediate or future read). It is a stale read when a
// transaction that wrote v had committed (or v is the initial state), and
// a read beyond the snapshot otherwise.
func (s *sim) ext(t history.TxnID, j int, k history.KeyID, v history.Value) {
	src, stale, ok := s.source(t, k, v)
	if !ok {
		return
	}
	kind := anomaly.ReadBeyondSnapshot
	if stale {
		kind = anomaly.StaleRead
	}
	s.found = append(s.found, anomaly.Anomaly{
		Kind: kind, Phenomenon: ExtPhenomenon(s.ser, kind), Txns: []history.TxnID{t, src, s.writer[k]},
		Key: k, Value: v, Ops: []history.OpRef{{Txn: t, Op: int32(j)}},
	})
}

// source finds who wrote the value t read at k: the initial state, a
// committed transaction (stale), or one that has not committed yet.
func (s *sim) source(t history.TxnID, k history.KeyID, v history.Value) (history.TxnID, bool, bool) {
	init := s.h.InitialValue(k)
	if v.IsNull() && init.IsNull() || !v.IsNull() && v == init {
		return history.Init, true, true
	}
	src, stale, ok := history.Init, false, false
	visit := func(w history.OpRef, final bool) {
		u := w.Txn
		if u == t || !final || !s.eff[u] && s.h.Txns[u].Status != history.Unknown {
			return
		}
		switch {
		case s.state[u] == committed && !stale:
			src, stale, ok = u, true, true
		case !ok:
			src, ok = u, true
		}
	}
	if v.IsNull() {
		s.ix.Writers(k, history.NullValue, visit)
		if s.tomb {
			s.ix.Writers(k, history.Tombstone, visit)
		}
	} else {
		s.ix.Writers(k, v, visit)
	}
	return src, stale, ok
}
