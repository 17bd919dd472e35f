package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// RangeWorkload names one of the benchmarks of Boomslang (Zhang, Mu and
// Tan, "Making Transaction Isolation Checking Practical", §8.1 and
// Appendix A.5) that GenerateRange simulates. Every transaction has
// RangeConfig.Ops logical operations (8 by default, as in the paper); a
// read-modify-write is one logical operation recorded as two (a read and a
// write of the same key), and so is a range query preceded by a global
// range query.
type RangeWorkload uint8

// The workloads. Percentages are shares of the logical operations, each
// drawn independently.
const (
	// RandomBench mixes every operation kind: 25% reads, 25% writes, 5%
	// deletes, 10% range scans, 10% iterators and 25% read-modify-writes.
	// Written values repeat (they are drawn from a small domain).
	RandomBench RangeWorkload = iota
	// RandomRange evaluates range queries: 25% reads, 25% writes, 5%
	// deletes, 20% range scans and 25% read-modify-writes. Written values
	// repeat.
	RandomRange
	// RandomRMWRange simulates Emme's experiments: 90% read-modify-writes
	// and 10% range scans (each preceded by a global range query when
	// RangeConfig.GlobalScans is set). Written values are unique.
	RandomRMWRange
	// BlindW is Cobra's BlindW-RW: every transaction is, with equal
	// probability, read-only (Ops reads) or write-only (Ops blind
	// writes). With RangeConfig.BlindWMixed it is Boomslang's own BlindW
	// instead: every operation is a read or a blind write with equal
	// probability. Written values are unique.
	BlindW
	numRangeWorkloads
)

// rangeWorkloads are the workloads of the catalogue (internal/workload,
// which run draws from too) that the range workloads are: their names and
// operation mixes come from there.
var rangeWorkloads = [numRangeWorkloads]workload.Workload{workload.RandomBench, workload.RandomRange, workload.RandomRMWRange, workload.BlindW}

// String is the workload's name, the catalogue's ("randombench",
// "randomrange", "randomrmwrange" or "blindw").
func (w RangeWorkload) String() string {
	if w < numRangeWorkloads {
		return rangeWorkloads[w].String()
	}
	return "RangeWorkload(" + strconv.Itoa(int(w)) + ")"
}

// RangeWorkloads lists every workload GenerateRange simulates.
func RangeWorkloads() []RangeWorkload {
	out := make([]RangeWorkload, numRangeWorkloads)
	for i := range out {
		out[i] = RangeWorkload(i)
	}
	return out
}

// ParseRangeWorkload returns the workload named s, ignoring case, dashes
// and underscores ("RandomBench", "random-bench" and "randombench" are the
// same workload).
func ParseRangeWorkload(s string) (RangeWorkload, error) {
	name := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(strings.TrimSpace(s)))
	var names []string
	for _, w := range RangeWorkloads() {
		if w.String() == name {
			return w, nil
		}
		names = append(names, w.String())
	}
	return 0, fmt.Errorf("unknown workload %q (%s)", s, strings.Join(names, ", "))
}

// ValueChoice says how GenerateRange chooses written values.
type ValueChoice uint8

// The value choices.
const (
	// DefaultValues is the workload's own choice: repeated values for
	// RandomBench and RandomRange, unique ones for RandomRMWRange and
	// BlindW.
	DefaultValues ValueChoice = iota
	// UniqueValues gives every write of a key a fresh value (a per-key
	// counter from 1), and the header promises unique values.
	UniqueValues
	// RepeatedValues draws every written value uniformly from
	// 1..RangeConfig.ValueDomain, so that writes repeat values.
	RepeatedValues
)

// String is the choice's name ("default", "unique" or "repeated").
func (v ValueChoice) String() string {
	switch v {
	case DefaultValues:
		return "default"
	case UniqueValues:
		return "unique"
	case RepeatedValues:
		return "repeated"
	}
	return "ValueChoice(" + strconv.Itoa(int(v)) + ")"
}

// The defaults of RangeConfig's zero fields.
const (
	// DefaultRangeOps is the logical operations per transaction.
	DefaultRangeOps = 8
	// DefaultMinWidth and DefaultMaxWidth bound a range's width in keys.
	DefaultMinWidth, DefaultMaxWidth = 2, 20
	// DefaultMaxIter bounds how many pairs an iterator asks for (the
	// paper's k is drawn from [1, 10]).
	DefaultMaxIter = 10
	// DefaultValueDomain is the size of the domain repeated values come
	// from.
	DefaultValueDomain = 5
)

// RangeConfig says what history GenerateRange simulates. The zero value of
// every optional field selects its default.
type RangeConfig struct {
	// Workload is the benchmark.
	Workload RangeWorkload
	// Mode is the simulated database: Serial (strictly serializable
	// histories) or SnapshotIsolation.
	Mode Mode
	// Txns is how many transactions the history holds, first-committer-wins
	// losers (status aborted) included.
	Txns int
	// Sessions is how many client sessions run them, labelled
	// 0..Sessions-1.
	Sessions int
	// Keys is how many keys there are: the integers 0..Keys-1.
	Keys int
	// Dist chooses the key of every read, write, delete and
	// read-modify-write, and the low bound of every range.
	Dist workload.Distribution
	// Ops is the number of logical operations per transaction (default 8).
	Ops int
	// MinWidth and MaxWidth bound the width hi-lo of a range [lo, hi),
	// drawn uniformly (defaults 2 and 20). hi may pass the last key.
	MinWidth, MaxWidth int
	// MaxIter bounds an iterator: it asks for the first k present keys of
	// its range, k uniform in [1, MaxIter] (default 10), and returns fewer
	// only when the range holds fewer.
	MaxIter int
	// Values chooses written values; ValueDomain is the size of the
	// domain of repeated values (default 5).
	Values      ValueChoice
	ValueDomain int
	// Tombstones makes deletes leave tombstones (header deletes
	// "tombstone"): a deleted key reads as null but stays present to
	// scans and iterators as [k, null] until a write gives it a value
	// again. Otherwise deletes are physical.
	Tombstones bool
	// Populate is the share of the keys present in the initial state
	// (header initial values); 0 starts with every key absent.
	Populate float64
	// GlobalScans precedes every range scan of RandomRMWRange with a
	// global range query, ["scan", 0, null, …] over every key, as the
	// paper does to recover the version set. Each returns every present
	// key, so it makes histories O(Keys) larger per range query.
	GlobalScans bool
	// BlindWMixed selects Boomslang's BlindW (operations independently
	// reads or blind writes) instead of Cobra's BlindW-RW (transactions
	// read-only or write-only).
	BlindWMixed bool
	// Fault is the share of transactions (aborted ones included) in which
	// one observation is corrupted after the simulated database answered
	// it, so that tests get violating histories: a read returns its key's
	// previous committed state (stale) or a value nobody wrote (a negative
	// integer), a scan or iterator pair carries such a value, or a scan
	// omits a present key (an iterator omits one that is not its last
	// pair). A transaction without a read or a non-empty range result gets
	// no fault. Faults come from a random stream of their own: the history
	// is the one Fault 0 gives with the same seed, with only the corrupted
	// results changed.
	//
	// A planted fault is not always a violation: a stale value may be
	// explained by another order of the transactions (always possible at
	// serializability when the writers do not constrain it, and in SI mode
	// by an earlier snapshot), or, with repeated values, by another write
	// of the same value.
	Fault float64
	// Seed makes the history: the same configuration and seed give the
	// same history.
	Seed uint64
	// Timestamps gives every transaction the database's start_ts and
	// every committed one its commit_ts (see Config.Timestamps).
	Timestamps bool
}

// withDefaults returns c with its zero optional fields set.
func (c RangeConfig) withDefaults() RangeConfig {
	if c.Ops == 0 {
		c.Ops = DefaultRangeOps
	}
	if c.MinWidth == 0 {
		c.MinWidth = DefaultMinWidth
	}
	if c.MaxWidth == 0 {
		c.MaxWidth = max(DefaultMaxWidth, c.MinWidth)
	}
	if c.MaxIter == 0 {
		c.MaxIter = DefaultMaxIter
	}
	if c.ValueDomain == 0 {
		c.ValueDomain = DefaultValueDomain
	}
	return c
}

func (c *RangeConfig) validate() error {
	if c.Workload >= numRangeWorkloads {
		return fmt.Errorf("gen: unknown workload %s", c.Workload)
	}
	if err := validateShape(c.Txns, c.Sessions, c.Keys, c.Mode); err != nil {
		return err
	}
	switch {
	case c.Ops < 1 || c.Ops > 1<<16:
		return fmt.Errorf("gen: operations per transaction must be in [1, %d], got %d", 1<<16, c.Ops)
	case c.MinWidth < 1 || c.MaxWidth < c.MinWidth || c.MaxWidth > maxKeysOrSessions:
		return fmt.Errorf("gen: range widths must satisfy 1 <= min <= max <= %d, got %d and %d", maxKeysOrSessions, c.MinWidth, c.MaxWidth)
	case c.MaxIter < 1:
		return fmt.Errorf("gen: an iterator's limit must be at least 1, got %d", c.MaxIter)
	case c.Values > RepeatedValues:
		return fmt.Errorf("gen: unknown value choice %s", c.Values)
	case c.ValueDomain < 1:
		return fmt.Errorf("gen: the value domain must hold at least one value, got %d", c.ValueDomain)
	case !(c.Populate >= 0 && c.Populate <= 1):
		return fmt.Errorf("gen: populate share %v is not in [0, 1]", c.Populate)
	case !(c.Fault >= 0 && c.Fault <= 1):
		return fmt.Errorf("gen: fault share %v is not in [0, 1]", c.Fault)
	}
	return nil
}

// unique reports whether c's written values are unique.
func (c *RangeConfig) unique() bool {
	switch c.Values {
	case UniqueValues:
		return true
	case RepeatedValues:
		return false
	}
	return c.Workload == RandomRMWRange || c.Workload == BlindW
}

// source describes c for the header.
func (c *RangeConfig) source() string {
	values := "unique"
	if !c.unique() {
		values = "repeated(1-" + strconv.Itoa(c.ValueDomain) + ")"
	}
	deletes := "physical"
	if c.Tombstones {
		deletes = "tombstone"
	}
	extra := ""
	switch {
	case c.Workload == RandomRMWRange && c.GlobalScans:
		extra = " global-scans"
	case c.Workload == BlindW && c.BlindWMixed:
		extra = " mixed"
	case c.Workload == BlindW:
		extra = " read-only-or-write-only"
	}
	return fmt.Sprintf("isoscope gen %s%s: mode=%s dist=%s txns=%d sessions=%d keys=%d ops=%d widths=%d-%d iter=1-%d values=%s deletes=%s populate=%g fault=%g seed=%d",
		c.Workload, extra, c.Mode, c.Dist, c.Txns, c.Sessions, c.Keys, c.Ops, c.MinWidth, c.MaxWidth, c.MaxIter,
		values, deletes, c.Populate, c.Fault, c.Seed)
}

// GenerateRange simulates the database c describes running one of
// Boomslang's workloads, and returns the history it recorded.
//
// Serial mode runs one transaction at a time, in a random interleaving of
// the sessions, with disjoint increasing [begin, end] instants: its
// histories are strictly serializable. SnapshotIsolation mode runs one
// transaction per session concurrently, their instants overlapping: each
// transaction runs against the state committed when it began (its
// snapshot), its own writes and deletes visible to its later operations,
// and commits at its end with first-committer-wins: if some transaction
// committed a key it writes or deletes since it began, it aborts. Losers
// are recorded with status aborted and not retried (their session goes on
// with a new transaction). Its histories satisfy snapshot isolation and
// need not be serializable.
//
// Scans return every present key of their range, iterators the first k
// (see RangeConfig.MaxIter). Transactions have ids 1..n in file order,
// which is commit (end) order and respects session order; keys and
// sessions are interned in order of first appearance (initial keys
// first), as the native reader interns them. The header says the deletes
// mode, the initial state, the configuration (as its source) and promises
// unique values only when they are unique by construction.
//
// Generation takes time linear in the history's size plus the widths of
// its ranges, and memory linear in the history's size.
func GenerateRange(c RangeConfig) (*history.History, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	chooser, err := workload.NewKeyChooser(c.Dist, c.Keys)
	if err != nil {
		return nil, fmt.Errorf("gen: %w", err)
	}
	s := &rsim{
		c:      c,
		r:      rand.New(rand.NewPCG(c.Seed, c.Seed^0x6a09e667f3bcc908)),
		fr:     rand.New(rand.NewPCG(c.Seed^0xbb67ae8584caa73b, c.Seed+0x3c6ef372fe94f82b)),
		keys:   chooser,
		uniq:   c.unique(),
		state:  make([]int64, c.Keys),
		prev:   make([]int64, c.Keys),
		ownIdx: make([]int32, c.Keys),
		txns:   make([]history.Txn, 0, c.Txns),
		clock:  tsClock{on: c.Timestamps},
	}
	if c.Tombstones {
		s.deleted = tombstoneState
	}
	if s.uniq {
		s.counter = make([]int64, c.Keys)
	}
	s.mix = rangeMix(&c)
	s.populate()
	switch c.Mode {
	case Serial:
		s.runSerial()
	default:
		s.runSI()
	}
	return s.finish(), nil
}

// A key's state during the simulation: absentState, tombstoneState, or a
// positive value.
const (
	absentState    int64 = 0
	tombstoneState int64 = -1
)

// rmwRangeScanPct is the percentage of RandomRMWRange's logical
// operations that are range scans: the catalogue's share.
var rmwRangeScanPct = int(math.Round(100 * workload.RMWRangeScanShare))

// rangeMix returns c's operation mix: the catalogue's (workload.Mix) for
// RandomBench and RandomRange; read-modify-writes and the catalogue's
// share of range scans for RandomRMWRange; half reads, half blind writes
// for Boomslang's BlindW; nil for Cobra's BlindW, which draws whole
// transactions.
func rangeMix(c *RangeConfig) []workload.Share {
	switch c.Workload {
	case RandomBench, RandomRange:
		return workload.Mix(rangeWorkloads[c.Workload])
	case RandomRMWRange:
		return []workload.Share{{Op: workload.MixRMW, Pct: 100 - rmwRangeScanPct}, {Op: workload.MixScan, Pct: rmwRangeScanPct}}
	}
	if c.BlindWMixed {
		return []workload.Share{{Op: workload.MixRead, Pct: 50}, {Op: workload.MixWrite, Pct: 50}}
	}
	return nil
}

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
