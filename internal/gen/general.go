package gen

import (
	"fmt"
	"math/rand/v2"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// GeneralConfig describes a general (Cobra-style) workload: transactions
// of several reads and blind writes over many keys, not read-modify-write.
type GeneralConfig struct {
	Txns, Sessions, Keys int
	Dist                 workload.Distribution
	// Ops is the number of operations per transaction.
	Ops int
	// ReadRatio is the share of operations that are reads.
	ReadRatio float64
	// DuplicateKeys is the share of keys whose written values come from a
	// small zipfian domain (VeriStrong's duplicate-value workloads); the
	// others get unique values.
	DuplicateKeys float64
	// DuplicateDomain is the size of that domain (default 8).
	DuplicateDomain int
	Seed            uint64
	// Timestamps gives every transaction the database's start_ts and
	// commit_ts (see Config.Timestamps).
	Timestamps bool
	// FenceEvery, when positive, runs fence transactions (read the fence
	// key, then write a unique value to it) in every session: a session's
	// first transaction, then one after every FenceEvery of its own
	// workload transactions. The fence key is the integer Keys (the
	// header's fence_key); fences come on top of Txns. 0 runs none.
	FenceEvery int
}

// GenerateGeneral simulates a serial database running a general workload:
// one transaction at a time, in a random interleaving of the sessions, with
// disjoint increasing instants. Its histories are strictly serializable
// by construction; the checkers must say so.
func GenerateGeneral(c GeneralConfig) (*history.History, error) {
	switch {
	case c.Txns < 0 || c.Sessions < 1 || c.Keys < 1 || c.Ops < 1:
		return nil, fmt.Errorf("general workload: need txns ≥ 0 and sessions, keys, ops ≥ 1")
	case c.ReadRatio < 0 || c.ReadRatio > 1 || c.DuplicateKeys < 0 || c.DuplicateKeys > 1:
		return nil, fmt.Errorf("general workload: ratios must be within [0, 1]")
	case c.FenceEvery < 0:
		return nil, fmt.Errorf("general workload: fence interval must be ≥ 0 (0: no fences), got %d", c.FenceEvery)
	}
	if c.DuplicateDomain <= 0 {
		c.DuplicateDomain = 8
	}
	r := rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15))
	keys, err := workload.NewKeyChooser(c.Dist, c.Keys)
	if err != nil {
		return nil, err
	}
	domain, err := workload.NewZipfian(c.DuplicateDomain, workload.ZipfianTheta)
	if err != nil {
		return nil, err
	}
	h := history.New()
	h.Header = history.Header{Present: true, Version: 1, UniqueValues: c.DuplicateKeys == 0,
		Source: fmt.Sprintf("isoscope gen general: txns=%d sessions=%d keys=%d ops=%d read-ratio=%g duplicate-keys=%g seed=%d",
			c.Txns, c.Sessions, c.Keys, c.Ops, c.ReadRatio, c.DuplicateKeys, c.Seed) + fenceSource(c.FenceEvery)}
	for s := range c.Sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	ids := make([]history.KeyID, c.Keys)
	for k := range ids {
		ids[k] = h.Key(history.IntValue(int64(k)))
	}
	dup := make([]bool, c.Keys)
	for k := range dup {
		dup[k] = r.Float64() < c.DuplicateKeys
	}
	state := make([]history.Value, c.Keys) // null: absent
	counter := make([]int64, c.Keys)
	own := map[int]history.Value{}
	slab := make([]history.Op, 0, c.Txns*c.Ops)
	h.Txns = make([]history.Txn, 0, c.Txns)
	clock := StartInstant
	ts := tsClock{on: c.Timestamps}
	fences := newFencer(c.FenceEvery, c.Sessions)
	var fenceKey history.KeyID
	var fenceState, fenceCounter int64
	if fences.on() {
		fenceKey = h.Key(history.IntValue(int64(c.Keys)))
		h.Header.FenceKey = history.IntValue(int64(c.Keys))
	}
	for range c.Txns {
		clear(own)
		ops := slab[len(slab) : len(slab)+c.Ops : len(slab)+c.Ops]
		slab = slab[:len(slab)+c.Ops]
		for j := range ops {
			k := keys.Next(r)
			op := &ops[j]
			op.Key = ids[k]
			if r.Float64() < c.ReadRatio {
				op.Kind = history.Read
				if v, ok := own[k]; ok {
					op.Value = v
				} else {
					op.Value = state[k]
				}
				continue
			}
			op.Kind = history.Write
			if dup[k] {
				op.Value = history.IntValue(int64(domain.Next(r)) + 1)
			} else {
				counter[k]++
				op.Value = history.IntValue(counter[k])
			}
			own[k] = op.Value
		}
		for k, v := range own {
			state[k] = v
		}
		begin := clock + int64(2_000+r.IntN(48_000))
		clock = begin + int64(20_000+r.IntN(180_000))
		sess := int32(r.IntN(c.Sessions))
		if fences.due(int(sess)) {
			// The fence runs in the first third of the transaction's
			// slot, the transaction in the last.
			third := (clock - begin) / 3
			fenceCounter++
			ops := []history.Op{{Kind: history.Read, Key: fenceKey, Value: value(fenceState)},
				{Kind: history.Write, Key: fenceKey, Value: history.IntValue(fenceCounter)}}
			fenceState = fenceCounter
			h.Txns = append(h.Txns, history.Txn{
				ID: history.IntValue(int64(len(h.Txns) + 1)), Session: sess,
				Begin: begin, End: begin + third, HasTime: true, Ops: ops,
			})
			ts.stampSerial(&h.Txns[len(h.Txns)-1])
			fences.ended(int(sess), true, true)
			begin = clock - third
		}
		h.Txns = append(h.Txns, history.Txn{
			ID: history.IntValue(int64(len(h.Txns) + 1)), Session: sess,
			Begin: begin, End: clock, HasTime: true, Ops: ops,
		})
		ts.stampSerial(&h.Txns[len(h.Txns)-1])
		fences.ended(int(sess), false, false)
	}
	return h, nil
}
