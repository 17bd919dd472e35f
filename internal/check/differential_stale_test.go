package check_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Shapes of staleRegisters' histories.
const (
	// blindShape: reads and blind writes in any order (dsg, sat).
	blindShape = iota
	// rmwShape: every write follows a read of its key (mt, dsg, sat).
	rmwShape
	// casShape: one key, each transaction alone in its session, a read
	// and maybe a write (lwt, mt, dsg, sat).
	casShape
)

// staleRegisters is staleLists for registers: a store whose transactions
// often read an old snapshot (now and then each read its own) and write
// fresh unique values on top of the current state at commit, so that
// writes go unobserved, writers of a key are left unordered by the reads,
// and lost updates and write skews happen. shape picks the form of the
// transactions. Some transactions abort, some end unknown (installed or
// not); instants follow snapshot and commit times loosely.
func staleRegisters(r *rand.Rand, txns, keys, sessions, shape int) *history.History {
	h := history.New()
	h.Header.UniqueValues = true
	if shape == casShape {
		keys, sessions = 1, txns
	}
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.StringValue(string(rune('x' + k))))
	}
	states := [][]history.Value{make([]history.Value, keys)} // committed states, oldest first
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasTime: true}
		if shape == casShape {
			t.Session = int32(i)
		}
		snapshot := func() int {
			if r.IntN(2) == 0 {
				return len(states) - 1
			}
			return r.IntN(len(states))
		}
		snap := snapshot()
		perRead := shape == blindShape && r.IntN(8) == 0
		own := map[int]history.Value{}
		read := func(k int) {
			v, mine := own[k]
			if !mine {
				s := snap
				if perRead {
					s = snapshot()
				}
				v = states[s][k]
			}
			t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k], Value: v})
		}
		write := func(k int) {
			v := history.IntValue(next)
			next++
			own[k] = v
			t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: v})
		}
		switch shape {
		case blindShape:
			for range 1 + r.IntN(4) {
				if k := r.IntN(keys); r.IntN(2) == 0 {
					read(k)
				} else {
					write(k)
				}
			}
		default:
			touched := []int{r.IntN(keys)}
			if k := r.IntN(keys); shape == rmwShape && k != touched[0] && r.IntN(2) == 0 {
				touched = append(touched, k)
			}
			for _, k := range touched {
				read(k)
				if r.IntN(3) > 0 {
					write(k)
				}
			}
		}
		states = settle(r, &t, snap, states, own, 12)
		h.Txns = append(h.Txns, t)
	}
	return h
}

// settle ends t, which read snapshot snap of states and wrote own (key
// to its last value): instants loosely after the snapshot and at the
// commit, status aborted or unknown one time in odds each (an unknown
// one installed or not). It returns states with the state t installed,
// if it did, appended.
func settle(r *rand.Rand, t *history.Txn, snap int, states [][]history.Value, own map[int]history.Value, odds int) [][]history.Value {
	t.HasTime = true
	t.Begin = int64(2*snap + r.IntN(3))
	t.End = max(int64(2*len(states)+r.IntN(2)), t.Begin)
	installed := true
	switch r.IntN(odds) {
	case 0:
		t.Status, installed = history.Aborted, false
	case 1:
		t.Status, installed = history.Unknown, r.IntN(2) == 0
	}
	if !installed {
		return states
	}
	after := slices.Clone(states[len(states)-1])
	for _, k := range slices.Sorted(maps.Keys(own)) {
		after[k] = own[k]
	}
	return append(states, after)
}

// staleLevels are the levels of TestDifferentialStaleRegisters: those of
// the other differential tests and (for every fourth history) the Adya
// levels between RC and SI.
var staleLevels = append([]level.ID{level.CursorStability, level.PL2Plus, level.PLFCV, level.RepeatableRead}, differentialLevels...)

// TestDifferentialStaleRegisters: every checker that decides a history —
// dsg, mt, lwt, sat, sat-bc, and auto — agrees with the oracle at RU,
// RC, CS, PL-2+, PL-FCV, RR, SI, SER and SSER on register histories from a store with stale
// snapshots: blind and unobserved writes whose version order no read
// gives, unknown and aborted transactions. Chronos needs the database's
// timestamps and is left out.
func TestDifferentialStaleRegisters(t *testing.T) {
	n := differentialRuns / 4
	if testing.Short() {
		n = 300
	}
	decided := map[string]int{}
	violations, verdicts := 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 59))
		h := staleRegisters(r, 2+r.IntN(5), 1+r.IntN(3), 1+r.IntN(3), int(seed%3))
		levels := differentialLevels
		if seed%4 == 0 {
			levels = staleLevels // the oracle's Adya enumeration is slower
		}
		for _, id := range levels {
			want, err := reference.Check(h, id)
			if err != nil {
				t.Fatalf("seed %d: oracle: %v", seed, err)
			}
			verdicts++
			if !want {
				violations++
			}
			for _, name := range append(check.Names(), "auto") {
				if name == "chronos" {
					continue
				}
				res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
				if err != nil {
					if name == "auto" {
						t.Fatalf("seed %d %s: %v\n%s", seed, id, err, history.Notation(h))
					}
					continue // the named checker does not decide this history
				}
				decided[name]++
				if got := res.Outcome == check.Satisfied; got != want {
					t.Fatalf("seed %d %s (%s): satisfied=%v, oracle %v; %s\n%s", seed, id, res.Checker, got, want, kinds(res), history.Notation(h))
				}
				cyclesConnect(t, res)
			}
		}
	}
	for _, name := range []string{"dsg", "mt", "lwt", "sat", "sat-bc"} {
		if decided[name] < n/10 {
			t.Errorf("%s decided only %d verdicts", name, decided[name])
		}
	}
	if violations < verdicts/10 || violations > verdicts*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violations, verdicts)
	}
	t.Logf("%d histories, %d oracle verdicts (%d violations); verdicts compared per checker: %v", n, verdicts, violations, decided)
}
