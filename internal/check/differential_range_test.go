package check_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// randomRange builds a small history of reads, writes, deletes, scans and
// iterators over integer keys, with values from a tiny domain. Each
// transaction runs on a snapshot of a recent committed state (so some
// histories hold at SI or SER and some do not) with its own writes
// visible to its later operations; now and then one observation comes from
// another version of the key instead, or returns any value of the domain
// (perhaps one written later), or a scan drops a key, so that
// plenty of histories violate every level. Some transactions abort or end
// unknown; instants overlap at random.
func randomRange(r *rand.Rand, txns, keys int, tombstones bool) *history.History {
	h := history.New()
	if tombstones {
		h.Header.Deletes = history.TombstoneDeletes
	}
	for s := range 3 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	ids := make([]history.KeyID, keys)
	for k := range ids {
		ids[k] = h.Key(history.IntValue(int64(k)))
	}
	deleted := history.NullValue
	if tombstones {
		deleted = history.Tombstone
	}
	// states[i] is the state after i commits; versions[k] every state key k
	// has held.
	states := [][]history.Value{make([]history.Value, keys)}
	versions := make([][]history.Value, keys)
	for k := range versions {
		versions[k] = []history.Value{history.NullValue}
	}
	present := func(v history.Value) bool { return !v.IsNull() || v == history.Tombstone }
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(3)), HasTime: true}
		t.Begin = int64(r.IntN(20))
		t.End = t.Begin + int64(r.IntN(10))
		snap := states[max(0, len(states)-1-r.IntN(3))]
		view := append([]history.Value(nil), snap...)
		see := func(k int) history.Value {
			switch r.IntN(20) {
			case 0:
				vs := versions[k]
				return vs[r.IntN(len(vs))]
			case 1:
				// Any value of the domain: perhaps one a later
				// transaction writes (circular information flow).
				return history.IntValue(int64(1 + r.IntN(3)))
			}
			return view[k]
		}
		for range 1 + r.IntN(3) {
			k := r.IntN(keys)
			switch x := r.IntN(10); {
			case x < 3:
				v := see(k)
				if v == history.Tombstone {
					v = history.NullValue
				}
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: ids[k], Value: v})
			case x < 6:
				v := history.IntValue(int64(1 + r.IntN(3)))
				view[k] = v
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: ids[k], Value: v})
			case x < 7:
				view[k] = deleted
				t.Ops = append(t.Ops, history.Op{Kind: history.Delete, Key: ids[k]})
			default:
				lo := r.IntN(keys)
				hi := lo + 1 + r.IntN(keys-lo)
				rg := &history.Range{Lo: history.IntValue(int64(lo)), Hi: history.IntValue(int64(hi))}
				if r.IntN(4) == 0 {
					rg.HiOpen, rg.Hi, hi = true, history.NullValue, keys
				}
				kind, limit := history.Scan, keys
				if x == 9 {
					kind, limit = history.Iter, 1+r.IntN(2)
				}
				for q := lo; q < hi && len(rg.Pairs) < limit; q++ {
					v := see(q)
					if !present(v) || r.IntN(20) == 0 {
						continue
					}
					if v == history.Tombstone {
						v = history.NullValue
					}
					rg.Pairs = append(rg.Pairs, history.KV{Key: ids[q], Value: v})
				}
				t.Ops = append(t.Ops, history.Op{Kind: kind, Key: history.NoKey, Range: rg})
			}
		}
		switch r.IntN(10) {
		case 0:
			t.Status = history.Aborted
		case 1:
			t.Status = history.Unknown
		}
		if t.Status != history.Aborted && (t.Status == history.Committed || r.IntN(2) == 0) {
			next := append([]history.Value(nil), states[len(states)-1]...)
			for _, op := range t.Ops {
				if op.Kind == history.Write || op.Kind == history.Delete {
					v := h.Installed(op)
					next[op.Key] = v
					versions[op.Key] = append(versions[op.Key], v)
				}
			}
			states = append(states, next)
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// satAgrees fails t unless the solver checker's verdict on h at level id is
// the oracle's, every cycle it reports connects, and at snapshot isolation
// (with session order or without) and prefix consistency the BC-graph
// encoding agrees too. It returns whether h satisfies id.
func satAgrees(t *testing.T, h *history.History, seed uint64, id level.ID) bool {
	t.Helper()
	want, err := reference.Check(h, id)
	if err != nil {
		t.Fatalf("seed %d: oracle: %v", seed, err)
	}
	names := []string{"sat"}
	if id == level.SnapshotIsolation || id == level.GSI || id == level.Prefix {
		names = append(names, "sat-bc") // the split graphs' other encoding
	}
	for _, name := range names {
		res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
		if err != nil {
			t.Fatalf("seed %d %s (%s): %v\n%s", seed, id, name, err, history.Notation(h))
		}
		if got := res.Outcome == check.Satisfied; got != want {
			t.Fatalf("seed %d %s: %s says satisfied=%v, oracle %v; %s\n%s", seed, id, name, got, want, kinds(res), history.Notation(h))
		}
		cyclesConnect(t, res)
	}
	return want
}

// cyclesConnect fails t when a reported cycle has a gap or a step from a
// transaction to itself.
func cyclesConnect(t *testing.T, res check.Result) {
	t.Helper()
	for _, a := range res.Anomalies {
		for i, s := range a.Cycle {
			if s.From == s.To || s.To != a.Cycle[(i+1)%len(a.Cycle)].From {
				t.Fatalf("a broken cycle: %v", a.Cycle)
			}
		}
	}
}

// TestDifferentialRangeSAT: on thousands of small histories with deletes
// (physical and tombstones), scans and iterators, the solver checker
// agrees with the brute-force oracle at every level it decides (RU, RC,
// SI, SER, SSER), and so does the
// BC-graph encoding of snapshot isolation.
func TestDifferentialRangeSAT(t *testing.T) {
	levels := []level.ID{level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation, level.Serializable, level.StrictSerializable}
	held, total := 0, 0
	violated := map[string]int{}
	for seed := range uint64(differentialRuns) {
		r := rand.New(rand.NewPCG(seed, 47))
		h := randomRange(r, 2+r.IntN(6), 2+r.IntN(4), seed%3 == 0)
		for _, id := range levels {
			got := satAgrees(t, h, seed, id)
			total++
			if got {
				held++
			} else {
				violated[level.Get(id).Short]++
			}
		}
	}
	t.Logf("%d of %d verdicts hold; violations per level: %v", held, total, violated)
	if held < total/10 || held > total*9/10 {
		t.Fatalf("the generator is lopsided: %d of %d verdicts hold", held, total)
	}
}

// TestDifferentialSIEncodings: on generated histories of Boomslang's
// workloads, 1,500 transactions each, with and without injected faults,
// the split-graph and BC-graph encodings of snapshot isolation give the
// same verdicts.
func TestDifferentialSIEncodings(t *testing.T) {
	verdicts := map[check.Outcome]int{}
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		for _, w := range []gen.RangeWorkload{gen.RandomBench, gen.RandomRange, gen.BlindW} {
			for _, fault := range []float64{0, 0.01} {
				h, err := gen.GenerateRange(gen.RangeConfig{Workload: w, Mode: gen.SnapshotIsolation, Txns: 1500, Sessions: 12, Keys: 300, Fault: fault, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				var got [2]check.Outcome
				for i, name := range []string{"sat", "sat-bc"} {
					res, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{Checker: name})
					if err != nil {
						t.Fatal(err)
					}
					got[i] = res.Outcome
					cyclesConnect(t, res)
				}
				if got[0] != got[1] {
					t.Fatalf("%v seed %d fault %g: split graph %v, BC graph %v", w, seed, fault, got[0], got[1])
				}
				verdicts[got[0]]++
			}
		}
	}
	t.Logf("verdicts: %v", verdicts)
	if verdicts[check.Satisfied] == 0 || verdicts[check.Violation] == 0 {
		t.Fatalf("one-sided: %v", verdicts)
	}
}
