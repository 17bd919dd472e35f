package gen

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// Mode names the database Generate simulates.
type Mode uint8

// The simulated databases.
const (
	// Serial runs transactions one at a time in a random interleaving of
	// the sessions; each transaction's [begin, end] interval is disjoint
	// from the others' and increasing in execution order. Its histories
	// are strictly serializable.
	Serial Mode = iota
	// SnapshotIsolation runs one transaction per session concurrently:
	// each reads the state committed at its begin instant and, at its end
	// instant, commits with first-committer-wins: a transaction that
	// writes a key someone committed since its start aborts and its
	// session retries it as a new transaction. Its histories satisfy
	// snapshot isolation (with real time: a transaction sees everything
	// that committed before it began).
	SnapshotIsolation
)

// String is the mode's name ("serial" or "si").
func (m Mode) String() string {
	switch m {
	case Serial:
		return "serial"
	case SnapshotIsolation:
		return "si"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Config says what history to generate.
type Config struct {
	// Txns is how many workload transactions the history holds, aborted
	// ones (client aborts and first-committer-wins losers) included;
	// planted groups come on top.
	Txns int
	// Sessions is how many client sessions run the workload, labelled
	// 0..Sessions-1; planted groups run in sessions labelled from Sessions
	// on.
	Sessions int
	// Keys is how many keys the workload uses, numbered 0..Keys-1; planted
	// groups use keys numbered from Keys on.
	Keys int
	// Dist is the distribution of the workload's key accesses.
	Dist workload.Distribution
	// Mode is the simulated database.
	Mode Mode
	// ReadOnlyRatio is the share of read-only transactions (one or two
	// reads); the others read and then write one or two keys.
	ReadOnlyRatio float64
	// Seed makes the history: the same configuration and seed give the
	// same history.
	Seed uint64
	// Plant lists anomalies to plant, one group of transactions each (a
	// kind may repeat). CanPlant says which kinds are supported.
	Plant []anomaly.Kind
	// AbortRatio is the share of workload transactions the client aborts
	// (status aborted; their writes are never read).
	AbortRatio float64
	// Timestamps gives every transaction the database's start_ts and
	// every committed one its commit_ts, from a logical clock that ticks
	// (by TimestampStep) at each start and commit in the simulated
	// database's order. It cannot be combined with Plant (planted groups
	// have no database behind them).
	Timestamps bool
	// FenceEvery, when positive, runs fence transactions (read the fence
	// key, then write a unique value to it) in every workload session: a
	// session's first transaction, then one after every FenceEvery of its
	// own workload transactions. The fence key is the integer Keys (the
	// header's fence_key); planted groups use keys from Keys+1 on and run
	// no fences. Fences come on top of Txns. 0 runs none.
	FenceEvery int
}

// Planted is one planted group: the anomaly it exhibits and its
// transactions, in file order.
type Planted struct {
	Kind anomaly.Kind
	Txns []history.TxnID
}

// StartInstant is the synthetic clock's first instant (nanoseconds), so
// that begin and end look like Unix-epoch nanoseconds of November 2023.
const StartInstant int64 = 1_700_000_000_000_000_000

// maxKeysOrSessions bounds Keys and Sessions so that planted keys and
// sessions still fit an int32.
const maxKeysOrSessions = 1 << 30

// Generate simulates the database c describes and returns the history it
// recorded, with the planted groups. The history's header promises unique
// values and an absent initial state; transactions have ids 1..n in file
// order, which is end order and respects session order, and real-time
// instants from a synthetic clock starting at StartInstant.
func Generate(c Config) (*history.History, []Planted, error) {
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	chooser, err := workload.NewKeyChooser(c.Dist, c.Keys)
	if err != nil {
		return nil, nil, fmt.Errorf("gen: %w", err)
	}
	groups := make([]*pattern, len(c.Plant))
	extra := 0
	for i, k := range c.Plant {
		groups[i] = patternOf(k)
		extra += len(groups[i].txns)
	}
	r := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	s := &sim{
		c:       c,
		r:       r,
		keys:    chooser,
		state:   make([]int64, c.Keys+fenceKeys(c.FenceEvery)),
		counter: make([]int64, c.Keys+fenceKeys(c.FenceEvery)),
		txns:    make([]history.Txn, 0, c.Txns+extra),
		clock:   tsClock{on: c.Timestamps},
		fences:  newFencer(c.FenceEvery, c.Sessions),
	}
	switch c.Mode {
	case Serial:
		s.runSerial()
	default:
		s.runSI()
	}
	planted := s.plant(groups)
	h := s.finish()
	return h, planted, nil
}

// validateShape checks what every simulation needs: a transaction count,
// sessions and keys in range, and a known mode.
func validateShape(txns, sessions, keys int, mode Mode) error {
	switch {
	case txns < 0:
		return fmt.Errorf("gen: negative transaction count %d", txns)
	case sessions < 1 || sessions > maxKeysOrSessions:
		return fmt.Errorf("gen: sessions must be in [1, %d], got %d", maxKeysOrSessions, sessions)
	case keys < 1 || keys > maxKeysOrSessions:
		return fmt.Errorf("gen: keys must be in [1, %d], got %d", maxKeysOrSessions, keys)
	case mode != Serial && mode != SnapshotIsolation:
		return fmt.Errorf("gen: unknown mode %s", mode)
	}
	return nil
}

func (c *Config) validate() error {
	if err := validateShape(c.Txns, c.Sessions, c.Keys, c.Mode); err != nil {
		return err
	}
	switch {
	case !(c.ReadOnlyRatio >= 0 && c.ReadOnlyRatio <= 1):
		return fmt.Errorf("gen: read-only ratio %v is not in [0, 1]", c.ReadOnlyRatio)
	case !(c.AbortRatio >= 0 && c.AbortRatio <= 1):
		return fmt.Errorf("gen: abort ratio %v is not in [0, 1]", c.AbortRatio)
	case len(c.Plant) > maxKeysOrSessions/4:
		return fmt.Errorf("gen: too many anomalies to plant (%d)", len(c.Plant))
	case c.Timestamps && len(c.Plant) > 0:
		return fmt.Errorf("gen: planted groups have no database timestamps; plant timestamp faults instead")
	}
	if err := validFenceEvery(c.FenceEvery); err != nil {
		return err
	}
	for _, k := range c.Plant {
		if !CanPlant(k) {
			return fmt.Errorf("gen: cannot plant anomaly %s (plantable: %s)", k, plantableNames())
		}
	}
	return nil
}

// interner maps the raw key numbers of a simulation to a history's keys,
// interned in order of first use.
type interner func(raw history.KeyID) history.KeyID

func newInterner(h *history.History, keys int) interner {
	keyMap := make([]history.KeyID, keys)
	for i := range keyMap {
		keyMap[i] = history.NoKey
	}
	return func(k history.KeyID) history.KeyID {
		if m := keyMap[k]; m != history.NoKey {
			return m
		}
		m := history.KeyID(len(h.Keys))
		keyMap[k] = m
		h.Keys = append(h.Keys, history.IntValue(int64(k)))
		return m
	}
}

// relabel assigns ids 1..n in file order and interns sessions (raw numbers
// below sessions) and keys, those of range results included, in order of
// first appearance.
func relabel(h *history.History, sessions int, intern interner) {
	sessMap := make([]int32, sessions)
	for i := range sessMap {
		sessMap[i] = -1
	}
	for i := range h.Txns {
		t := &h.Txns[i]
		t.ID = history.IntValue(int64(i + 1))
		if m := sessMap[t.Session]; m >= 0 {
			t.Session = m
		} else {
			sessMap[t.Session] = int32(len(h.Sessions))
			h.Sessions = append(h.Sessions, history.IntValue(int64(t.Session)))
			t.Session = sessMap[t.Session]
		}
		for j := range t.Ops {
			op := &t.Ops[j]
			if op.Kind.IsRange() {
				for p := range op.Range.Pairs {
					op.Range.Pairs[p].Key = intern(op.Range.Pairs[p].Key)
				}
				continue
			}
			op.Key = intern(op.Key)
		}
	}
}

// finish assigns ids 1..n in file order, and interns keys and sessions in
// order of first appearance: during the simulation an op's Key and a
// transaction's Session hold the raw key and session numbers.
func (s *sim) finish() *history.History {
	h := &history.History{
		Header: history.Header{
			Present:      true,
			Version:      1,
			UniqueValues: true,
			Source: fmt.Sprintf("isoscope gen: mode=%s dist=%s txns=%d sessions=%d keys=%d read-only=%g abort-ratio=%g seed=%d",
				s.c.Mode, s.c.Dist, s.c.Txns, s.c.Sessions, s.c.Keys, s.c.ReadOnlyRatio, s.c.AbortRatio, s.c.Seed) + fenceSource(s.c.FenceEvery),
		},
		Txns: s.txns,
	}
	if s.fences.on() {
		h.Header.FenceKey = history.IntValue(int64(s.c.Keys))
	}
	intern := newInterner(h, s.nextKey())
	relabel(h, s.nextSession(), intern)
	return h
}
