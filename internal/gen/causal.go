package gen

import (
	"fmt"
	"math/rand/v2"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// CausalConfig describes the general workload (reads and blind writes,
// fresh values) on a causally consistent store.
type CausalConfig struct {
	Txns, Sessions, Keys int
	Dist                 workload.Distribution
	// Ops is the number of operations per transaction, ReadRatio the share
	// of them that are reads.
	Ops       int
	ReadRatio float64
	// Sync is the chance that a session, before a transaction, catches up
	// with another session (takes in everything that session has seen);
	// the lower, the staler the views and the more concurrent the
	// history.
	Sync float64
	// Stale is the share of transactions with one read that returns a
	// version older than its view holds (a fault: such a history likely
	// violates causal consistency).
	Stale float64
	Seed  uint64
	// Events, when positive, generates transactions until they hold this
	// many operations (AWDIT's generator's --events; the last transaction
	// is cut short), and Txns is ignored.
	Events int
	// Geometric makes transaction sizes geometric with mean Ops, as
	// AWDIT's generator does: after each operation the transaction ends
	// with chance 1/Ops, and it ends before an operation on a key it has
	// written (that operation opens the session's next transaction), so
	// that no transaction reads its own write or writes a key twice.
	Geometric bool
	// Pareto, when positive, draws keys from AWDIT's generator's Pareto
	// distribution of that shape (workload.NewPareto; workload.AWDITAlpha
	// is AWDIT's default) instead of Dist.
	Pareto float64
	// Emit, when set, receives each transaction as it commits, and the
	// history returned holds none (its header, sessions and keys only):
	// memory is then the keys' versions, not the history. The
	// transaction and its operations are reused after Emit returns.
	Emit func(h *history.History, t *history.Txn) error
}

// DefaultSync is CausalConfig.Sync's default.
const DefaultSync = 0.3

// GenerateCausal simulates a causally consistent store running the
// general workload: every session is a replica that sees a causally closed
// set of the committed transactions — its own, and what it took in when it
// last caught up with another session, which brings that session's view
// along — and a read returns the latest version of its key (in commit
// order) its view holds, or its transaction's own write. Transactions
// commit one at a time, in a random interleaving of the sessions; every
// value is fresh. Unless Stale corrupts reads, its histories satisfy
// causal consistency (hence read atomic and rc-session) by construction:
// the commit order extends session order and write-read, and a read never
// misses a version its transaction causally depends on. They need not
// satisfy prefix consistency or snapshot isolation.
//
// Memory is a vector clock per session (sessions²), not per transaction,
// and each key's versions.
func GenerateCausal(c CausalConfig) (*history.History, error) {
	switch {
	case c.Txns < 0 || c.Events < 0 || c.Sessions < 1 || c.Keys < 1 || c.Ops < 1:
		return nil, fmt.Errorf("causal store: need txns, events ≥ 0 and sessions, keys, ops ≥ 1")
	case c.ReadRatio < 0 || c.ReadRatio > 1 || c.Sync < 0 || c.Sync > 1 || c.Stale < 0 || c.Stale > 1:
		return nil, fmt.Errorf("causal store: read ratio, sync and stale must be within [0, 1]")
	case c.Sessions > maxKeysOrSessions || c.Keys > maxKeysOrSessions:
		return nil, fmt.Errorf("causal store: too many sessions or keys")
	}
	r := rand.New(rand.NewPCG(c.Seed, 0xc4a5a1))
	var keys workload.KeyChooser
	var err error
	source := fmt.Sprintf("isoscope gen general: mode=causal txns=%d sessions=%d keys=%d ops=%d read-ratio=%g sync=%g stale=%g seed=%d",
		c.Txns, c.Sessions, c.Keys, c.Ops, c.ReadRatio, c.Sync, c.Stale, c.Seed)
	if c.Pareto > 0 {
		keys, err = workload.NewPareto(c.Keys, c.Pareto, r)
	} else {
		keys, err = workload.NewKeyChooser(c.Dist, c.Keys)
	}
	if err != nil {
		return nil, err
	}
	if c.Events > 0 || c.Geometric || c.Pareto > 0 {
		source = fmt.Sprintf("isoscope gen awdit: events=%d txns=%d sessions=%d keys=%d ops=%d geometric=%t pareto=%g read-ratio=%g sync=%g stale=%g seed=%d",
			c.Events, c.Txns, c.Sessions, c.Keys, c.Ops, c.Geometric, c.Pareto, c.ReadRatio, c.Sync, c.Stale, c.Seed)
	}
	h := history.New()
	h.Header = history.Header{Present: true, Version: 1, UniqueValues: true, Source: source}
	k := c.Sessions
	for s := range k {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	ids := make([]history.KeyID, c.Keys)
	for i := range ids {
		ids[i] = h.Key(history.IntValue(int64(i)))
	}
	// view[s*k+u]: how many of session u's transactions session s sees.
	view := make([]int32, k*k)
	// latest[u*k:]: the view session u committed its last transaction
	// with (its own count included).
	latest := make([]int32, k*k)
	// versions[key]: the key's versions in commit order.
	type version struct {
		session, index int32 // the writer: its session and its index there
		value          int64
	}
	versions := make([][]version, c.Keys)
	counter := make([]int64, c.Keys)
	own := map[int]int64{}
	size := c.Txns * c.Ops
	if c.Events > 0 {
		size = c.Events
	}
	if c.Emit != nil {
		size = 4 * c.Ops
	} else {
		h.Txns = make([]history.Txn, 0, size/c.Ops+1)
	}
	slab := make([]history.Op, 0, size)
	emitted := 0 // operations handed to Emit
	clock := StartInstant
	// carry[s]: the key of the operation that ended session s's last
	// transaction before it ran (Geometric), or -1.
	carry := make([]int, k)
	for s := range carry {
		carry[s] = -1
	}
	for i := 0; ; i++ {
		if c.Emit != nil {
			emitted += len(slab)
			slab = slab[:0]
		}
		if c.Events > 0 {
			if emitted+len(slab) >= c.Events {
				break
			}
		} else if i >= c.Txns {
			break
		}
		s := r.IntN(k)
		vs := view[s*k : (s+1)*k]
		if r.Float64() < c.Sync {
			u := r.IntN(k)
			for x, n := range latest[u*k : (u+1)*k] {
				vs[x] = max(vs[x], n)
			}
		}
		clear(own)
		stale := r.Float64() < c.Stale
		start := len(slab)
		for j := 0; ; j++ {
			if c.Events > 0 && emitted+len(slab) >= c.Events || !c.Geometric && j == c.Ops {
				break
			}
			var key int
			if carry[s] >= 0 {
				key, carry[s] = carry[s], -1
			} else {
				key = keys.Next(r)
			}
			if _, wrote := own[key]; wrote && c.Geometric {
				carry[s] = key // AWDIT's generator: the key opens the next transaction
				break
			}
			slab = append(slab, history.Op{Key: ids[key]})
			op := &slab[len(slab)-1]
			if r.Float64() >= c.ReadRatio {
				op.Kind = history.Write
				counter[key]++
				own[key] = counter[key]
				op.Value = history.IntValue(counter[key])
			} else {
				op.Kind = history.Read
				if v, ok := own[key]; ok {
					op.Value = history.IntValue(v)
				} else {
					op.Value = history.NullValue
					vers := versions[key]
					seen := -1
					for q := len(vers) - 1; q >= 0; q-- {
						if vers[q].index < vs[vers[q].session] {
							seen = q
							break
						}
					}
					if stale && seen >= 0 {
						seen, stale = r.IntN(seen+1)-1, false // an older version, or none
					}
					if seen >= 0 {
						op.Value = history.IntValue(vers[seen].value)
					}
				}
			}
			if c.Geometric && r.Float64()*float64(c.Ops) < 1 {
				break
			}
		}
		ops := slab[start:len(slab):len(slab)]
		// Commit: the transaction's last write of each key is a version.
		index := vs[s]
		for key, v := range own {
			versions[key] = append(versions[key], version{session: int32(s), index: index, value: v})
		}
		vs[s] = index + 1
		copy(latest[s*k:(s+1)*k], vs)
		begin := clock + int64(2_000+r.IntN(48_000))
		clock = begin + int64(20_000+r.IntN(180_000))
		t := history.Txn{
			ID: history.IntValue(int64(i + 1)), Session: int32(s),
			Begin: begin, End: clock, HasTime: true, Ops: ops,
		}
		if c.Emit != nil {
			if err := c.Emit(h, &t); err != nil {
				return nil, err
			}
			continue
		}
		h.Txns = append(h.Txns, t)
	}
	return h, nil
}
