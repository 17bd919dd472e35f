// Package aion checks snapshot isolation and serializability online, by
// the database's timestamps (Li, Wei et al., "Online Timestamp-based
// Transactional Isolation Checking of Database Systems", §III-C,
// Algorithm 3: Aion, and Aion-SER).
//
// A Checker accepts committed transactions that carry start_ts and
// commit_ts, in batches, in any order, and checks the axioms Chronos
// (internal/check/chronos) checks offline: Session, Int, Ext and
// NoConflict under snapshot isolation; under serializability every
// transaction must read the state the commits before its commit_ts left.
// Its final findings are the ones Chronos reports on the same history:
// the same kinds, transactions, operations and phenomena.
//
// Arrival out of timestamp order is what makes it online. The frontier
// and the ongoing writers are versioned by timestamp: each key keeps its
// committed versions in commit order (the frontier at any timestamp is a
// binary search away), and the ongoing writers of a key at a timestamp are
// the versions whose [start, commit] interval holds it. When a transaction
// T arrives, exactly what the paper's correctness argument (its Appendix
// A-B) names is re-checked: nothing for transactions that committed before
// T started; NoConflict for those overlapping T; Ext for those whose
// snapshot now sees T's write of a key — the readers of each key T writes
// whose snapshot lies between T's commit and the next version of that key
// (of a list key: every later reader, since a list's state accumulates;
// lists.go). Int never changes; Session is checked when a transaction arrives, against
// the previous transaction of its session to arrive (the session order is
// the arrival order within a session, as the paper assumes).
//
// Key-value and list-append histories are checked, as Chronos checks them;
// a key is a value or a list, never both, and scans and iterators are
// refused.
//
// A NoConflict, Session or Int violation is final at once: no later
// arrival undoes it. Under SER, two writers of a key with one commit_ts
// are reported when the second arrives; with three or more, the pairs
// named are those adjacent at each arrival, where Chronos names those
// adjacent in its replay (the same writers, other pairs). An Ext verdict is not: a late writer can justify a
// read or make it stale. It stays pending for Config.Timeout (default 5 s,
// by Config.Clock) after its transaction arrived, and is final after; each
// change of a pending verdict between "violates" and "holds" is a
// flip-flop (Stats.FlipFlops). A late arrival re-checks no transaction
// whose verdict is final (the paper's rule).
//
// Memory: with Config.MemoryBound set, when the checker's own estimate of
// its state passes the bound, it moves the transactions whose verdict is
// final and that committed below a watermark, and the versions no snapshot
// at or above the watermark can see, to a Store (bytes in the checker's
// own encoding, kept where the caller likes: the service keeps them in
// files), and reloads them when a transaction arrives that starts below a
// watermark it spilled at. A list key's versions and its element index
// stay in memory: they are its state.
package aion

import (
	"bufio"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// DefaultTimeout is how long an Ext verdict stays pending by default, the
// paper's 5 seconds.
const DefaultTimeout = 5 * time.Second

// Config sets up a Checker.
type Config struct {
	// Serializable checks serializability in commit-timestamp order
	// (Aion-SER) instead of snapshot isolation.
	Serializable bool
	// Timeout is how long an Ext verdict stays pending after its
	// transaction arrived; DefaultTimeout when zero.
	Timeout time.Duration
	// Clock tells the time; time.Now when nil. Tests inject their own.
	Clock func() time.Time
	// MemoryBound is the number of bytes the checker's estimate of its
	// in-memory state may reach before it spills to Store; 0 for no bound.
	MemoryBound int64
	// Store receives what is spilled; required when MemoryBound is set.
	Store Store
	// Initial holds the initial values of keys, by key; other keys start
	// absent.
	Initial map[history.Value]history.Value
	// Axioms says which axioms the checker checks: all of them (the
	// zero value), or one part of them, for a checker of a shard.
	Axioms Axioms
}

// Axioms names a part of the axioms. A history's transactions can be cut
// into pieces — one per group of keys, with the operations on those keys,
// and one per transaction for its session — each piece carrying its
// transaction's id, session and timestamps; checkers of KeyAxioms over the
// key pieces (each group to one checker) and of SessionAxioms over the
// session pieces report together what one checker of AllAxioms reports
// over the whole transactions.
type Axioms uint8

// The parts of the axioms.
const (
	// AllAxioms checks Session, Int, Ext and NoConflict (and, under
	// serializability, the order of a key's writers).
	AllAxioms Axioms = iota
	// KeyAxioms checks the axioms that concern keys — Int, Ext,
	// NoConflict and Aion-SER's order of a key's writers — and not the
	// Session axiom nor a commit_ts below start_ts.
	KeyAxioms
	// SessionAxioms checks the Session axiom and a commit_ts below
	// start_ts only: a transaction's operations are ignored (and an
	// aborted one's writes not remembered).
	SessionAxioms
)

// Violation is one final finding. Anomaly names transactions and keys of
// History, a small history that holds just the transactions involved
// (their ids, sessions, timestamps and, where the checker still had them,
// operations), so that internal/report explains it as it explains
// Chronos's findings.
type Violation struct {
	Anomaly anomaly.Anomaly
	History *history.History
	// At is when the finding became final, by the checker's clock.
	At time.Time
}

// Stats counts what a Checker has done.
type Stats struct {
	// Checked counts committed transactions accepted; Skipped the aborted
	// and unknown ones, which take no effect here.
	Checked, Skipped uint64
	// Pending is the number of transactions whose Ext verdict is not final.
	Pending int
	// Violations counts final violations, by kind.
	Violations map[anomaly.Kind]uint64
	// FlipFlops counts changes of pending Ext verdicts.
	FlipFlops uint64
	// InMemory is the number of transactions held in memory; Memory the
	// checker's estimate of its state, in bytes.
	InMemory int
	Memory   int64
	// Segments and Spilled are the spilled segments and the transactions
	// they hold; Spills and Reloads count the moves.
	Segments, Spilled int
	Spills, Reloads   uint64
}

// Checker is an online Aion checker. It is not safe for concurrent use:
// one goroutine owns it.
type Checker struct {
	cfg     Config
	ser     bool
	timeout int64

	keys    []history.Value
	keyInit []history.Value
	// keyInt finds the integer keys (most keys: a map of integers is a
	// fraction of the cost of one of values), keyIdx the others.
	keyInt map[int64]int32
	keyIdx map[history.Value]int32
	ks     []keyState

	sessLabel []history.Value
	sessIdx   map[history.Value]int32
	sessLast  []party

	byID txnTable
	// nextSeq numbers the next committed transaction to arrive; finalSeq
	// is the seq of the first one whose verdict is not final.
	nextSeq, finalSeq uint64
	// now is the clock at the current batch's arrival.
	now int64
	// seenInt and seenStr are the ids of the batch being validated;
	// growing says that its committed transactions' ids are integers in
	// increasing order, when they need no such set.
	growing bool
	seenInt map[int64]struct{}
	seenStr map[string]struct{}
	// kinds holds each key's kind (kvKey, listKey, or 0 before an
	// operation says); batchKinds the kinds the batch being validated
	// gives the keys of batchKeys.
	kinds, batchKinds []uint8
	batchKeys         []int32
	// apps finds the committed transaction that appended each element of
	// each list key (the first to arrive).
	apps map[asideKey]appender
	// lists says some key is a list.
	lists bool
	// seed seeds the hashes of the spilled segments' filters.
	seed  maphash.Seed
	queue []*txn // pending Ext verdicts, in arrival order (deadline order)
	qhead int
	// finals are the transactions in memory whose verdict is final (with a
	// memory bound only: spilling alone reads them), in
	// the order it became final (the order they are spilled in).
	finals []*txn
	fhead  int

	segs []segMeta
	maxW uint64 // the highest watermark of a segment still spilled
	// nextSeg is the id of the next spilled segment; segBuf is the
	// scratch space of a segment's encoding on its way to the store, and
	// segReader buffers one on its way back.
	nextSeg   int64
	segBuf    []byte
	segReader *bufio.Reader
	mem       int64
	nextGC    int64

	found []Violation
	stats Stats
	// repeats finds duplicate elements in the list reads of the batch
	// being added (chronos.DuplicateElement); Add starts it afresh for
	// each batch, so that it keeps no batch's lists alive past the next.
	repeats history.Repeats

	// addKeys holds the keys the arriving transaction writes; scratchKeys
	// those of a conflict's first writer.
	addKeys, scratchKeys []int32
	// ops and enc are scratch space for the arriving transaction's
	// operations, decoded and encoded.
	ops []op
	enc []byte
	// txns and encs are the slabs the records of transactions and their
	// encoded operations are cut from (newTxn, encBytes).
	txns     []txn
	encs     []byte
	partners []*txn
	at       []int
	// readers counts reader entries held; pendingReads those of
	// transactions whose verdict is pending (the others are dead, dropped
	// when their list fills up or by the next sweep).
	readers, pendingReads int64
	// srcH is the history the last batch came from; srcKeys and srcSess
	// map its key and session ids to the checker's (+1; 0 for unknown).
	srcH    *history.History
	srcKeys []int32
	srcSess []int32
	// aside holds the writes of transactions set aside (aborted, or of
	// unknown outcome), first writer of each (key, value), at most
	// maxAside of them (the oldest go first): a read no committed writer
	// explains is an aborted read when an aborted transaction wrote its
	// value, and no verdict at all when one of unknown outcome did (it may
	// have committed).
	aside recent[asideWrite]
	// inter holds committed transactions' intermediate writes (see
	// indexIntermediate), in the same way.
	inter recent[intermediate]
	// lastWrite is indexIntermediate's scratch space.
	lastWrite map[int32]int32
	// deadTie is set by cmpReader when it met a final reader it could not
	// order.
	deadTie bool
	// err is the first failure of the store: the checker stops there.
	err error
}

// New returns a checker for cfg.
func New(cfg Config) (*Checker, error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("aion: negative timeout %s", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.MemoryBound < 0 {
		return nil, fmt.Errorf("aion: negative memory bound %d", cfg.MemoryBound)
	}
	if cfg.Axioms > SessionAxioms {
		return nil, fmt.Errorf("aion: unknown part of the axioms %d", cfg.Axioms)
	}
	if cfg.MemoryBound > 0 && cfg.Store == nil {
		return nil, errors.New("aion: a memory bound needs a store to spill to")
	}
	c := &Checker{
		cfg: cfg, ser: cfg.Serializable, timeout: int64(cfg.Timeout),
		keyInt:  make(map[int64]int32),
		keyIdx:  make(map[history.Value]int32),
		sessIdx: make(map[history.Value]int32),
		byID:    newTxnTable(),
		seenInt: map[int64]struct{}{},
		seenStr: map[string]struct{}{},
		apps:    map[asideKey]appender{},
	}
	c.stats.Violations = map[anomaly.Kind]uint64{}
	c.seed = maphash.MakeSeed()
	c.nextGC = cfg.MemoryBound
	return c, nil
}

// Add checks a batch of transactions of src (whose key table and session
// labels their KeyIDs and Session index), in any order relative to
// earlier batches; within a session, the order of arrival is the session
// order. It first validates the whole batch — every committed transaction
// carries both timestamps, only reads, writes and deletes, an id not seen
// among the transactions in memory — and returns an error naming the first
// bad transaction (its id and input line) without checking any; then it
// checks them, and finalizes the Ext verdicts whose timeout has passed.
// A batch refused as bad input returns an *InputError.
func (c *Checker) Add(src *history.History, txns []history.Txn) error {
	if c.err != nil {
		return c.err
	}
	clear(c.seenInt)
	clear(c.seenStr)
	c.repeats = history.Repeats{}
	for _, k := range c.batchKeys {
		c.batchKinds[k] = 0
	}
	c.batchKeys = c.batchKeys[:0]
	c.growing = growing(txns)
	for i := range txns {
		if err := c.validate(src, &txns[i]); err != nil {
			return &InputError{Index: i, Err: err}
		}
	}
	c.now = c.cfg.Clock().UnixNano()
	for i := range txns {
		t := &txns[i]
		if t.Status != history.Committed {
			c.stats.Skipped++
			if c.cfg.Axioms != SessionAxioms {
				c.setAside(src, t)
			}
			continue
		}
		c.add(c.convert(src, t))
	}
	return c.Advance()
}

// Advance finalizes the Ext verdicts whose timeout has passed by the
// clock, and spills when memory is over the bound. It returns the store's
// failure, after which the checker accepts nothing more.
func (c *Checker) Advance() error {
	if c.err != nil {
		return c.err
	}
	c.expire(c.cfg.Clock().UnixNano())
	if err := c.maybeGC(); err != nil {
		c.err = err
	}
	return c.err
}

// Finish finalizes every pending Ext verdict now, as if its timeout had
// passed: for the end of a finite history, or a shutdown that wants
// verdicts rather than pending ones. It returns the store's failure, if
// one stopped the checker.
func (c *Checker) Finish() error {
	if c.err != nil {
		return c.err
	}
	c.expire(math.MaxInt64)
	return c.err
}

// Take returns the final violations found since the last call.
func (c *Checker) Take() []Violation {
	out := c.found
	c.found = nil
	return out
}

// Stats returns the counters.
func (c *Checker) Stats() Stats {
	s := c.stats
	s.Violations = make(map[anomaly.Kind]uint64, len(c.stats.Violations))
	for k, n := range c.stats.Violations {
		s.Violations[k] = n
	}
	s.Pending = len(c.queue) - c.qhead
	s.InMemory = c.byID.len()
	s.Memory = c.mem
	s.Segments = len(c.segs)
	s.Spilled = 0
	for _, m := range c.segs {
		s.Spilled += m.txns
	}
	return s
}

// Pending returns the Ext violations that stand now but are not final:
// what a shutdown leaves undecided.
func (c *Checker) Pending() []Violation {
	var out []Violation
	now := c.cfg.Clock()
	for _, t := range c.queue[c.qhead:] {
		if t.bad > 0 {
			for _, a := range c.extFindings(t) {
				out = append(out, Violation{Anomaly: a.Anomaly, History: a.History, At: now})
			}
		}
	}
	return out
}

// report records a final finding.
func (c *Checker) report(v Violation) {
	v.At = c.cfg.Clock()
	c.found = append(c.found, v)
	c.stats.Violations[v.Anomaly.Kind]++
}
