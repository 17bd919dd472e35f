package check_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// staleLists simulates a list store whose transactions often read an old
// snapshot and append on top of whatever is committed when they commit —
// the shape of a lost update — and records a small list-append history:
// txns transactions (in commit order) over keys keys in sessions sessions.
// Each transaction reads one snapshot (the latest, or with probability
// 1/2 an older one; now and then each read takes its own, as at read
// committed), reads and appends fresh elements (a read returns the
// snapshot's list followed by the transaction's own appends), and commits
// (its appends go at the end of the current lists), aborts (nothing is
// installed) or ends unknown (installed or not). Instants follow the
// snapshot and commit times loosely, so real time is sometimes violated.
func staleLists(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.StringValue(string(rune('x' + k))))
	}
	states := [][][]history.Value{make([][]history.Value, keys)} // committed states, oldest first
	next := make([]int64, keys)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasTime: true}
		snapshot := func() int {
			if r.IntN(2) == 0 {
				return len(states) - 1
			}
			return r.IntN(len(states))
		}
		snap := snapshot()
		perRead := r.IntN(8) == 0
		own := make([][]history.Value, keys)
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			if r.IntN(2) == 0 {
				s := snap
				if perRead {
					s = snapshot()
				}
				list := append(slices.Clone(states[s][k]), own[k]...)
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: key[k], List: list})
				continue
			}
			next[k]++
			e := history.IntValue(next[k])
			own[k] = append(own[k], e)
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: key[k], Value: e})
		}
		t.Begin = int64(2*snap + r.IntN(3))
		t.End = int64(2*len(states) + r.IntN(2))
		t.End = max(t.End, t.Begin)
		installed := true
		switch r.IntN(12) {
		case 0:
			t.Status, installed = history.Aborted, false
		case 1:
			t.Status, installed = history.Unknown, r.IntN(2) == 0
		}
		if installed {
			cur := states[len(states)-1]
			after := make([][]history.Value, keys)
			for k := range keys {
				after[k] = append(slices.Clip(cur[k]), own[k]...)
			}
			states = append(states, after)
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// listLevels are the levels the list-append checker decides.
var listLevels = []level.ID{level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation, level.Serializable, level.StrictSerializable,
	level.GSI, level.PlainSerializable, level.RCSession, level.ReadAtomic, level.Causal, level.Prefix,
	level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead}

// TestDifferentialListAppend: on thousands of small list-append histories
// from a store with stale snapshots, the list-append checker (named, and
// chosen by auto) agrees with the brute-force oracle at RU, RC, SI, SER
// and SSER (with session order and without) and at the axiomatic levels
// (rc-session, read atomic, causal, prefix: the oracle applies the lists'
// appends in commit order), and every cycle it reports connects.
func TestDifferentialListAppend(t *testing.T) {
	n := differentialRuns
	if testing.Short() {
		n = 500
	}
	violations, verdicts, mismatches, other := 0, 0, 0, 0
	perLevel := map[level.ID]int{}
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 53))
		h := staleLists(r, 2+r.IntN(5), 1+r.IntN(3), 1+r.IntN(3))
		for _, id := range listLevels {
			want, err := reference.Check(h, id)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			if !want {
				violations++
				perLevel[id]++
			}
			for _, name := range []string{"list-append", "auto"} {
				verdicts++
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
				if err != nil {
					t.Fatalf("seed %d %s (%s): %v\n%s", seed, id, name, err, history.Notation(h))
				}
				if res.Checker != "list-append" {
					// Chronos decides, vacuously, histories in which no
					// transaction took effect.
					other++
				}
				if got := res.Outcome == check.Satisfied; got != want {
					mismatches++
					if mismatches <= 5 {
						t.Errorf("seed %d %s (%s): satisfied=%v, oracle %v; %s\n%s", seed, id, name, got, want, kinds(res), history.Notation(h))
					}
				}
				cyclesConnect(t, res)
			}
		}
	}
	if mismatches > 0 {
		t.Errorf("%d of %d verdicts disagree with the oracle", mismatches, verdicts)
	}
	if other > verdicts/100 {
		t.Errorf("auto chose another checker than list-append for %d of %d verdicts", other, verdicts)
	}
	// Guard against a generator that only makes trivial cases.
	if total := n * len(listLevels); violations < total/10 || violations > total*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violations, total)
	}
	for _, id := range listLevels {
		if id == level.ReadCommitted || id == level.ReadUncommitted {
			continue // a store of snapshots never reads an aborted or intermediate state, nor closes a cycle of writes and reads
		}
		if v := perLevel[id]; v < n/100 || v > n*99/100 {
			t.Errorf("unbalanced generator at %v: %d violations in %d histories", id, v, n)
		}
	}
	t.Logf("%d histories, %d verdicts compared, %d oracle violations (per level: %v)", n, verdicts, violations, perLevel)
}

// sloppyLists simulates a list store without isolation and records a
// small list-append history: txns transactions over keys keys run
// interleaved, a few at a time. Each append goes into the key's list at
// once (others read it before its transaction ends, and may append after
// it before the transaction appends again: write cycles), a read returns
// the list as it is (so a transaction may see others' appends after its
// own), and a transaction commits, aborts (its appends are taken out
// again, or now and then left in) or ends unknown. Now and then a read
// returns an element nobody appended or misses one.
func sloppyLists(r *rand.Rand, txns, keys int) *history.History {
	h := history.New()
	h.Sessions = append(h.Sessions, history.IntValue(0))
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.StringValue(string(rune('x' + k))))
	}
	lists := make([][]history.Value, keys)
	next := int64(0)
	type running struct {
		t    history.Txn
		left int
		mine []history.Value
	}
	var open []*running
	started := 0
	for started < txns || len(open) > 0 {
		if started < txns && (len(open) == 0 || (len(open) < 3 && r.IntN(2) == 0)) {
			open = append(open, &running{t: history.Txn{ID: history.IntValue(int64(started + 1))}, left: 1 + r.IntN(4)})
			started++
			continue
		}
		q := r.IntN(len(open))
		x := open[q]
		if x.left == 0 {
			open = slices.Delete(open, q, q+1)
			switch r.IntN(6) {
			case 0:
				x.t.Status = history.Aborted
				if r.IntN(4) != 0 {
					for k := range lists {
						lists[k] = slices.DeleteFunc(slices.Clone(lists[k]), func(e history.Value) bool { return slices.Contains(x.mine, e) })
					}
				}
			case 1:
				x.t.Status = history.Unknown
			}
			h.Txns = append(h.Txns, x.t)
			continue
		}
		x.left--
		k := r.IntN(keys)
		if r.IntN(2) == 0 {
			list := slices.Clone(lists[k])
			switch r.IntN(30) {
			case 0:
				list = append(list, history.IntValue(1000+next))
			case 1:
				if len(list) > 0 {
					list = list[1:]
				}
			}
			x.t.Ops = append(x.t.Ops, history.Op{Kind: history.ReadList, Key: key[k], List: list})
			continue
		}
		next++
		e := history.IntValue(next)
		x.mine = append(x.mine, e)
		lists[k] = append(slices.Clone(lists[k]), e)
		x.t.Ops = append(x.t.Ops, history.Op{Kind: history.Append, Key: key[k], Value: e})
	}
	return h
}

// TestDifferentialListAppendRU: on thousands of small list-append
// histories from a store without isolation (dirty reads and writes,
// aborted appends left in the lists, now and then a garbage or missing
// element), the list-append checker (named, and chosen by auto) agrees
// with the brute-force oracle at read uncommitted, and every cycle it
// reports connects.
func TestDifferentialListAppendRU(t *testing.T) {
	n := differentialRuns
	if testing.Short() {
		n = 500
	}
	ru := level.Get(level.ReadUncommitted)
	violations, g0, mismatches, other := 0, 0, 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 71))
		h := sloppyLists(r, 2+r.IntN(5), 1+r.IntN(3))
		want, err := reference.Check(h, level.ReadUncommitted)
		if err != nil {
			t.Fatalf("seed %d: oracle: %v", seed, err)
		}
		if !want {
			violations++
		}
		for _, name := range []string{"list-append", "auto"} {
			res, err := check.Run(context.Background(), h, ru, check.Options{Checker: name})
			if err != nil {
				t.Fatalf("seed %d (%s): %v\n%s", seed, name, err, history.Notation(h))
			}
			if res.Checker != "list-append" {
				other++
			}
			if got := res.Outcome == check.Satisfied; got != want {
				mismatches++
				if mismatches <= 5 {
					t.Errorf("seed %d (%s): satisfied=%v, oracle %v; %s\n%s", seed, name, got, want, kinds(res), history.Notation(h))
				}
			}
			if name == "list-append" && slices.ContainsFunc(res.Anomalies, func(a anomaly.Anomaly) bool { return a.Phenomenon == anomaly.G0 }) {
				g0++
			}
			cyclesConnect(t, res)
		}
	}
	if mismatches > 0 {
		t.Errorf("%d of %d verdicts disagree with the oracle", mismatches, 2*n)
	}
	if other > n/50 {
		t.Errorf("auto chose another checker than list-append for %d of %d verdicts", other, 2*n)
	}
	// Guard against a generator that only makes trivial cases, or never
	// a write cycle.
	if violations < n/10 || violations > n*9/10 || g0 < n/50 {
		t.Errorf("unbalanced generator: %d violations, %d with G0, in %d histories", violations, g0, n)
	}
	t.Logf("%d histories, %d oracle violations, %d with G0", n, violations, g0)
}
