package conformance

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/workload"
)

// TestRoundTripGenerated round-trips generated histories through every
// format isoscope writes, as TestRoundTripCorpora does the corpora:
// mini-transaction histories (serial and snapshot isolation, with planted
// anomalies, aborted transactions and transactions of unknown outcome),
// each with and without instants and with and without a non-empty
// initial state; Boomslang's BlindW histories with an initial state and
// corrupted reads; histories with the database's timestamps, with
// deletes, scans and iterators, and with repeated values; and
// list-append histories.
func TestRoundTripGenerated(t *testing.T) {
	budget := 5 * time.Second
	tally := newTally()
	for seed := uint64(1); seed <= 10; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		var cases []struct {
			name string
			h    *history.History
		}
		add := func(name string, h *history.History) {
			cases = append(cases, struct {
				name string
				h    *history.History
			}{name, h})
		}
		mode := gen.Serial
		if seed%2 == 0 {
			mode = gen.SnapshotIsolation
		}
		plant := gen.PlantableKinds()
		mt, _, err := gen.Generate(gen.Config{Txns: 40, Sessions: 4, Keys: 6, Dist: workload.Uniform, Mode: mode,
			ReadOnlyRatio: 0.3, AbortRatio: 0.1, Seed: seed, Plant: []anomaly.Kind{plant[int(seed)%len(plant)]}})
		if err != nil {
			t.Fatal(err)
		}
		unknownOutcomes(mt, r)
		for _, timed := range []bool{true, false} {
			for _, initial := range []bool{false, true} {
				h := clone(mt)
				if !timed {
					dropInstants(h, 1)
				}
				if initial {
					populate(h, r, false)
				}
				add(fmt.Sprintf("mt-%s-timed=%v-initial=%v", mode, timed, initial), h)
			}
		}
		// dbcop's shape: no instants, no unknown outcomes, every key
		// initially 0.
		plain, _, err := gen.Generate(gen.Config{Txns: 40, Sessions: 4, Keys: 6, Dist: workload.Uniform, Mode: mode,
			ReadOnlyRatio: 0.3, AbortRatio: 0.1, Seed: seed, Plant: []anomaly.Kind{plant[int(seed+3)%len(plant)]}})
		if err != nil {
			t.Fatal(err)
		}
		dropInstants(plain, 1)
		populate(plain, r, true)
		add("mt-dbcop-shape", plain)

		mixed := clone(mt)
		dropInstants(mixed, 0.2)
		add("mt-some-instants", mixed)

		blind, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.BlindW, BlindWMixed: true, Mode: mode, Txns: 40, Sessions: 4, Keys: 8,
			Dist: workload.Uniform, Ops: 4, Populate: 0.5, Fault: 0.1, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		add("blindw-initial-faults", blind)
		untimed := clone(blind)
		dropInstants(untimed, 1)
		add("blindw-initial-faults-untimed", untimed)

		ranged, err := gen.GenerateRange(gen.RangeConfig{Workload: gen.RandomBench, Mode: mode, Txns: 30, Sessions: 3, Keys: 8,
			Dist: workload.Uniform, Ops: 4, Populate: 0.5, Tombstones: seed%3 == 0, Fault: 0.1, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		add("randombench", ranged)

		stamped, _, err := gen.Generate(gen.Config{Txns: 30, Sessions: 3, Keys: 5, Dist: workload.Uniform, Mode: mode, Seed: seed, Timestamps: true})
		if err != nil {
			t.Fatal(err)
		}
		add("timestamps", stamped)

		dup, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: 30, Sessions: 3, Keys: 6, Dist: workload.Uniform, Ops: 3, ReadRatio: 0.5,
			DuplicateKeys: 0.5, DuplicateDomain: 3, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		dropInstants(dup, float64(seed%2))
		add("repeated-values", dup)

		for _, timed := range []bool{true, false} {
			add(fmt.Sprintf("list-append-timed=%v", timed), listAppend(r, 30, 3, 4, timed))
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, c.name), func(t *testing.T) { tally.trips(t, c.h, budget) })
		}
	}
	tally.log(t)
}

// clone copies h deeply enough for the edits below (transactions and the
// initial state).
func clone(h *history.History) *history.History {
	c := *h
	c.Txns = make([]history.Txn, len(h.Txns))
	for i, t := range h.Txns {
		t.Ops = append([]history.Op(nil), t.Ops...)
		c.Txns[i] = t
	}
	c.Header.Initial.Values = map[history.KeyID]history.Value{}
	for k, v := range h.Header.Initial.Values {
		c.Header.Initial.Values[k] = v
	}
	return &c
}

// dropInstants takes the instants of a share of the transactions (all of
// them at 1).
func dropInstants(h *history.History, share float64) {
	for i := range h.Txns {
		if share >= 1 || float64(i%10) < share*10 {
			h.Txns[i].HasTime, h.Txns[i].Begin, h.Txns[i].End = false, 0, 0
		}
	}
}

// unknownOutcomes makes some transactions of unknown outcome: a few
// aborted ones (they did not take effect) and a few committed ones (they
// did).
func unknownOutcomes(h *history.History, r *rand.Rand) {
	for i := range h.Txns {
		if r.IntN(8) == 0 {
			h.Txns[i].Status = history.Unknown
		}
	}
}

// populate gives half the keys an initial value nobody writes, a negative
// integer (every key 0, dbcop's initial value, when zero is set), and makes
// every read of such a key that saw it absent see that value instead: the
// same history over a non-empty initial state.
func populate(h *history.History, r *rand.Rand, zero bool) {
	init := map[history.KeyID]history.Value{}
	for k := range h.Keys {
		if zero || r.IntN(2) == 0 {
			init[history.KeyID(k)] = history.IntValue(-1 - int64(k))
			if zero {
				init[history.KeyID(k)] = history.IntValue(0)
			}
		}
	}
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			if v, ok := init[op.Key]; ok && op.Kind == history.Read && op.Value.IsNull() {
				op.Value = v
			}
		}
	}
	h.Header.Initial.Values = init
}

// listAppend simulates a serial database running list-append
// transactions (appends of unique elements and reads of whole lists) in
// a random interleaving of sessions, then corrupts one read in three
// histories (drops its last element) so that some violate.
func listAppend(r *rand.Rand, txns, sessions, keys int, timed bool) *history.History {
	h := history.New()
	h.Header = history.Header{Present: true, Version: 1, UniqueValues: true}
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	lists := make([][]history.Value, keys)
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), Status: history.Committed}
		if timed {
			t.HasTime, t.Begin, t.End = true, int64(10*i), int64(10*i+5)
		}
		for range 1 + r.IntN(3) {
			k := r.IntN(keys)
			op := history.Op{Key: h.Key(history.IntValue(int64(k)))}
			if r.IntN(2) == 0 {
				op.Kind, op.Value = history.Append, history.IntValue(next)
				lists[k] = append(lists[k], op.Value)
				next++
			} else {
				op.Kind, op.List = history.ReadList, append([]history.Value(nil), lists[k]...)
			}
			t.Ops = append(t.Ops, op)
		}
		if r.IntN(10) == 0 {
			t.Status = history.Aborted // its appends never took effect
			for _, op := range t.Ops {
				if op.Kind == history.Append {
					k := h.Keys[op.Key].N
					lists[k] = lists[k][:len(lists[k])-1]
				}
			}
		}
		h.Txns = append(h.Txns, t)
	}
	if r.IntN(3) == 0 {
		for i := len(h.Txns) - 1; i >= 0; i-- {
			for j, op := range h.Txns[i].Ops {
				if op.Kind == history.ReadList && len(op.List) > 1 && h.Txns[i].Status == history.Committed {
					h.Txns[i].Ops[j].List = op.List[:len(op.List)-1]
					return h
				}
			}
		}
	}
	return h
}
