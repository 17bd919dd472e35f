package saturate

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Checker is the saturation checker, named "saturate".
type Checker struct{}

// Name returns "saturate".
func (Checker) Name() string { return "saturate" }

// Capabilities: none beyond the histories it decides.
func (Checker) Capabilities() checker.Capabilities { return checker.Capabilities{} }

// Plan returns the check of ix at l when Decides accepts it.
func (Checker) Plan(ix *history.Index, l level.Level, _ checker.Options) (checker.Check, error) {
	if err := Decides(ix, l); err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]anomaly.Anomaly, error) { return Check(ctx, ix, l) }, nil
}

// Decides returns nil when the checker is sound and complete for ix's
// history at l: rc-session, read atomic or causal consistency, on a history
// whose transactions that took effect only read and write, with unique
// values (so that every read names its writer). The solver checker decides
// the others.
func Decides(ix *history.Index, l level.Level) error {
	switch l.Axiom {
	case level.AxiomRC, level.AxiomRA, level.AxiomCC:
	default:
		return fmt.Errorf("it decides rc-session, read-atomic and causal, not %s", l.Name)
	}
	return checker.UniqueRegisters(ix)
}

// premise is what put an inferred edge's source t2 before the writer the
// reader read from.
type premise uint8

const (
	// byRead: the reader read from t2 (read beta).
	byRead premise = iota
	// bySession: t2 precedes the reader in its session.
	bySession
	// byPath: t2 reaches the reader by so and wr, not directly.
	byPath
)

// inference is an edge the axiom infers: from before to (Init: the
// initial state), because read (an index of the reads) of key x by
// reader returned to's write while from also writes x; beta is the read
// of from's write behind a byRead premise.
type inference struct {
	from, to, reader history.TxnID
	read, beta       int32
	why              premise
}

// state is one check's view of the history.
type state struct {
	h    *history.History
	ix   *history.Index
	ax   level.Axiom
	n    int
	sess []int32 // session of each transaction
	pos  []int32 // position among its session's transactions that took effect; -1 none
	// bySession lists each session's transactions that took effect, in
	// session order.
	bySession [][]history.TxnID
	// The external reads of each transaction that took effect, in
	// program order: rFirst[t]..rFirst[t+1] index rKey, rWriter and rOp.
	rFirst  []int32
	rKey    []history.KeyID
	rWriter []history.TxnID
	rOp     []int32
	// The keys each transaction writes, sorted: wFirst[t]..wFirst[t+1]
	// index wKey.
	wFirst []int32
	wKey   []history.KeyID
	// readers lists, per writer, the transactions that read from it
	// (each once): rdFirst[w]..rdFirst[w+1] index rd.
	rdFirst []int32
	rd      []history.TxnID
	// topo is a topological order of so ∪ wr over the transactions that
	// took effect, and at each one's index in it.
	topo []history.TxnID
	at   []int32
	// marks is the sequential passes' scratch.
	*marks
	inf []inference
	// warm keeps what the warming loads return (history.Index.Warm,
	// warmSources), so that they stay; added to atomically.
	warm atomic.Uint32
}

// marks are scratch marks by transaction, with the epoch of the reader
// being processed.
type marks struct {
	epoch   uint32
	txnMark []uint32
	first   []int32 // per transaction marked: the reader's first read from it
}

func (s *state) newMarks() *marks {
	return &marks{txnMark: make([]uint32, s.n), first: make([]int32, s.n)}
}

// Check decides ix's history at l (rc-session, read atomic or causal), as
// Decides accepts it, and returns one anomaly per strongly connected
// component of so ∪ wr and the inferred edges. The shared checks have run
// before; reads they refute (thin air, aborted, from the reader itself)
// take no part. It stops with ctx's error when ctx ends.
func Check(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	s := newState(ix, l.Axiom)
	if found, err := s.sessionAndReads(ctx); found != nil || err != nil {
		return found, err
	}
	var err error
	switch l.Axiom {
	case level.AxiomRC:
		err = s.inferRC(ctx)
	case level.AxiomRA:
		err = s.inferRA(ctx)
	default:
		err = s.inferCC(ctx)
	}
	if err != nil {
		return nil, err
	}
	return s.cycles(ctx)
}

// checkEvery is how many transactions the loops process between two looks
// at their context.
const checkEvery = 4096

func newState(ix *history.Index, ax level.Axiom) *state {
	h := ix.History()
	n := len(h.Txns)
	s := &state{h: h, ix: ix, ax: ax, n: n, sess: make([]int32, n), pos: make([]int32, n),
		bySession: make([][]history.TxnID, len(h.Sessions))}
	s.marks = s.newMarks()
	return s
}

// sessionAndReads indexes the history: sessions, external reads and their
// writers, written keys, the readers of each writer, and a topological
// order of so ∪ wr. When so ∪ wr is cyclic it returns the cycles (one per
// strongly connected component): no commit order extends them.
func (s *state) sessionAndReads(ctx context.Context) ([]anomaly.Anomaly, error) {
	h, ix := s.h, s.ix
	s.rFirst = make([]int32, s.n+1)
	s.wFirst = make([]int32, s.n+1)
	nr, nw := 0, 0
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Read {
				nr++
			} else {
				nw++
			}
		}
	}
	s.rKey = make([]history.KeyID, 0, nr)
	s.rWriter = make([]history.TxnID, 0, nr)
	s.rOp = make([]int32, 0, nr)
	s.wKey = make([]history.KeyID, 0, nw)
	indeg := make([]int32, s.n)
	readersOf := make([]int32, s.n+1) // counts, then offsets
	for i := range h.Txns {
		t := history.TxnID(i)
		s.rFirst[i], s.wFirst[i] = int32(len(s.rKey)), int32(len(s.wKey))
		s.pos[i] = -1
		if !ix.Effective(t) {
			continue
		}
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		x := &h.Txns[i]
		s.sess[i], s.pos[i] = x.Session, int32(len(s.bySession[x.Session]))
		if s.pos[i] > 0 {
			indeg[i]++
		}
		s.bySession[x.Session] = append(s.bySession[x.Session], t)
		s.epoch++
		s.warm.Add(ix.Warm(t))
		for j, op := range x.Ops {
			if op.Kind != history.Read {
				continue
			}
			id := ix.ReadFrom(t, j)
			w := history.Init
			switch {
			case id >= 0:
				w = ix.WriteRef(id).Txn
				if w == t || !ix.Effective(w) {
					continue // a future or aborted read: the shared checks say so
				}
			case id == history.NotExternal:
				continue // after the transaction's own write of the key
			case !ix.WrittenInitially(op.Key, op.Value):
				continue // thin air
			}
			s.rKey = append(s.rKey, op.Key)
			s.rWriter = append(s.rWriter, w)
			s.rOp = append(s.rOp, int32(j))
			if w != history.Init && s.txnMark[w] != s.epoch {
				s.txnMark[w] = s.epoch
				indeg[i]++
				readersOf[w+1]++
			}
		}
		start := len(s.wKey)
		for _, op := range x.Ops {
			if op.Kind == history.Write {
				s.wKey = append(s.wKey, op.Key)
			}
		}
		ws := s.wKey[start:]
		slices.Sort(ws)
		s.wKey = s.wKey[:start+len(slices.Compact(ws))]
	}
	s.rFirst[s.n], s.wFirst[s.n] = int32(len(s.rKey)), int32(len(s.wKey))
	for i := range s.n {
		readersOf[i+1] += readersOf[i]
	}
	s.rdFirst = readersOf
	s.rd = make([]history.TxnID, readersOf[s.n])
	fill := slices.Clone(readersOf[:s.n])
	for i := range s.n {
		s.epoch++
		for r := s.rFirst[i]; r < s.rFirst[i+1]; r++ {
			if w := s.rWriter[r]; w != history.Init && s.txnMark[w] != s.epoch {
				s.txnMark[w] = s.epoch
				s.rd[fill[w]] = history.TxnID(i)
				fill[w]++
			}
		}
	}
	// Kahn's algorithm over so ∪ wr.
	s.topo = make([]history.TxnID, 0, s.n)
	s.at = make([]int32, s.n)
	effective := 0
	for i := range s.n {
		if s.pos[i] >= 0 {
			effective++
			if indeg[i] == 0 {
				s.topo = append(s.topo, history.TxnID(i))
			}
		}
	}
	for head := 0; head < len(s.topo); head++ {
		t := s.topo[head]
		s.at[t] = int32(head)
		release := func(u history.TxnID) {
			if indeg[u]--; indeg[u] == 0 {
				s.topo = append(s.topo, u)
			}
		}
		if next := s.pos[t] + 1; int(next) < len(s.bySession[s.sess[t]]) {
			release(s.bySession[s.sess[t]][next])
		}
		for _, u := range s.rd[s.rdFirst[t]:s.rdFirst[t+1]] {
			release(u)
		}
	}
	if len(s.topo) == effective {
		return nil, nil
	}
	g := s.graph(false)
	return dsg.FindCycles(ctx, h, g, graph.AllLabels, s.node)
}

// node maps a graph node to its transaction (the last node is the initial
// state).
func (s *state) node(v int32) (history.TxnID, bool) {
	if int(v) == s.n {
		return history.Init, true
	}
	return history.TxnID(v), true
}

// initNode is the initial state's node.
func (s *state) initNode() int32 { return int32(s.n) }

// graph builds so ∪ wr, with the inferred edges (labelled ww, their data
// the inference's index) and the initial state's edges when withInferred.
func (s *state) graph(withInferred bool) *graph.Graph {
	hint := 2*s.n + len(s.rd)
	if withInferred {
		hint += 2 * len(s.inf)
	}
	b := graph.NewBuilder(s.n+1, hint)
	for _, txns := range s.bySession {
		for i := 1; i < len(txns); i++ {
			b.Add(int32(txns[i-1]), int32(txns[i]), dsg.Label(anomaly.SO), int32(history.NoKey))
		}
	}
	for w := range s.n {
		for _, u := range s.rd[s.rdFirst[w]:s.rdFirst[w+1]] {
			b.Add(int32(w), int32(u), dsg.Label(anomaly.WR), int32(s.keyReadFrom(u, history.TxnID(w))))
		}
	}
	if withInferred {
		first := map[history.TxnID]bool{}
		for i, f := range s.inf {
			to := int32(f.to)
			if f.to == history.Init {
				to = s.initNode()
				if !first[f.from] {
					first[f.from] = true
					b.Add(s.initNode(), int32(f.from), dsg.Label(anomaly.SO), int32(history.NoKey))
				}
			}
			b.Add(int32(f.from), to, dsg.Label(anomaly.WW), int32(i))
		}
	}
	return b.Build()
}

// rdIn returns how many transactions t read from.
func (s *state) rdIn(t history.TxnID) int32 {
	s.epoch++
	n := int32(0)
	for r := s.rFirst[t]; r < s.rFirst[t+1]; r++ {
		if w := s.rWriter[r]; w != history.Init && s.txnMark[w] != s.epoch {
			s.txnMark[w] = s.epoch
			n++
		}
	}
	return n
}

// keyReadFrom returns the first key reader read from w.
func (s *state) keyReadFrom(reader, w history.TxnID) history.KeyID {
	for r := s.rFirst[reader]; r < s.rFirst[reader+1]; r++ {
		if s.rWriter[r] == w {
			return s.rKey[r]
		}
	}
	return history.NoKey
}

// writes returns the keys t writes, sorted.
func (s *state) writes(t history.TxnID) []history.KeyID { return s.wKey[s.wFirst[t]:s.wFirst[t+1]] }

// parallelReads is how many reads make the inferences of read committed
// and read atomic split their work across the processors.
const parallelReads = 1 << 16

// inParts runs infer on parts of the sessions (balanced by their reads), on
// as many goroutines as there are processors (at most 4) when the history
// is large, each with scratch of its own, and joins what they infer in
// session order. A part stops when ctx ends.
func (s *state) inParts(ctx context.Context, infer func(ctx context.Context, sessions [][]history.TxnID) []inference) error {
	parts := min(runtime.GOMAXPROCS(0), 4)
	if len(s.rKey) < parallelReads || parts < 2 {
		parts = 1
	}
	// Cut the sessions where the running count of reads passes each
	// part's share.
	cuts := []int{0}
	total, share := 0, (len(s.rKey)+parts-1)/parts
	for i, txns := range s.bySession {
		for _, t := range txns {
			total += int(s.rFirst[t+1] - s.rFirst[t])
		}
		if total >= share*len(cuts) && len(cuts) < parts {
			cuts = append(cuts, i+1)
		}
	}
	cuts = append(cuts, len(s.bySession))
	out := make([][]inference, len(cuts)-1)
	var wg sync.WaitGroup
	for p := range out {
		wg.Go(func() { out[p] = infer(ctx, s.bySession[cuts[p]:cuts[p+1]]) })
	}
	wg.Wait()
	n := 0
	for _, o := range out {
		n += len(o)
	}
	s.inf = make([]inference, 0, n)
	for _, o := range out {
		s.inf = append(s.inf, o...)
	}
	return ctx.Err()
}

// inferRC infers read committed's edges: for each reader, its reads in
// program order; a read of x from t1 takes an edge from every transaction
// read earlier that writes x, and then t1 stands for them.
func (s *state) inferRC(ctx context.Context) error {
	return s.inParts(ctx, func(ctx context.Context, sessions [][]history.TxnID) []inference {
		var inf []inference
		var rd reader
		var head []int32 // per key read (its position in rd.keys): a list in nodes
		type node struct {
			t    history.TxnID
			beta int32
			next int32
		}
		var nodes []node
		var shared []int32
		var warm uint32
		defer func() { s.warm.Add(warm) }()
		done := 0
		for _, txns := range sessions {
			for _, t3 := range txns {
				if done++; done%checkEvery == 0 && ctx.Err() != nil {
					return nil
				}
				lo, hi := s.rFirst[t3], s.rFirst[t3+1]
				if lo == hi {
					continue
				}
				warm += s.warmSources(lo, hi)
				s.load(&rd, t3)
				head = minusOnes(head, len(rd.keys))
				nodes = nodes[:0]
				push := func(x int32, t history.TxnID, beta int32) {
					nodes = append(nodes, node{t, beta, head[x]})
					head[x] = int32(len(nodes) - 1)
				}
				for r := lo; r < hi; r++ {
					x, t1 := rd.at[r-lo], s.rWriter[r]
					for p := head[x]; p >= 0; p = nodes[p].next {
						if t2 := nodes[p].t; t2 != t1 {
							inf = append(inf, inference{from: t2, to: t1, reader: t3, read: r, beta: nodes[p].beta, why: byRead})
						}
					}
					head[x] = -1
					if t1 == history.Init {
						continue
					}
					if first, ok := rd.src.Get(int32(t1)); ok {
						push(x, t1, first)
						continue
					}
					rd.src.Put(int32(t1), r)
					shared = s.common(&rd, t1, shared)
					for _, k := range shared {
						push(k, t1, r)
					}
				}
			}
		}
		return inf
	})
}

// minusOnes returns a of length n (reusing its memory), every element -1.
func minusOnes(a []int32, n int) []int32 {
	a = slices.Grow(a[:0], n)[:n]
	for i := range a {
		a[i] = -1
	}
	return a
}

// lastWrite is, per key, the last writer of the key in the session being
// processed, valid when session is that session's epoch.
type lastWrite struct {
	t       history.TxnID
	session uint32
}

// inferRA infers read atomic's edges: from every transaction a reader read
// from to the writer of each key it read that the transaction also
// writes, and from the last writer of the key earlier in the reader's
// session.
func (s *state) inferRA(ctx context.Context) error {
	// Per key a reader reads: its reads, chained (one per writer); the
	// reads are the parts' own, so one array serves them all.
	next := make([]int32, len(s.rKey))
	return s.inParts(ctx, func(ctx context.Context, sessions [][]history.TxnID) []inference {
		inf := make([]inference, 0, len(s.rKey)/4)
		var rd reader
		var head []int32                         // per key read (its position in rd.keys)
		last := make([]lastWrite, len(s.h.Keys)) // per key: the session's last writer so far
		var shared []int32
		var sessEpoch uint32
		var warm uint32
		defer func() { s.warm.Add(warm) }()
		done := 0
		for _, txns := range sessions {
			sessEpoch++
			for _, t3 := range txns {
				if done++; done%checkEvery == 0 && ctx.Err() != nil {
					return nil
				}
				lo, hi := s.rFirst[t3], s.rFirst[t3+1]
				warm += s.warmSources(lo, hi)
				s.load(&rd, t3)
				head = minusOnes(head, len(rd.keys))
				for r := lo; r < hi; r++ {
					x, t1 := rd.at[r-lo], s.rWriter[r]
					dup := false
					for q := head[x]; q >= 0; q = next[q] {
						dup = dup || s.rWriter[q] == t1
					}
					if !dup {
						next[r], head[x] = head[x], r
					}
				}
				for i, k := range rd.keys {
					l := last[k]
					if l.session != sessEpoch {
						continue
					}
					for q := head[i]; q >= 0; q = next[q] {
						if t1 := s.rWriter[q]; l.t != t1 {
							inf = append(inf, inference{from: l.t, to: t1, reader: t3, read: q, beta: -1, why: bySession})
						}
					}
				}
				for r := lo; r < hi; r++ {
					t2 := s.rWriter[r]
					if t2 == history.Init {
						continue
					}
					if _, ok := rd.src.Get(int32(t2)); ok {
						continue
					}
					rd.src.Put(int32(t2), r)
					shared = s.common(&rd, t2, shared)
					for _, k := range shared {
						for q := head[k]; q >= 0; q = next[q] {
							if w := s.rWriter[q]; w != t2 {
								inf = append(inf, inference{from: t2, to: w, reader: t3, read: q, beta: r, why: byRead})
							}
						}
					}
				}
				for _, k := range s.writes(t3) {
					last[k] = lastWrite{t3, sessEpoch}
				}
			}
		}
		return inf
	})
}
