package gen

import (
	"math/rand/v2"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// The simulated database behind GenerateRange: one run of the sessions
// against a key-value store with range scans, serial or at snapshot
// isolation, with the planted faults.

// ownKV is a key a running transaction wrote or deleted, and the state it
// left.
type ownKV struct {
	key int32
	st  int64
}

// rsim is one GenerateRange simulation. Until finish, an op's Key and a
// pair's Key hold the raw key number and a transaction's Session the raw
// session number.
type rsim struct {
	c RangeConfig
	// r draws the workload and the database's behaviour; fr draws faults.
	r, fr *rand.Rand
	keys  workload.KeyChooser
	mix   []workload.Share
	uniq  bool
	// deleted is the state a delete leaves.
	deleted int64
	// state[k] is k's committed state; prev[k] the state its last commit
	// replaced; counter[k] the last unique value handed out for k.
	state, prev, counter []int64
	// own holds the running transaction's writes and deletes in first-write
	// order; ownIdx[k] is k's index in own plus one, 0 when k is not in it.
	own    []ownKV
	ownIdx []int32
	// cur is the running transaction's operations; cand the indexes in cur
	// of those a fault may corrupt.
	cur  []history.Op
	cand []int
	// pairBuf collects a range result.
	pairBuf []history.KV
	// wrong counts the values nobody wrote handed out by faults.
	wrong int64
	// Slabs the history's operations, pairs and ranges are carved from.
	opSlab    []history.Op
	pairSlab  []history.KV
	rangeSlab []history.Range
	txns      []history.Txn
	// initial lists the keys present in the initial state, ascending, and
	// their values.
	initial []ownKV
	// clock hands out database timestamps when RangeConfig.Timestamps is
	// set.
	clock tsClock
}

// populate draws the initial state.
func (s *rsim) populate() {
	if s.c.Populate == 0 {
		return
	}
	for k := range s.state {
		if s.r.Float64() < s.c.Populate {
			s.state[k] = s.newValue(k)
			s.initial = append(s.initial, ownKV{int32(k), s.state[k]})
		}
	}
}

// newValue returns a fresh value for key k.
func (s *rsim) newValue(k int) int64 {
	if s.uniq {
		s.counter[k]++
		return s.counter[k]
	}
	return 1 + s.r.Int64N(int64(s.c.ValueDomain))
}

// at returns k's state as the running transaction sees it.
func (s *rsim) at(k int) int64 {
	if i := s.ownIdx[k]; i != 0 {
		return s.own[i-1].st
	}
	return s.state[k]
}

// set records the running transaction's write or delete of k.
func (s *rsim) set(k int, st int64) {
	if i := s.ownIdx[k]; i != 0 {
		s.own[i-1].st = st
		return
	}
	s.own = append(s.own, ownKV{int32(k), st})
	s.ownIdx[k] = int32(len(s.own))
}

// readValue is what a read of a key in state st returns (null when absent
// or deleted), and a range pair's value when st is present.
func readValue(st int64) history.Value {
	if st > 0 {
		return history.IntValue(st)
	}
	return history.NullValue
}

// exec runs one transaction against the committed state and returns its
// operations; its writes and deletes are left in s.own, not installed.
func (s *rsim) exec() []history.Op {
	s.cur, s.cand = s.cur[:0], s.cand[:0]
	if s.mix == nil {
		// Cobra's BlindW-RW: read-only or write-only.
		kind := workload.MixWrite
		if s.r.IntN(2) == 0 {
			kind = workload.MixRead
		}
		for range s.c.Ops {
			s.do(kind)
		}
	} else {
		for range s.c.Ops {
			p := s.r.IntN(100)
			for _, sh := range s.mix {
				if p < sh.Pct {
					s.do(sh.Op)
					break
				}
				p -= sh.Pct
			}
		}
	}
	if s.c.Fault > 0 && s.fr.Float64() < s.c.Fault {
		s.corrupt()
	}
	ops := carve(&s.opSlab, len(s.cur))
	copy(ops, s.cur)
	return ops
}

// do runs one logical operation.
func (s *rsim) do(op workload.MixOp) {
	switch op {
	case workload.MixRead:
		s.read(s.keys.Next(s.r))
	case workload.MixWrite:
		s.write(s.keys.Next(s.r))
	case workload.MixDelete:
		k := s.keys.Next(s.r)
		s.set(k, s.deleted)
		s.cur = append(s.cur, history.Op{Kind: history.Delete, Key: history.KeyID(k)})
	case workload.MixRMW:
		k := s.keys.Next(s.r)
		s.read(k)
		s.write(k)
	case workload.MixScan, workload.MixIter:
		if op == workload.MixScan && s.c.Workload == RandomRMWRange && s.c.GlobalScans {
			s.rangeOp(history.Scan, 0, -1, 0)
		}
		lo := s.keys.Next(s.r)
		hi := lo + s.c.MinWidth + s.r.IntN(s.c.MaxWidth-s.c.MinWidth+1)
		limit := 0
		kind := history.Scan
		if op == workload.MixIter {
			kind, limit = history.Iter, 1+s.r.IntN(s.c.MaxIter)
		}
		s.rangeOp(kind, lo, hi, limit)
	}
}

func (s *rsim) read(k int) {
	s.cand = append(s.cand, len(s.cur))
	s.cur = append(s.cur, history.Op{Kind: history.Read, Key: history.KeyID(k), Value: readValue(s.at(k))})
}

func (s *rsim) write(k int) {
	v := s.newValue(k)
	s.set(k, v)
	s.cur = append(s.cur, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: history.IntValue(v)})
}

// rangeOp records a scan (limit 0) or an iterator over [lo, hi); hi < 0 is
// unbounded.
func (s *rsim) rangeOp(kind history.OpKind, lo, hi, limit int) {
	rg := s.newRange()
	rg.Lo = history.IntValue(int64(lo))
	end := s.c.Keys
	if hi < 0 {
		rg.HiOpen = true
	} else {
		rg.Hi = history.IntValue(int64(hi))
		end = min(end, hi)
	}
	buf := s.pairBuf[:0]
	for k := lo; k < end && (limit == 0 || len(buf) < limit); k++ {
		if st := s.at(k); st != absentState {
			buf = append(buf, history.KV{Key: history.KeyID(k), Value: readValue(st)})
		}
	}
	s.pairBuf = buf
	if len(buf) > 0 {
		rg.Pairs = carve(&s.pairSlab, len(buf))
		copy(rg.Pairs, buf)
		s.cand = append(s.cand, len(s.cur))
	}
	s.cur = append(s.cur, history.Op{Kind: kind, Key: history.NoKey, Range: rg})
}

// corrupt plants a fault in one of the running transaction's
// observations: a read, or a non-empty scan or iterator result.
func (s *rsim) corrupt() {
	if len(s.cand) == 0 {
		return
	}
	op := &s.cur[s.cand[s.fr.IntN(len(s.cand))]]
	if op.Kind == history.Read {
		op.Value = s.badValue(int(op.Key), op.Value)
		return
	}
	pairs := op.Range.Pairs
	j := s.fr.IntN(len(pairs))
	k := int(pairs[j].Key)
	// Omit the pair (a present key the scan did not return), or give it
	// a bad value. Omitting an iterator's last pair claims nothing wrong;
	// omitting a pair whose stale state is absent is what a stale scan
	// shows.
	omit := op.Kind == history.Scan || j < len(pairs)-1
	if omit && (s.fr.IntN(2) == 0 || s.prev[k] == absentState && s.ownIdx[k] == 0) {
		copy(pairs[j:], pairs[j+1:])
		op.Range.Pairs = pairs[: len(pairs)-1 : len(pairs)-1]
		if len(op.Range.Pairs) == 0 {
			op.Range.Pairs = nil
		}
		return
	}
	pairs[j].Value = s.badValue(k, pairs[j].Value)
}

// badValue returns a value other than got for an observation of key k: what
// k read as before its last commit (stale), when the transaction did not
// write k and that differs, else a value nobody wrote.
func (s *rsim) badValue(k int, got history.Value) history.Value {
	if s.ownIdx[k] == 0 {
		if v := readValue(s.prev[k]); v != got {
			return v
		}
	}
	s.wrong++
	return history.IntValue(-s.wrong)
}

// install commits the writes and deletes ws.
func (s *rsim) install(ws []ownKV) {
	for _, w := range ws {
		s.prev[w.key] = s.state[w.key]
		s.state[w.key] = w.st
	}
}

// clearOwn forgets the running transaction's writes.
func (s *rsim) clearOwn() {
	for _, w := range s.own {
		s.ownIdx[w.key] = 0
	}
	s.own = s.own[:0]
}

// carve returns n elements carved from *slab, starting a new slab of
// max(slabOps, n) when the current one is full.
func carve[T any](slab *[]T, n int) []T {
	if cap(*slab)-len(*slab) < n {
		*slab = make([]T, 0, max(slabOps, n))
	}
	i := len(*slab)
	*slab = (*slab)[:i+n]
	return (*slab)[i : i+n : i+n]
}

// newRange returns a zeroed range carved from the range slab.
func (s *rsim) newRange() *history.Range {
	if len(s.rangeSlab) == cap(s.rangeSlab) {
		s.rangeSlab = make([]history.Range, 0, 1024)
	}
	s.rangeSlab = s.rangeSlab[:len(s.rangeSlab)+1]
	return &s.rangeSlab[len(s.rangeSlab)-1]
}

// runSerial simulates the serial database: each step, a random session
// runs one transaction to its end and commits it.
func (s *rsim) runSerial() {
	clock := StartInstant
	for range s.c.Txns {
		sess := s.r.IntN(s.c.Sessions)
		begin := clock + serialMinGap + s.r.Int64N(serialMaxGap-serialMinGap)
		end := begin + serialMinDur + s.r.Int64N(serialMaxDur-serialMinDur)
		ops := s.exec()
		s.install(s.own)
		s.clearOwn()
		s.txns = append(s.txns, history.Txn{Session: int32(sess), Begin: begin, End: end, HasTime: true, Ops: ops})
		s.clock.stampSerial(&s.txns[len(s.txns)-1])
		clock = end
	}
}

// runSI simulates the snapshot-isolation database: every session runs one
// transaction at a time; events (begins and commits) are processed in
// instant order, begins on even instants and commits on odd ones. A
// transaction runs entirely at its begin event, against the committed
// state then (its snapshot); at its commit event it aborts if a key it
// writes or deletes was committed since it began, and otherwise installs
// its writes.
func (s *rsim) runSI() {
	n := s.c.Sessions
	ss := make([]session, n)
	pend := make([][]ownKV, n)
	q := &eventQueue{ss: ss, heap: make([]int32, 0, n)}
	for i := range ss {
		ss[i].at = StartInstant + 2*s.r.Int64N(siMaxGap/2)
		q.push(int32(i))
	}
	// lastCommit[k] is the sequence number of the commit that last wrote
	// or deleted k; seq counts commits.
	lastCommit := make([]uint64, s.c.Keys)
	var seq uint64
	odd := func(lo, hi int64) int64 { return (lo/2+s.r.Int64N(hi/2-lo/2))*2 + 1 }
	for len(s.txns) < s.c.Txns {
		i := q.pop()
		se := &ss[i]
		now := se.at
		if !se.inflight {
			se.begin, se.snap = now, seq
			se.startTS = s.clock.tick()
			se.ops = s.exec()
			pend[i] = append(pend[i][:0], s.own...)
			s.clearOwn()
			se.inflight = true
			se.at = now + odd(siMinDur, siMaxDur)
			q.push(i)
			continue
		}
		status := history.Committed
		for _, w := range pend[i] {
			if lastCommit[w.key] > se.snap {
				status = history.Aborted
				break
			}
		}
		if status == history.Committed {
			seq++
			for _, w := range pend[i] {
				lastCommit[w.key] = seq
			}
			s.install(pend[i])
		}
		s.txns = append(s.txns, history.Txn{Session: i, Status: status, Begin: se.begin, End: now, HasTime: true, Ops: se.ops})
		s.clock.stampSI(&s.txns[len(s.txns)-1], se.startTS)
		se.inflight, se.ops = false, nil
		se.at = now + odd(siMinGap, siMaxGap)
		q.push(i)
	}
}

// finish builds the history: ids 1..n in file order, and keys and
// sessions interned in order of first appearance (the initial keys first,
// ascending), which is the order the native reader interns them in.
func (s *rsim) finish() *history.History {
	h := &history.History{
		Header: history.Header{Present: true, Version: 1, UniqueValues: s.uniq, Source: s.c.source()},
		Txns:   s.txns,
	}
	if s.c.Tombstones {
		h.Header.Deletes = history.TombstoneDeletes
	}
	intern := newInterner(h, s.c.Keys)
	if len(s.initial) > 0 {
		h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(s.initial))
		for _, w := range s.initial {
			h.Header.Initial.Values[intern(history.KeyID(w.key))] = history.IntValue(w.st)
		}
	}
	relabel(h, s.c.Sessions, intern)
	return h
}

// A key's state during the simulation: absentState, tombstoneState, or a
// positive value.
const (
	absentState    int64 = 0
	tombstoneState int64 = -1
)
