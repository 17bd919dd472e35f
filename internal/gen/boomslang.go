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
