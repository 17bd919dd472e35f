package gen

import (
	"math/rand/v2"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// sim is one simulation: the database state and the history it records.
// Until finish, an op's Key holds the raw key number and a transaction's
// Session the raw session number.
type sim struct {
	c    Config
	r    *rand.Rand
	keys workload.KeyChooser
	// state[k] is the committed value of key k, 0 when absent; counter[k]
	// is the last value handed out for k (values start at 1).
	state, counter []int64
	txns           []history.Txn
	slab           []history.Op
	// plantKeys and plantSessions count the fresh keys and sessions the
	// planted groups took.
	plantKeys, plantSessions int
	// clock hands out database timestamps when Config.Timestamps is set.
	clock tsClock
	// fences says when a session runs a fence; work counts the workload
	// transactions recorded (fences and planted groups come on top).
	fences fencer
	work   int
}

// fenceKeys is how many keys fences take: the fence key, raw number
// Config.Keys, when fences are on.
func fenceKeys(every int) int {
	if every > 0 {
		return 1
	}
	return 0
}

func (s *sim) nextKey() int     { return s.c.Keys + fenceKeys(s.c.FenceEvery) + s.plantKeys }
func (s *sim) nextSession() int { return s.c.Sessions + s.plantSessions }

// slabOps is how many operations one slab holds.
const slabOps = 1 << 14

// ops returns n zeroed operations carved from the current slab.
func (s *sim) ops(n int) []history.Op { return carve(&s.slab, n) }

// spec is what a transaction does: a shape of the workload catalogue
// (workload.MTShapes) over one or two keys. A retry repeats its spec.
type spec struct {
	tmpl  uint8
	fence bool
	keys  [2]int32
}

// fenceSpec is a fence: read the fence key, then write it.
func (s *sim) fenceSpec() spec { return spec{fence: true} }

// newSpec draws a mini-transaction (workload.DrawMT): read-only with
// probability ReadOnlyRatio, over one or two distinct keys with equal
// probability.
func (s *sim) newSpec() spec {
	shape, k := workload.DrawMT(s.r, s.keys, s.c.Keys, s.c.ReadOnlyRatio)
	return spec{tmpl: uint8(shape), keys: [2]int32{int32(k[0]), int32(k[1])}}
}

func value(v int64) history.Value {
	if v == 0 {
		return history.NullValue
	}
	return history.IntValue(v)
}

// run builds sp's operations against the committed state: reads return it,
// writes take the next value of their key's counter. The writes are not
// installed.
func (s *sim) run(sp spec) []history.Op {
	if sp.fence {
		k := s.c.Keys
		ops := s.ops(2)
		s.counter[k]++
		ops[0] = history.Op{Kind: history.Read, Key: history.KeyID(k), Value: value(s.state[k])}
		ops[1] = history.Op{Kind: history.Write, Key: history.KeyID(k), Value: history.IntValue(s.counter[k])}
		return ops
	}
	steps := workload.MTShapes[sp.tmpl]
	ops := s.ops(len(steps))
	for i, st := range steps {
		k := sp.keys[st.Slot]
		op := &ops[i]
		op.Key = history.KeyID(k)
		if st.Write {
			s.counter[k]++
			op.Kind, op.Value = history.Write, history.IntValue(s.counter[k])
		} else {
			op.Kind, op.Value = history.Read, value(s.state[k])
		}
	}
	return ops
}

// install commits ops' writes.
func (s *sim) install(ops []history.Op) {
	for _, op := range ops {
		if op.Kind == history.Write {
			s.state[op.Key] = op.Value.N
		}
	}
}

// between returns a random instant offset in [lo, hi).
func (s *sim) between(lo, hi int64) int64 { return lo + s.r.Int64N(hi-lo) }

// The serial database's timing, in nanoseconds: a transaction takes 20–200
// µs, and 2–50 µs pass between two transactions: room for the planted
// groups, whose windows last a few tens of nanoseconds.
const (
	serialMinDur, serialMaxDur = 20_000, 200_000
	serialMinGap, serialMaxGap = 2_000, 50_000
)

// runSerial simulates the serial database: each step, a random session
// runs one transaction to its end, reading and writing the committed state.
func (s *sim) runSerial() {
	clock := StartInstant
	for range s.c.Txns {
		sess := s.r.IntN(s.c.Sessions)
		if s.fences.due(sess) {
			begin := clock + s.between(serialMinGap, serialMaxGap)
			end := begin + s.between(serialMinDur, serialMaxDur)
			ops := s.run(s.fenceSpec())
			s.install(ops)
			s.txns = append(s.txns, history.Txn{Session: int32(sess), Status: history.Committed, Begin: begin, End: end, HasTime: true, Ops: ops})
			s.clock.stampSerial(&s.txns[len(s.txns)-1])
			s.fences.ended(sess, true, true)
			clock = end
		}
		sp := s.newSpec()
		begin := clock + s.between(serialMinGap, serialMaxGap)
		end := begin + s.between(serialMinDur, serialMaxDur)
		ops := s.run(sp)
		status := history.Committed
		if s.r.Float64() < s.c.AbortRatio {
			status = history.Aborted
		} else {
			s.install(ops)
		}
		s.txns = append(s.txns, history.Txn{Session: int32(sess), Status: status, Begin: begin, End: end, HasTime: true, Ops: ops})
		s.clock.stampSerial(&s.txns[len(s.txns)-1])
		s.fences.ended(sess, false, false)
		clock = end
	}
}

// The snapshot-isolation database's timing, in nanoseconds: a transaction
// takes 20–200 µs and its session waits 1–100 µs before the next one.
// Begins fall on even instants and ends on odd ones, so that no
// transaction begins at the instant another ends.
const (
	siMinDur, siMaxDur = 20_000, 200_000
	siMinGap, siMaxGap = 1_000, 100_000
)

// odd returns a random odd offset in [lo, hi).
func (s *sim) odd(lo, hi int64) int64 { return s.between(lo/2, hi/2)*2 + 1 }

// session is one client of the snapshot-isolation database.
type session struct {
	at       int64 // the instant of its next event
	inflight bool  // the next event is the commit of a running transaction
	retry    bool  // the next transaction retries sp
	sp       spec
	begin    int64
	snap     uint64 // commits before the transaction began
	ops      []history.Op
	abort    bool   // the client aborts the running transaction
	startTS  uint64 // the database's start timestamp, with timestamps on
}

// runSI simulates the snapshot-isolation database: every session runs one
// transaction at a time; events (begins and commits) are processed in
// instant order. A transaction reads at its begin event; at its commit
// event it aborts if the client chose to, or if a key it writes was
// committed by another transaction since it began (first committer wins,
// and the session retries); otherwise its writes are installed.
func (s *sim) runSI() {
	n := s.c.Sessions
	ss := make([]session, n)
	q := &eventQueue{ss: ss, heap: make([]int32, 0, n)}
	for i := range ss {
		ss[i].at = StartInstant + 2*s.r.Int64N(siMaxGap/2)
		q.push(int32(i))
	}
	// lastCommit[k] is the commit sequence number of k's last committed
	// write; seq counts commits.
	lastCommit := make([]uint64, s.c.Keys+fenceKeys(s.c.FenceEvery))
	var seq uint64
	for s.work < s.c.Txns {
		i := q.pop()
		se := &ss[i]
		now := se.at
		if !se.inflight {
			if !se.retry {
				if s.fences.due(int(i)) {
					se.sp = s.fenceSpec()
				} else {
					se.sp = s.newSpec()
				}
			}
			se.begin, se.snap = now, seq
			se.startTS = s.clock.tick()
			se.ops = s.run(se.sp)
			se.abort = !se.sp.fence && s.r.Float64() < s.c.AbortRatio
			se.inflight = true
			se.at = now + s.odd(siMinDur, siMaxDur)
			q.push(i)
			continue
		}
		status := history.Committed
		se.retry = false
		switch {
		case se.abort:
			status = history.Aborted
		case s.conflicts(se.ops, lastCommit, se.snap):
			status = history.Aborted
			se.retry = true
		default:
			seq++
			for _, op := range se.ops {
				if op.Kind == history.Write {
					s.state[op.Key] = op.Value.N
					lastCommit[op.Key] = seq
				}
			}
		}
		s.txns = append(s.txns, history.Txn{Session: i, Status: status, Begin: se.begin, End: now, HasTime: true, Ops: se.ops})
		s.clock.stampSI(&s.txns[len(s.txns)-1], se.startTS)
		s.fences.ended(int(i), se.sp.fence, status == history.Committed)
		if !se.sp.fence {
			s.work++
		}
		se.inflight, se.ops = false, nil
		se.at = now + s.odd(siMinGap, siMaxGap)
		q.push(i)
	}
}

// conflicts reports whether a key ops writes was committed after snapshot
// snap.
func (s *sim) conflicts(ops []history.Op, lastCommit []uint64, snap uint64) bool {
	for _, op := range ops {
		if op.Kind == history.Write && lastCommit[op.Key] > snap {
			return true
		}
	}
	return false
}

// eventQueue is a binary min-heap of sessions by their next event: earlier
// instant first, then commits before begins, then lower session.
type eventQueue struct {
	ss   []session
	heap []int32
}

func (q *eventQueue) less(a, b int32) bool {
	x, y := &q.ss[a], &q.ss[b]
	if x.at != y.at {
		return x.at < y.at
	}
	if x.inflight != y.inflight {
		return x.inflight
	}
	return a < b
}

func (q *eventQueue) push(i int32) {
	h := append(q.heap, i)
	j := len(h) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !q.less(h[j], h[p]) {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
	q.heap = h
}

func (q *eventQueue) pop() int32 {
	h := q.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	j := 0
	for {
		l := 2*j + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && q.less(h[r], h[l]) {
			m = r
		}
		if !q.less(h[m], h[j]) {
			break
		}
		h[j], h[m] = h[m], h[j]
		j = m
	}
	q.heap = h
	return top
}
