package gen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// ListAppendConfig describes an Elle-style list-append workload: each
// transaction reads whole lists and appends unique elements to them, over
// a small pool of keys in use at a time, each key retired after a number
// of appends and replaced by a fresh one (Elle's key-count and
// max-writes-per-key).
type ListAppendConfig struct {
	// Txns is how many workload transactions the history holds (aborted
	// and unknown ones included); planted groups come on top.
	Txns int
	// Sessions is how many client sessions (Jepsen's processes) run the
	// workload, one transaction at a time each.
	Sessions int
	// ActiveKeys is how many keys are in use at once.
	ActiveKeys int
	// AppendsPerKey retires a key once that many appends to it were
	// issued, replacing it by a fresh key; 0 never retires one.
	AppendsPerKey int
	// MaxOps bounds the operations of a transaction: each has 1 to MaxOps.
	MaxOps int
	// ReadRatio is the share of operations that read a whole list; the
	// others append.
	ReadRatio float64
	// Dist is the distribution of accesses over the active keys.
	Dist workload.Distribution
	// Mode is the simulated database: Serial runs one transaction at a
	// time (strictly serializable histories); SnapshotIsolation runs the
	// sessions' transactions concurrently on snapshots taken at their
	// start, first committer wins (histories that satisfy strong session
	// snapshot isolation, not always serializability).
	Mode Mode
	// AbortRatio is the share of transactions the client aborts: their
	// reads are recorded, their appends never take effect.
	AbortRatio float64
	// UnknownRatio is the share of transactions whose outcome the client
	// never learnt (Jepsen's :info): append-only, each taking effect or
	// not with equal chance.
	UnknownRatio float64
	// Plant lists anomalies to plant, one group of transactions each, on
	// keys and sessions of their own.
	Plant []ListPlant
	// Seed makes the history: the same configuration and seed give the
	// same history.
	Seed uint64
	// Emit, when set, is handed each transaction as it is recorded, in
	// file order, with the history so far (its header, keys and sessions,
	// but no transactions): the history GenerateListAppend returns then
	// holds none, and memory stays bounded by the keys' lists rather than
	// growing with the transactions. The transaction is not used after
	// Emit returns; an error from Emit ends the generation with it.
	Emit func(h *history.History, t *history.Txn) error
	// FenceEvery, when positive, runs fence transactions (read the fence
	// key's list, then append a unique element to it) in every workload
	// session: a session's first transaction, then one after every
	// FenceEvery of its own workload transactions; an aborted fence is
	// run again. The fence key is key 0 (the header's fence_key), the
	// workload's keys follow it. Fences are never aborted by the client
	// nor of unknown outcome, and come on top of Txns. 0 runs none.
	FenceEvery int
}

// ListPlant is an anomaly that GenerateListAppend can plant.
type ListPlant uint8

// The plantable list-append anomalies, each a small group of transactions
// on keys of its own.
const (
	// PlantG0 is a write cycle: two transactions append to x and y, and
	// the lists show their appends in opposite orders.
	PlantG0 ListPlant = iota
	// PlantAbortedRead (G1a) is a read of an aborted transaction's append.
	PlantAbortedRead
	// PlantIntermediateRead (G1b) is a read that sees the first of a
	// transaction's two appends to a key but not the second.
	PlantIntermediateRead
	// PlantG1c is a cycle of write-read dependencies: each of two
	// transactions reads the other's append.
	PlantG1c
	// PlantGSingle is a read skew: a transaction sees one of another's
	// two appends and misses the other.
	PlantGSingle
	// PlantG2Item is a write skew: two transactions each read the key the
	// other appends to, empty, and append to the other key.
	PlantG2Item
	// PlantLostUpdate: two transactions read the same empty list and both
	// append to it.
	PlantLostUpdate
	// PlantInternal is an internal inconsistency: a transaction reads a
	// list that misses its own earlier append.
	PlantInternal
	numListPlants
)

var listPlantNames = [numListPlants]string{"g0", "aborted-read", "intermediate-read", "g1c", "g-single", "g2-item", "lost-update", "internal"}

// String is the anomaly's name for gen --plant.
func (p ListPlant) String() string {
	if p < numListPlants {
		return listPlantNames[p]
	}
	return fmt.Sprintf("ListPlant(%d)", uint8(p))
}

// ListPlants returns every plantable list-append anomaly.
func ListPlants() []ListPlant {
	out := make([]ListPlant, numListPlants)
	for i := range out {
		out[i] = ListPlant(i)
	}
	return out
}

// ParseListPlant returns the list-append anomaly named s; g1a, g1b,
// write-skew and lost-update's other names are accepted too.
func ParseListPlant(s string) (ListPlant, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "g1a":
		return PlantAbortedRead, nil
	case "g1b":
		return PlantIntermediateRead, nil
	case "write-skew":
		return PlantG2Item, nil
	case "internal-read", "internal-inconsistency":
		return PlantInternal, nil
	}
	for i, n := range listPlantNames {
		if n == s {
			return ListPlant(i), nil
		}
	}
	return 0, fmt.Errorf("cannot plant %q in a list-append history (%s)", s, strings.Join(listPlantNames[:], ", "))
}

// ListPlanted is one planted list-append group: the anomaly and its
// transactions, in file order.
type ListPlanted struct {
	Plant ListPlant
	Txns  []history.TxnID
}

// laKey is one key of the simulated store: its committed list and, for
// each element, the commit sequence number that installed it.
type laKey struct {
	list    []history.Value
	commits []uint64
	issued  int64
}

// laTxn is a transaction in flight in the simulated store.
type laTxn struct {
	session int
	start   uint64
	begin   int64
	status  history.Status
	ops     []history.Op
	// appended are the keys this transaction appended to, in order, with
	// the elements.
	appended []laAppend
	// fence says the transaction is a fence.
	fence bool
}

type laAppend struct {
	key  int
	elem history.Value
}

// laSim is one list-append simulation.
type laSim struct {
	c      ListAppendConfig
	r      *rand.Rand
	h      *history.History
	keys   []laKey
	active []int
	chosen workload.KeyChooser
	seq    uint64
	clock  int64
	slab   []history.Op
	// n counts the transactions recorded; err is Emit's first error.
	n   int
	err error
	// fences says when a session runs a fence; fenceKey is the fence
	// key's number.
	fences   fencer
	fenceKey int
}

// GenerateListAppend simulates a database running an Elle-style
// list-append workload and returns the history it recorded, with the
// planted groups. Elements are unique per key (1, 2, …); keys are
// numbered from 0 in the order they come into use; planted groups use
// keys and sessions after the workload's. Transactions have ids 1..n in
// file order (end order) and instants from a synthetic clock.
func GenerateListAppend(c ListAppendConfig) (*history.History, []ListPlanted, error) {
	switch {
	case c.Txns < 1:
		return nil, nil, fmt.Errorf("list-append workload: need at least one transaction, not %d", c.Txns)
	case c.Sessions < 1 || c.ActiveKeys < 1 || c.MaxOps < 1:
		return nil, nil, fmt.Errorf("list-append workload: need sessions, keys and operations per transaction ≥ 1")
	case c.AppendsPerKey < 0:
		return nil, nil, fmt.Errorf("list-append workload: appends per key must be ≥ 0 (0: never retire a key)")
	case c.Sessions > maxKeysOrSessions || c.ActiveKeys > maxKeysOrSessions:
		return nil, nil, fmt.Errorf("list-append workload: at most %d sessions and keys", maxKeysOrSessions)
	case c.ReadRatio < 0 || c.ReadRatio > 1 || c.AbortRatio < 0 || c.UnknownRatio < 0 || c.AbortRatio+c.UnknownRatio > 1:
		return nil, nil, fmt.Errorf("list-append workload: ratios must be within [0, 1], and aborts and unknowns together at most 1")
	case c.Mode != Serial && c.Mode != SnapshotIsolation:
		return nil, nil, fmt.Errorf("list-append workload: mode %s is not simulated (serial or si)", c.Mode)
	case c.FenceEvery < 0:
		return nil, nil, fmt.Errorf("list-append workload: fence interval must be ≥ 0 (0: no fences), got %d", c.FenceEvery)
	}
	chosen, err := workload.NewKeyChooser(c.Dist, c.ActiveKeys)
	if err != nil {
		return nil, nil, fmt.Errorf("list-append workload: %w", err)
	}
	s := &laSim{c: c, r: rand.New(rand.NewPCG(c.Seed, c.Seed^0x2545f4914f6cdd1d)), h: history.New(), chosen: chosen, clock: StartInstant}
	s.h.Header = history.Header{Present: true, Version: 1, UniqueValues: true,
		Source: fmt.Sprintf("isoscope gen list-append: txns=%d sessions=%d keys=%d appends-per-key=%d ops=%d read-ratio=%g abort-ratio=%g unknown-ratio=%g mode=%s seed=%d",
			c.Txns, c.Sessions, c.ActiveKeys, c.AppendsPerKey, c.MaxOps, c.ReadRatio, c.AbortRatio, c.UnknownRatio, c.Mode, c.Seed) + fenceSource(c.FenceEvery)}
	s.fences = newFencer(c.FenceEvery, c.Sessions)
	if s.fences.on() {
		s.fenceKey = s.newKey()
		s.h.Header.FenceKey = history.IntValue(int64(s.fenceKey))
	}
	for range c.ActiveKeys {
		s.active = append(s.active, s.newKey())
	}
	for i := range c.Sessions + len(c.Plant)*3 {
		s.h.Sessions = append(s.h.Sessions, history.IntValue(int64(i)))
	}
	if c.Emit == nil {
		s.h.Txns = make([]history.Txn, 0, c.Txns+4*len(c.Plant))
	}
	s.run()
	planted := s.plant(c.Plant)
	if s.err != nil {
		return nil, nil, s.err
	}
	return s.h, planted, nil
}

// record adds t to the history, or hands it to Emit, with id n+1 for the
// n recorded before it, and returns its TxnID.
func (s *laSim) record(t history.Txn) history.TxnID {
	id := history.TxnID(s.n)
	s.n++
	t.ID = history.IntValue(int64(s.n))
	switch {
	case s.c.Emit == nil:
		s.h.Txns = append(s.h.Txns, t)
	case s.err == nil:
		s.err = s.c.Emit(s.h, &t)
	}
	return id
}

// newKey brings a fresh key into use and returns its number.
func (s *laSim) newKey() int {
	k := len(s.keys)
	s.keys = append(s.keys, laKey{})
	// Keys come into the history only here, in this order, so key k's id
	// in the history is k.
	s.h.Key(history.IntValue(int64(k)))
	return k
}

// ops returns n zeroed operations carved from the current slab.
func (s *laSim) ops(n int) []history.Op { return carve(&s.slab, n) }

// tick advances the synthetic clock and returns the new instant.
func (s *laSim) tick() int64 {
	s.clock += int64(1_000 + s.r.IntN(20_000))
	return s.clock
}

// snapshot returns key k's list as a snapshot taken at commit sequence
// start holds it: a prefix of the committed list, sharing its storage.
func (s *laSim) snapshot(k int, start uint64) []history.Value {
	key := &s.keys[k]
	n, _ := slices.BinarySearch(key.commits, start+1)
	return key.list[:n:n]
}

// begin starts a transaction of session at the current commit sequence,
// drawing its operations; reads see the snapshot and the transaction's own
// earlier appends.
func (s *laSim) begin(session int) *laTxn {
	if s.fences.due(session) {
		return s.beginFence(session)
	}
	t := &laTxn{session: session, start: s.seq, begin: s.tick(), status: history.Committed}
	switch u := s.r.Float64(); {
	case u < s.c.AbortRatio:
		t.status = history.Aborted
	case u < s.c.AbortRatio+s.c.UnknownRatio:
		t.status = history.Unknown
	}
	n := 1 + s.r.IntN(s.c.MaxOps)
	t.ops = s.ops(n)
	for i := range t.ops {
		slot := s.chosen.Next(s.r)
		k := s.active[slot]
		op := &t.ops[i]
		op.Key = history.KeyID(k)
		if t.status != history.Unknown && s.r.Float64() < s.c.ReadRatio {
			op.Kind = history.ReadList
			list := s.snapshot(k, t.start)
			var own []history.Value
			for _, a := range t.appended {
				if a.key == k {
					own = append(own, a.elem)
				}
			}
			if len(own) > 0 {
				list = append(slices.Clip(list), own...)
			}
			op.List = list
			continue
		}
		key := &s.keys[k]
		key.issued++
		op.Kind = history.Append
		op.Value = history.IntValue(key.issued)
		t.appended = append(t.appended, laAppend{key: k, elem: op.Value})
		if s.c.AppendsPerKey > 0 && key.issued >= int64(s.c.AppendsPerKey) {
			s.active[slot] = s.newKey()
		}
	}
	return t
}

// beginFence starts a fence of session: read the fence key's list, then
// append the next element to it.
func (s *laSim) beginFence(session int) *laTxn {
	t := &laTxn{session: session, start: s.seq, begin: s.tick(), status: history.Committed, fence: true}
	k := s.fenceKey
	key := &s.keys[k]
	key.issued++
	elem := history.IntValue(key.issued)
	t.ops = s.ops(2)
	t.ops[0] = history.Op{Kind: history.ReadList, Key: history.KeyID(k), List: s.snapshot(k, t.start)}
	t.ops[1] = history.Op{Kind: history.Append, Key: history.KeyID(k), Value: elem}
	t.appended = append(t.appended, laAppend{key: k, elem: elem})
	return t
}

// commit ends t: under snapshot isolation a transaction that appended to
// a key another committed to since its start aborts (first committer
// wins); an unknown transaction takes effect with even chance.
func (s *laSim) commit(t *laTxn) {
	effect := t.status == history.Committed || (t.status == history.Unknown && s.r.IntN(2) == 0)
	if t.status == history.Committed && s.c.Mode == SnapshotIsolation {
		for _, a := range t.appended {
			if c := s.keys[a.key].commits; len(c) > 0 && c[len(c)-1] > t.start {
				t.status, effect = history.Aborted, false
				break
			}
		}
	}
	if effect && len(t.appended) > 0 {
		s.seq++
		for _, a := range t.appended {
			key := &s.keys[a.key]
			key.list = append(key.list, a.elem)
			key.commits = append(key.commits, s.seq)
		}
	}
	end := s.tick()
	s.record(history.Txn{Session: int32(t.session), Status: t.status, Begin: t.begin, End: end, HasTime: true, Ops: t.ops})
	s.fences.ended(t.session, t.fence, t.status == history.Committed)
}

// run executes the workload: in serial mode each transaction starts and
// commits at once; under snapshot isolation each step picks a session and
// either starts its next transaction or commits the one it has running.
func (s *laSim) run() {
	if s.c.Mode == Serial {
		for range s.c.Txns {
			if s.err != nil {
				return
			}
			i := s.r.IntN(s.c.Sessions)
			if s.fences.due(i) {
				s.commit(s.beginFence(i))
			}
			s.commit(s.begin(i))
		}
		return
	}
	running := make([]*laTxn, s.c.Sessions)
	started, inFlight := 0, 0
	for s.err == nil && (started < s.c.Txns || inFlight > 0) {
		i := s.r.IntN(s.c.Sessions)
		switch {
		case running[i] != nil:
			s.commit(running[i])
			running[i] = nil
			inFlight--
		case started < s.c.Txns:
			running[i] = s.begin(i)
			if !running[i].fence {
				started++
			}
			inFlight++
		}
	}
}

// plant appends one group of transactions per anomaly, each on keys and
// sessions of its own, after the workload.
func (s *laSim) plant(plants []ListPlant) []ListPlanted {
	var out []ListPlanted
	session := s.c.Sessions
	for _, p := range plants {
		x, y := s.newKey(), s.newKey()
		xk, yk := history.KeyID(x), history.KeyID(y)
		el := func(n int64) history.Value { return history.IntValue(n) }
		app := func(k history.KeyID, n int64) history.Op {
			return history.Op{Kind: history.Append, Key: k, Value: el(n)}
		}
		read := func(k history.KeyID, ns ...int64) history.Op {
			op := history.Op{Kind: history.ReadList, Key: k}
			for _, n := range ns {
				op.List = append(op.List, el(n))
			}
			return op
		}
		type txn struct {
			status history.Status
			ops    []history.Op
		}
		var g []txn
		ok := history.Committed
		switch p {
		case PlantG0:
			g = []txn{{ok, []history.Op{app(xk, 1), app(yk, 1)}}, {ok, []history.Op{app(xk, 2), app(yk, 2)}},
				{ok, []history.Op{read(xk, 1, 2), read(yk, 2, 1)}}}
		case PlantAbortedRead:
			g = []txn{{history.Aborted, []history.Op{app(xk, 1)}}, {ok, []history.Op{read(xk, 1)}}}
		case PlantIntermediateRead:
			g = []txn{{ok, []history.Op{app(xk, 1), app(xk, 2)}}, {ok, []history.Op{read(xk, 1)}}}
		case PlantG1c:
			g = []txn{{ok, []history.Op{app(xk, 1), read(yk, 1)}}, {ok, []history.Op{app(yk, 1), read(xk, 1)}}}
		case PlantGSingle:
			g = []txn{{ok, []history.Op{app(xk, 1), app(yk, 1)}}, {ok, []history.Op{read(xk), read(yk, 1)}}}
		case PlantG2Item:
			g = []txn{{ok, []history.Op{read(xk), app(yk, 1)}}, {ok, []history.Op{read(yk), app(xk, 1)}},
				{ok, []history.Op{read(xk, 1), read(yk, 1)}}}
		case PlantLostUpdate:
			g = []txn{{ok, []history.Op{read(xk), app(xk, 1)}}, {ok, []history.Op{read(xk), app(xk, 2)}},
				{ok, []history.Op{read(xk, 1, 2)}}}
		case PlantInternal:
			g = []txn{{ok, []history.Op{app(xk, 1), read(xk)}}, {ok, []history.Op{read(xk, 1)}}}
		}
		// The group's transactions overlap in real time, each in a
		// session of its own, except a last reader, which follows them.
		begin := s.tick()
		ends := make([]int64, len(g))
		for i := range g {
			ends[i] = s.tick()
		}
		rec := ListPlanted{Plant: p}
		for i, t := range g {
			b := begin
			if i == len(g)-1 && len(g) > 2 {
				b = ends[len(g)-2] + 1
				ends[i] = s.tick()
			}
			ops := s.ops(len(t.ops))
			copy(ops, t.ops)
			rec.Txns = append(rec.Txns, s.record(history.Txn{Session: int32(session + i), Status: t.status, Begin: b, End: ends[i], HasTime: true, Ops: ops}))
		}
		session += 3
		out = append(out, rec)
	}
	return out
}
