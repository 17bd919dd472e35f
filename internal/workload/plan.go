package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Workload names a transaction mix that a Plan is drawn from.
type Workload uint8

// The workloads of `isoscope run`.
const (
	// MiniTxn is MTC's mini-transactions (Wei et al., §III-A and §V-A1):
	// one or two reads and at most two writes over one or two keys, every
	// write preceded by a read of its key, fresh values.
	MiniTxn Workload = iota
	// General is Cobra's general workload: read-only, write-only and
	// read-modify-write transactions of Ops operations each, with fresh
	// values except on the keys Duplicates picks.
	General
	// ListAppend is Elle's list-append workload: appends of fresh
	// elements and reads of whole lists.
	ListAppend
	// LWT is lightweight transactions: one compare-and-set,
	// insert-if-not-exists or read of a single key per transaction.
	LWT
	// Range mixes point reads, writes and deletes with range scans and
	// iterators (scans with a limit).
	Range
	// RandomBench is Boomslang's RandomBench (Zhang, Mu and Tan, §8 and
	// Appendix A.5): Ops operations per transaction, each a read (25%), a
	// write (25%), a delete (5%), a range scan (10%), an iterator (10%) or
	// a read-modify-write (25%: a read and then a write of one key), with
	// values from a small domain (Values), so not unique.
	RandomBench
	// RandomRange is Boomslang's RandomRange: RandomBench without
	// iterators, with 20% range scans.
	RandomRange
	// RandomRMWRange is Boomslang's RandomRMWRange, after Emme's
	// experiments: Ops operations per transaction, each a read-modify-write
	// of one key (90%) or a range scan preceded by a scan of every key
	// (10%), with fresh values.
	RandomRMWRange
	// BlindW is the blind-write workload (Cobra's BlindW-RW, which
	// Boomslang reimplements as BlindW): read-only transactions
	// (ReadRatio) and blind-write-only ones, Ops operations each, over
	// many keys. Values are fresh, unless Values asks for a small domain
	// (Boomslang's BlindW writes repeated values as RandomBench does).
	BlindW
	numWorkloads
)

var workloadNames = [numWorkloads]string{"mt", "general", "list-append", "lwt", "range", "randombench", "randomrange", "randomrmwrange", "blindw"}

// String is the workload's name ("mt", "general", "list-append", "lwt",
// "range", "randombench", "randomrange", "randomrmwrange", "blindw").
func (w Workload) String() string {
	if w < numWorkloads {
		return workloadNames[w]
	}
	return "Workload(" + strconv.Itoa(int(w)) + ")"
}

// Workloads lists every workload.
func Workloads() []Workload {
	out := make([]Workload, numWorkloads)
	for i := range out {
		out[i] = Workload(i)
	}
	return out
}

// ParseWorkload returns the workload named s (case-insensitive; "append"
// and "mini-transactions" are accepted too, and the paper workloads with
// hyphens: "random-bench", "random-rmw-range", "blind-w", …).
func ParseWorkload(s string) (Workload, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	switch name {
	case "append", "listappend":
		return ListAppend, nil
	case "mini-transactions", "mini-transaction":
		return MiniTxn, nil
	}
	if strings.HasPrefix(name, "random-") || strings.HasPrefix(name, "blind-") {
		name = strings.ReplaceAll(name, "-", "")
	}
	for i, n := range workloadNames {
		if n == name {
			return Workload(i), nil
		}
	}
	return 0, fmt.Errorf("unknown workload %q (%s)", s, strings.Join(workloadNames[:], ", "))
}

// OpKind names a planned operation.
type OpKind uint8

// The operations a plan asks the runner to perform.
const (
	// ReadOp reads Key.
	ReadOp OpKind = iota
	// WriteOp puts a value at Key (insert or update).
	WriteOp
	// DeleteOp deletes Key.
	DeleteOp
	// ScanOp reads every key of [Key, Hi).
	ScanOp
	// IterOp reads the first Limit keys of [Key, Hi).
	IterOp
	// AppendOp appends an element to the list at Key.
	AppendOp
	// ReadListOp reads the whole list at Key.
	ReadListOp
	// CASOp compares and sets Key: from the value the session last saw at
	// Key to a fresh one, or inserts a fresh value if the session has not
	// seen Key yet (insert-if-not-exists).
	CASOp
)

// String names the operation.
func (k OpKind) String() string {
	switch k {
	case ReadOp:
		return "read"
	case WriteOp:
		return "write"
	case DeleteOp:
		return "delete"
	case ScanOp:
		return "scan"
	case IterOp:
		return "iter"
	case AppendOp:
		return "append"
	case ReadListOp:
		return "read-list"
	case CASOp:
		return "cas"
	}
	return "OpKind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one planned operation.
type Op struct {
	Kind OpKind
	// Key is the key, or the low bound (inclusive) of a scan or iterator.
	Key int64
	// Hi is the high bound (exclusive) of a scan or iterator.
	Hi int64
	// Limit is how many pairs an iterator takes at most.
	Limit int
	// Value is the value a write puts when Fixed is set. Otherwise the
	// runner writes (or appends, or sets) a fresh value, unique in the
	// whole run and new at every retry.
	Value int64
	Fixed bool
	// Lock makes a read a locking read (SELECT … FOR UPDATE): see
	// PlanConfig.LockRMW.
	Lock bool
}

// Txn is one planned transaction: its operations in program order.
type Txn struct {
	Ops []Op
}

// Writes reports whether the transaction may change the database.
func (t *Txn) Writes() bool {
	for _, op := range t.Ops {
		switch op.Kind {
		case WriteOp, DeleteOp, AppendOp, CASOp:
			return true
		}
	}
	return false
}

// PlanConfig describes a plan.
type PlanConfig struct {
	Workload Workload
	// Sessions is the number of client sessions.
	Sessions int
	// Txns is the number of planned transactions in all, dealt to the
	// sessions in turn (retries come on top).
	Txns int
	// Keys is how many keys the workload uses, numbered 0..Keys-1.
	Keys int
	// Dist is the distribution of the key accesses.
	Dist Distribution
	// ReadRatio is the share of reads: of read-only transactions for mt
	// and general (default 0.2) and blindw (default 0.5), of plain reads
	// for lwt (default 0.2), of read operations for list-append and range
	// (default 0.5). randombench, randomrange and randomrmwrange have fixed
	// mixes and ignore it. Negative: the default.
	ReadRatio float64
	// Ops is the number of operations per transaction for general and the
	// paper workloads (randombench, randomrange, randomrmwrange, blindw;
	// default 8, a read-modify-write counting as one operation), and the
	// maximum for list-append and range (default 4); mt and lwt ignore it.
	// 0: the default.
	Ops int
	// Duplicates is, for general, the share of keys whose written values
	// come from a small zipfian domain instead of being fresh.
	Duplicates float64
	// DuplicateDomain is the size of that domain (0: 8).
	DuplicateDomain int
	// Span is, for randombench, randomrange and randomrmwrange, the widest
	// range a scan or iterator covers: [lo, lo+n) with n drawn uniformly
	// from 1..Span (0: 100, as in Boomslang).
	Span int
	// Values is the size of the domain the written values of randombench
	// and randomrange (0: 8) and blindw (0: fresh values instead) come
	// from: 1..Values, uniformly, so values repeat.
	Values int
	// LockRMW makes every read of a key its transaction writes later a
	// locking read (SELECT … FOR UPDATE): read-modify-writes that lock
	// what they read, as applications do at InnoDB's REPEATABLE READ.
	LockRMW bool
	// FenceEvery, when positive, has every session run a fence (Fence)
	// as its first transaction, then after every FenceEvery of its own
	// transactions, for the online black-box checker (mt, general,
	// list-append and blindw). 0: no fences.
	FenceEvery int
	// AppendsPerKey, for list-append, retires a key once that many
	// appends to it are planned, and a fresh key (numbered from Keys+1 on:
	// Keys is the fence key) takes its place, as Elle's
	// max-writes-per-key does, so that lists stay short however long the
	// run (and the online checker settles them). 0: keys never retire.
	AppendsPerKey int
}

// FenceKey is the key of c's fences: Keys, the first key past the
// workload's.
func (c *PlanConfig) FenceKey() int64 { return int64(c.Keys) }

// Fence is c's fence transaction (Cobra's fences): a read of the fence key,
// then a write of a fresh value to it, or, for list-append, a read of its
// whole list, then an append of a fresh element.
func (c *PlanConfig) Fence() Txn {
	k := c.FenceKey()
	if c.Workload == ListAppend {
		return Txn{Ops: []Op{{Kind: ReadListOp, Key: k}, {Kind: AppendOp, Key: k}}}
	}
	return Txn{Ops: []Op{{Kind: ReadOp, Key: k}, {Kind: WriteOp, Key: k}}}
}

// Paper reports whether w is one of Boomslang's workloads (randombench,
// randomrange, randomrmwrange, blindw).
func (w Workload) Paper() bool {
	return w == RandomBench || w == RandomRange || w == RandomRMWRange || w == BlindW
}

// repeated reports whether c's written values come from the small domain
// 1..Values instead of being fresh (general's duplicates aside).
func (c *PlanConfig) repeated() bool {
	return c.Workload == RandomBench || c.Workload == RandomRange || c.Workload == BlindW && c.Values > 0
}

// WithDefaults returns c with its unset parameters set to the workload's
// defaults.
func (c PlanConfig) WithDefaults() PlanConfig {
	if c.ReadRatio < 0 {
		switch c.Workload {
		case ListAppend, Range, BlindW:
			c.ReadRatio = 0.5
		default:
			c.ReadRatio = 0.2
		}
	}
	if c.Ops <= 0 {
		switch {
		case c.Workload == General || c.Workload.Paper():
			c.Ops = 8
		case c.Workload == ListAppend || c.Workload == Range:
			c.Ops = 4
		}
	}
	if c.DuplicateDomain <= 0 {
		c.DuplicateDomain = 8
	}
	if c.Span <= 0 {
		c.Span = DefaultSpan
	}
	switch {
	case c.Values < 0:
		c.Values = 0
	case c.Values == 0 && (c.Workload == RandomBench || c.Workload == RandomRange):
		c.Values = DefaultValues
	}
	return c
}

func (c *PlanConfig) validate() error {
	switch {
	case c.Workload >= numWorkloads:
		return fmt.Errorf("unknown workload %s", c.Workload)
	case c.Sessions < 1 || c.Sessions > 1<<16:
		return fmt.Errorf("sessions must be in [1, 65536], got %d", c.Sessions)
	case c.Txns < 0:
		return fmt.Errorf("negative transaction count %d", c.Txns)
	case c.Keys < 1 || c.Keys > 1<<30:
		return fmt.Errorf("keys must be in [1, 2^30], got %d", c.Keys)
	case !(c.ReadRatio >= 0 && c.ReadRatio <= 1):
		return fmt.Errorf("read ratio %v is not in [0, 1]", c.ReadRatio)
	case !(c.Duplicates >= 0 && c.Duplicates <= 1):
		return fmt.Errorf("duplicates %v is not in [0, 1]", c.Duplicates)
	case c.Duplicates > 0 && c.Workload != General:
		return fmt.Errorf("duplicates are a knob of the general workload, not of %s", c.Workload)
	case c.Ops > 1<<12:
		return fmt.Errorf("at most %d operations per transaction, got %d", 1<<12, c.Ops)
	case c.Span > 1<<30:
		return fmt.Errorf("max width %d (the widest range) is more than 2^30 keys", c.Span)
	case c.Values > 1<<30:
		return fmt.Errorf("value domain %d is more than 2^30 values", c.Values)
	case c.AppendsPerKey < 0:
		return fmt.Errorf("appends per key %d is negative (0: keys never retire)", c.AppendsPerKey)
	case c.AppendsPerKey > 0 && c.Workload != ListAppend:
		return fmt.Errorf("appends per key is a knob of the list-append workload, not of %s", c.Workload)
	case c.FenceEvery < 0:
		return fmt.Errorf("fence interval %d is negative (0: no fences)", c.FenceEvery)
	case c.FenceEvery > 0 && c.Workload != MiniTxn && c.Workload != General && c.Workload != ListAppend && c.Workload != BlindW:
		return fmt.Errorf("fences run with the mt, general, list-append and blindw workloads, not %s", c.Workload)
	case c.FenceEvery > 0 && c.Keys == 1<<30:
		return fmt.Errorf("fences take the key after the workload's: at most 2^30-1 keys with fences")
	}
	return nil
}

// String describes the configuration in one line, for a history's source.
func (c PlanConfig) String() string {
	s := fmt.Sprintf("workload=%s sessions=%d txns=%d keys=%d dist=%s", c.Workload, c.Sessions, c.Txns, c.Keys, c.Dist)
	if !c.Workload.Paper() || c.Workload == BlindW {
		// The other paper workloads have fixed mixes.
		s += fmt.Sprintf(" read-ratio=%g", c.ReadRatio)
	}
	switch c.Workload {
	case General:
		s += fmt.Sprintf(" ops=%d duplicates=%g", c.Ops, c.Duplicates)
	case ListAppend, Range:
		s += fmt.Sprintf(" max-ops=%d", c.Ops)
		if c.AppendsPerKey > 0 {
			s += fmt.Sprintf(" appends-per-key=%d", c.AppendsPerKey)
		}
	case RandomBench, RandomRange:
		s += fmt.Sprintf(" ops=%d span=%d values=%d", c.Ops, c.Span, c.Values)
	case RandomRMWRange:
		s += fmt.Sprintf(" ops=%d span=%d", c.Ops, c.Span)
	case BlindW:
		s += fmt.Sprintf(" ops=%d", c.Ops)
		if c.Values > 0 {
			s += fmt.Sprintf(" values=%d", c.Values)
		}
	}
	if c.LockRMW {
		s += " lock-rmw"
	}
	if c.FenceEvery > 0 {
		s += fmt.Sprintf(" fence-every=%d", c.FenceEvery)
	}
	return s
}

// Plan is what every session will run: its transactions in order.
type Plan struct {
	// Config is the configuration with defaults filled in.
	Config PlanConfig
	// Sessions holds each session's transactions, in the order it runs
	// them.
	Sessions [][]Txn
	// UniqueValues says no two writes put the same value at a key (every
	// value is fresh), so the history may promise unique values.
	UniqueValues bool
}

// Txn returns session s's i-th transaction, or nil past the end of the
// plan.
func (p *Plan) Txn(s, i int) *Txn {
	if i < len(p.Sessions[s]) {
		return &p.Sessions[s][i]
	}
	return nil
}

// Endless is a plan without end (run --duration): it starts with the
// transactions of NewPlan and draws more as the sessions ask for them,
// in the order a plan of more transactions would hold them.
type Endless struct {
	// Plan holds the transactions drawn so far; Txn adds to it.
	Plan *Plan
	mu   sync.Mutex
	g    *planner
	// drawn is how many transactions the plan holds: the next goes to
	// session drawn mod the sessions.
	drawn int
	// off[s] is how many of session s's first transactions Forget let
	// go: Plan.Sessions[s][0] is its off[s]-th.
	off []int
	// forget says Txn lets go of a session's earlier transactions.
	forget bool
}

// Forget has Txn let go of each session's transactions before the one it
// returns, so that an endless plan's memory stays flat however long the
// run: a session asks for its transactions in order and never again for
// one before the last. Plan.Len then counts what is still held; Drawn
// counts every transaction drawn.
func (e *Endless) Forget() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forget = true
	if e.off == nil {
		e.off = make([]int, len(e.Plan.Sessions))
	}
}

// Drawn is how many transactions the endless plan has drawn.
func (e *Endless) Drawn() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.drawn
}

// NewEndless draws an endless plan for c from r: c.Txns transactions at
// once, the rest on demand.
func NewEndless(c PlanConfig, r *rand.Rand) (*Endless, error) {
	p, g, err := newPlan(c, r)
	if err != nil {
		return nil, err
	}
	return &Endless{Plan: p, g: g, drawn: p.Len()}, nil
}

// Txn returns session s's i-th transaction, drawing more transactions
// until session s has an i-th. The sessions' goroutines may call it at
// once; the transaction returned stays as it is.
func (e *Endless) Txn(s, i int) *Txn {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.Plan
	if e.forget {
		i -= e.off[s]
	}
	for len(p.Sessions[s]) <= i {
		k := e.drawn % len(p.Sessions)
		p.Sessions[k] = append(p.Sessions[k], e.g.draw())
		e.drawn++
	}
	t := &p.Sessions[s][i]
	if e.forget && i > 0 {
		// Resliced from the front: the next append that grows the slice
		// copies only what is left, and the rest goes.
		p.Sessions[s] = p.Sessions[s][i:]
		e.off[s] += i
	}
	return t
}

// String describes the endless plan's configuration in one line, for a
// history's source: the configuration's, with no number of transactions.
func (e *Endless) String() string {
	return strings.Replace(e.Plan.Config.String(), "txns="+strconv.Itoa(e.Plan.Config.Txns), "txns=unbounded", 1)
}

// draw draws the next transaction, its read-modify-writes locking when
// the configuration says so.
func (g *planner) draw() Txn {
	t := g.next()
	if g.c.LockRMW {
		lockRMW(t.Ops)
	}
	return t
}

// Len returns the number of planned transactions (of an endless plan:
// drawn so far; not while its sessions run).
func (p *Plan) Len() int {
	n := 0
	for _, s := range p.Sessions {
		n += len(s)
	}
	return n
}

// NewPlan draws a plan for c from r: the same configuration and the same
// seed give the same plan. It is pure: no clock, no global randomness.
func NewPlan(c PlanConfig, r *rand.Rand) (*Plan, error) {
	p, _, err := newPlan(c, r)
	return p, err
}

// newPlan is NewPlan, and the planner that would draw the transactions
// after the plan's.
func newPlan(c PlanConfig, r *rand.Rand) (*Plan, *planner, error) {
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, nil, fmt.Errorf("workload: %w", err)
	}
	keys, err := NewKeyChooser(c.Dist, c.Keys)
	if err != nil {
		return nil, nil, fmt.Errorf("workload: %w", err)
	}
	g := &planner{c: c, r: r, keys: keys}
	if c.Workload == General {
		if err := g.duplicates(); err != nil {
			return nil, nil, err
		}
	}
	p := &Plan{Config: c, Sessions: make([][]Txn, c.Sessions), UniqueValues: true}
	for s := range p.Sessions {
		p.Sessions[s] = make([]Txn, 0, c.Txns/c.Sessions+1)
	}
	for i := range c.Txns {
		s := i % c.Sessions
		p.Sessions[s] = append(p.Sessions[s], g.draw())
	}
	for _, d := range g.dup {
		p.UniqueValues = p.UniqueValues && !d
	}
	p.UniqueValues = p.UniqueValues && !c.repeated()
	return p, g, nil
}

// lockRMW marks the reads of ops whose key a later operation writes as
// locking reads.
func lockRMW(ops []Op) {
	for i := range ops {
		if ops[i].Kind != ReadOp {
			continue
		}
		for _, later := range ops[i+1:] {
			if later.Kind == WriteOp && later.Key == ops[i].Key {
				ops[i].Lock = true
				break
			}
		}
	}
}
