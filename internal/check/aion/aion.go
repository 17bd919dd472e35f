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
	"slices"
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

// maxAside bounds the set-aside writes a checker remembers.
const maxAside = 1 << 20

// asideKey is a key (the checker's id) and a value written to it.
type asideKey struct {
	key int32
	val history.Value
}

// asideWrite is the transaction set aside that wrote an asideKey.
type asideWrite struct {
	id     history.Value
	status history.Status
	op     int32
}

// setAside remembers the writes of t, a transaction that did not commit
// (or whose outcome is unknown), of history src.
func (c *Checker) setAside(src *history.History, t *history.Txn) {
	for j, o := range t.Ops {
		if !o.Kind.IsWrite() || o.Key < 0 || int(o.Key) >= len(src.Keys) {
			continue
		}
		v := o.Value
		if o.Kind == history.Delete {
			v = history.NullValue
		}
		c.mem += c.aside.add(asideKey{c.srcKey(src, o.Key), v}, asideWrite{t.ID, t.Status, int32(j)})
	}
}

// recent maps (key, value) pairs to what was remembered of their first
// writer, for the last maxAside pairs: older ones are forgotten.
type recent[V any] struct {
	m     map[asideKey]V
	order []asideKey
	head  int
}

// get returns what is remembered of k.
func (r *recent[V]) get(k asideKey) (V, bool) {
	v, ok := r.m[k]
	return v, ok
}

// recentBytes estimates a pair's memory in a recent map.
const recentBytes = 112

// add remembers v for k unless k is remembered, forgetting the oldest
// pair past maxAside, and returns the bytes the map grew by (estimated).
func (r *recent[V]) add(k asideKey, v V) int64 {
	if _, ok := r.m[k]; ok {
		return 0
	}
	if r.m == nil {
		r.m = map[asideKey]V{}
	}
	r.m[k] = v
	r.order = append(r.order, k)
	if len(r.order)-r.head > maxAside {
		delete(r.m, r.order[r.head])
		r.head++
		if r.head > maxAside {
			r.order = append(r.order[:0], r.order[r.head:]...)
			r.head = 0
		}
		return 0
	}
	return recentBytes
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

// InputError is Add's error for a batch refused as bad input: nothing of
// the batch was checked, and the checker goes on. Any other error from Add
// is the store's failure, which stops the checker.
type InputError struct {
	// Index is the refused transaction's index in the batch.
	Index int
	// Err says what is wrong with it, naming its id and input line.
	Err error
}

// Error says what is wrong with the transaction.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns e.Err.
func (e *InputError) Unwrap() error { return e.Err }

// validate checks t before anything of its batch is applied: CheckInput,
// and an id not seen in the batch or among the transactions in memory.
func (c *Checker) validate(src *history.History, t *history.Txn) error {
	if err := CheckInput(src, t); err != nil || t.Status != history.Committed {
		return err
	}
	dup := c.byID.get(t.ID) != nil
	switch {
	case c.growing: // no id of the batch repeats another
	case t.ID.Kind == history.String:
		_, seen := c.seenStr[t.ID.S]
		dup = dup || seen
		c.seenStr[t.ID.S] = struct{}{}
	default:
		_, seen := c.seenInt[t.ID.N]
		dup = dup || seen
		c.seenInt[t.ID.N] = struct{}{}
	}
	if dup {
		return fmt.Errorf("%s: duplicate id %s", where(t), t.ID)
	}
	for j, o := range t.Ops {
		var kind uint8
		switch o.Kind {
		case history.Write, history.Delete:
			kind = kvKey
		case history.Append, history.ReadList:
			kind = listKey
		default:
			continue
		}
		id := c.srcKey(src, o.Key)
		was := c.kinds[id] | c.batchKinds[id]
		if was|kind == kvKey|listKey {
			return fmt.Errorf("%s: ops[%d] %s key %s, which other operations use as a %s: online checking takes each key as a value or as a list, not both",
				where(t), j, map[uint8]string{kvKey: "writes", listKey: "appends to or reads the list at"}[kind], c.keys[id], map[uint8]string{kvKey: "list", listKey: "value"}[kind])
		}
		if c.batchKinds[id]|kind != c.batchKinds[id] {
			c.batchKinds[id] |= kind
			c.batchKeys = append(c.batchKeys, id)
		}
	}
	return nil
}

// growing says whether the ids of txns' committed transactions are
// integers in increasing order.
func growing(txns []history.Txn) bool {
	var last int64
	first := true
	for i := range txns {
		t := &txns[i]
		if t.Status != history.Committed {
			continue
		}
		if t.ID.Kind != history.Int || !first && t.ID.N <= last {
			return false
		}
		last, first = t.ID.N, false
	}
	return true
}

// srcKey returns the checker's id of key k of history src, interning it.
func (c *Checker) srcKey(src *history.History, k history.KeyID) int32 {
	if src != c.srcH {
		c.srcH, c.srcKeys, c.srcSess = src, c.srcKeys[:0], c.srcSess[:0]
	}
	for len(c.srcKeys) < len(src.Keys) {
		c.srcKeys = append(c.srcKeys, 0)
	}
	id := &c.srcKeys[k]
	if *id == 0 {
		*id = c.key(src.Keys[k]) + 1
	}
	return *id - 1
}

// where names t for messages: its id and input line.
func where(t *history.Txn) string {
	s := "transaction " + t.ID.String()
	if t.Line > 0 {
		s += fmt.Sprintf(" (line %d)", t.Line)
	}
	return s
}

// CheckInput reports what makes t, of history src, unfit for online
// checking on its own: a committed transaction without both timestamps or
// an id, an integer id beyond ±2^60, an operation other than a read, write,
// delete, append or list read, a session or key outside src's tables. Aborted and unknown
// transactions pass (they are set aside). The error names t and its line.
func CheckInput(src *history.History, t *history.Txn) error {
	if t.Status != history.Committed {
		return nil
	}
	switch {
	case !t.HasStartTS:
		return fmt.Errorf("%s has no start_ts: online checking needs the database's start and commit timestamps on every committed transaction", where(t))
	case !t.HasCommitTS:
		return fmt.Errorf("%s has no commit_ts: online checking needs the database's start and commit timestamps on every committed transaction", where(t))
	case t.ID.IsNull():
		return fmt.Errorf("%s has no id", where(t))
	case t.ID.Kind == history.Int && (t.ID.N < -idLimit || t.ID.N >= idLimit):
		return fmt.Errorf("%s: online checking takes integer ids from -2^60 to 2^60-1", where(t))
	}
	if t.Session < 0 || int(t.Session) >= len(src.Sessions) {
		return fmt.Errorf("%s: session %d outside the history's session table", where(t), t.Session)
	}
	for j, op := range t.Ops {
		switch op.Kind {
		case history.Read, history.Write, history.Delete, history.Append, history.ReadList:
		default:
			return fmt.Errorf("%s: ops[%d] is %s operation; online checking takes reads, writes, deletes, appends and list reads", where(t), j, op.Kind.Noun())
		}
		if op.Key < 0 || int(op.Key) >= len(src.Keys) {
			return fmt.Errorf("%s: ops[%d] uses a key outside the history's key table", where(t), j)
		}
	}
	return nil
}

// key interns k.
func (c *Checker) key(k history.Value) int32 {
	if k.Kind == history.Int {
		if id, ok := c.keyInt[k.N]; ok {
			return id
		}
	} else if id, ok := c.keyIdx[k]; ok {
		return id
	}
	id := int32(len(c.keys))
	c.keys = append(c.keys, k)
	init, ok := c.cfg.Initial[k]
	if !ok {
		init = history.NullValue
	}
	c.keyInit = append(c.keyInit, init)
	if k.Kind == history.Int {
		c.keyInt[k.N] = id
	} else {
		c.keyIdx[k] = id
	}
	c.ks = append(c.ks, keyState{})
	c.kinds = append(c.kinds, 0)
	c.batchKinds = append(c.batchKinds, 0)
	c.mem += 120
	return id
}

// session interns session label s.
func (c *Checker) session(s history.Value) int32 {
	if id, ok := c.sessIdx[s]; ok {
		return id
	}
	id := int32(len(c.sessLabel))
	c.sessLabel = append(c.sessLabel, s)
	c.sessLast = append(c.sessLast, party{sess: -1})
	c.sessIdx[s] = id
	c.mem += 120
	return id
}

// convert makes the checker's copy of t; its decoded operations are left
// in c.ops until the next call.
func (c *Checker) convert(src *history.History, t *history.Txn) *txn {
	if src != c.srcH {
		c.srcH, c.srcKeys, c.srcSess = src, c.srcKeys[:0], c.srcSess[:0]
	}
	for len(c.srcSess) < len(src.Sessions) {
		c.srcSess = append(c.srcSess, 0)
	}
	s := &c.srcSess[t.Session]
	if *s == 0 {
		*s = c.session(src.Sessions[t.Session]) + 1
	}
	line := int32(0)
	if t.Line <= math.MaxInt32 {
		line = int32(t.Line)
	}
	x := c.newTxn()
	*x = txn{id: t.ID, sess: *s - 1, sts: t.StartTS, cts: t.CommitTS, line: line}
	ops := t.Ops
	if c.cfg.Axioms == SessionAxioms {
		ops = nil
	}
	c.ops = slices.Grow(c.ops[:0], len(ops))[:len(ops)]
	for j, o := range ops {
		v := o.Value
		if o.Kind == history.Delete {
			v = history.NullValue
		}
		c.ops[j] = op{kind: o.Kind, key: c.srcKey(src, o.Key), val: v, list: o.List}
	}
	c.enc = encodeOps(c.enc[:0], c.ops)
	x.enc, x.nops = c.encBytes(c.enc), int32(len(c.ops))
	return x
}

// Slabs: the checker's records of transactions, and their operations'
// encodings, are cut from arrays of many at a time rather than allocated
// one by one — a key shard's checker holds a record of nearly every
// transaction, and the allocations and the collector's objects were a
// large part of what a piece cost besides its operations. A slab is freed
// when none of its records is held any more (spilling drops records about
// in the order they arrived, so a slab's go together).
const (
	txnSlab = 256
	encSlab = 64 << 10
)

// newTxn returns a record from the slab.
func (c *Checker) newTxn() *txn {
	if len(c.txns) == cap(c.txns) {
		c.txns = make([]txn, 0, txnSlab)
	}
	c.txns = c.txns[:len(c.txns)+1]
	return &c.txns[len(c.txns)-1]
}

// encBytes returns a copy of b cut from the slab of encodings.
func (c *Checker) encBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if cap(c.encs)-len(c.encs) < len(b) {
		c.encs = make([]byte, 0, max(encSlab, len(b)))
	}
	n := len(c.encs)
	c.encs = append(c.encs, b...)
	return c.encs[n:len(c.encs):len(c.encs)]
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
