package polygraph

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestBuildStopsWithItsContext: building gives up with the context's error
// once it ends — an interrupted check of a large history must not go on
// reading candidates (it did, ignoring SIGTERM, on 100,000 transactions
// with repeated values) — and builds as before with a live one.
func TestBuildStopsWithItsContext(t *testing.T) {
	h := history.New()
	x := h.Key(history.IntValue(0))
	h.Sessions = append(h.Sessions, history.IntValue(0))
	h.Txns = append(h.Txns,
		history.Txn{ID: history.IntValue(1), Ops: []history.Op{{Kind: history.Write, Key: x, Value: history.IntValue(1)}}},
		history.Txn{ID: history.IntValue(2), Ops: []history.Op{{Kind: history.Read, Key: x, Value: history.IntValue(1)}}})
	ix := history.NewIndex(h)
	l := level.Get(level.ReadCommitted)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := build(ctx, ix, l, false, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled build: %v", err)
	}
	p, err := build(context.Background(), ix, l, false, 0)
	if err != nil || len(p.Reads) != 1 {
		t.Fatalf("a build: %v, %d reads", err, len(p.Reads))
	}
}

// blindWrites is the blind-write history, n transactions in sessions sessions:
// the even ones blind writes of i%3 to one key, the odd ones reads of a
// random one of those values.
func blindWrites(n, sessions int) *history.Index {
	r := rand.New(rand.NewPCG(1, 18))
	h := history.New()
	x := h.Key(history.IntValue(0))
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	for i := range n {
		op := history.Op{Kind: history.Write, Key: x, Value: history.IntValue(int64(i % 3))}
		if i%2 == 1 {
			op = history.Op{Kind: history.Read, Key: x, Value: history.IntValue(r.Int64N(3))}
		}
		h.Txns = append(h.Txns, history.Txn{ID: history.IntValue(int64(i)), Session: int32(i % sessions), Ops: []history.Op{op}})
	}
	return history.NewIndex(h)
}

// cancelled returns a guard whose context has ended.
func cancelled() *guard {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return newGuard(ctx, 0)
}

// TestPhasesStopWithTheirContext: each phase of the solver's set-up —
// the sparse and dense pair construction, the chains, pruning (pairs and
// candidates), the known-cycle search, the derived count, encoding and
// the whole check — does nothing more once its context has ended and
// says so, where with a live context the same call does its work. Once
// none of them but reading candidates looked at the context.
func TestPhasesStopWithTheirContext(t *testing.T) {
	ix := blindWrites(200, 10)
	ser := level.Get(level.Serializable)
	live := func(dense bool) *Polygraph {
		p, err := build(context.Background(), ix, ser, dense, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	stopped := func(phase string, p *Polygraph) {
		t.Helper()
		if !errors.Is(p.Err(), context.Canceled) {
			t.Errorf("%s: Err %v, want the context's", phase, p.Err())
		}
	}

	// The sparse construction: no pair once the context has ended.
	p := live(false)
	if len(p.Pairs) == 0 || p.chains == nil {
		t.Fatalf("the sparse construction made %d pairs", len(p.Pairs))
	}
	p.Pairs, p.pairs, p.KnownAnti, p.g = nil, map[pairKey]int32{}, nil, cancelled()
	p.sparsePairs()
	stopped("sparsePairs", p)
	if len(p.Pairs) != 0 || len(p.KnownAnti) != 0 {
		t.Errorf("sparsePairs made %d pairs and %d anti-dependencies after the end", len(p.Pairs), len(p.KnownAnti))
	}
	// The chains and the reachability matrix stop part way.
	p = live(false)
	g, order, _ := knownGraph(len(p.h.Txns), p.Known)
	if p.chains.compute(g, order, cancelled()) {
		t.Error("the chains were computed after the end")
	}
	// The dense construction: addPair refuses.
	p = live(true)
	if len(p.Pairs) == 0 {
		t.Fatal("the dense construction made no pair")
	}
	p.g = cancelled()
	if n := len(p.Pairs); p.addPair(1, 3, 0) || len(p.Pairs) != n {
		t.Error("addPair made a pair after the end")
	}
	stopped("addPair", p)

	// Pruning decides pairs and narrows candidates with a live context
	// (the dense construction leaves it pairs the known graph orders),
	// nothing once it has ended.
	for _, dense := range []bool{false, true} {
		p = live(dense)
		if n, _ := p.Prune(false, 0); (n == 0 && dense) || p.Err() != nil {
			t.Fatalf("dense %v: pruning decided %d: %v", dense, n, p.Err())
		}
		p = live(dense)
		p.g = cancelled()
		if n, _ := p.Prune(false, 0); n != 0 || p.Open() != len(p.Pairs) {
			t.Errorf("dense %v: pruning decided %d after the end", dense, n)
		}
		stopped("Prune", p)
	}
	p = live(false)
	p.Prune(false, 1)
	p.g = cancelled()
	if n := p.pruneCandidates(p.reach); n != 0 {
		t.Errorf("pruneCandidates narrowed %d reads after the end", n)
	}
	stopped("pruneCandidates", p)

	// The known-cycle search, the derived count.
	p = live(false)
	p.g = cancelled()
	if _, err := p.knownCycles(context.Background(), ix, ser); !errors.Is(err, context.Canceled) {
		t.Errorf("knownCycles: %v", err)
	}
	p = live(false)
	if n := p.derivedEstimate(DefaultMaxDerived); n < 2*guardEvery {
		t.Fatalf("only %d derived anti-dependencies", n)
	}
	p.g = cancelled()
	if n := p.derivedEstimate(DefaultMaxDerived); n >= guardEvery {
		t.Errorf("derivedEstimate counted %d after the end", n)
	}
	stopped("derivedEstimate", p)

	// Encoding.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Encode(ctx, live(false), false, 0, true, false); !errors.Is(err, context.Canceled) {
		t.Errorf("Encode: %v", err)
	}
	if _, err := Encode(context.Background(), live(false), false, 0, true, false); err != nil {
		t.Errorf("Encode with a live context: %v", err)
	}
	// The whole check, and the unsat search and shrinking it may start.
	if _, _, err := (Checker{}).Run(ctx, ix, ser); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if _, ok := (Checker{}).unsatSearch(ctx, ix, ser); ok {
		t.Error("the unsat search found a violation after the end")
	}
}

// TestMemoryLimit: a construction that would keep more than the checker's
// MemoryLimit stops with a *MemoryError, which says the check is
// undecided and names the share — while reading candidates, while making
// pairs — and a limit it fits in changes nothing.
func TestMemoryLimit(t *testing.T) {
	ix := blindWrites(200, 10)
	ser := level.Get(level.Serializable)
	full, err := build(context.Background(), ix, ser, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for limit, what := range map[int64]string{1: "candidate writers", full.g.used / 2: "pairs"} {
		_, err := build(context.Background(), ix, ser, false, limit)
		var me *MemoryError
		if !errors.As(err, &me) || !errors.Is(err, checker.ErrUndecided) || me.Limit != limit || !strings.Contains(err.Error(), "needs more than") || !strings.Contains(me.What, what) {
			t.Fatalf("limit %d of %d: %v", limit, full.g.used, err)
		}
	}
	p, err := build(context.Background(), ix, ser, false, full.g.used)
	if err != nil || len(p.Pairs) != len(full.Pairs) || len(p.Reads) != len(full.Reads) {
		t.Fatalf("a limit it fits in: %v, %d pairs and %d reads, want %d and %d", err, len(p.Pairs), len(p.Reads), len(full.Pairs), len(full.Reads))
	}
	// The whole check: undecided for memory, before any search.
	var me *MemoryError
	if _, _, err := (Checker{MemoryLimit: full.g.used / 2}).Run(context.Background(), ix, ser); !errors.As(err, &me) {
		t.Fatalf("Run: %v", err)
	}
	// Past the construction, the derived anti-dependencies count too.
	if _, _, err := (Checker{MemoryLimit: full.g.used + 1, NoUnsatSearch: true}).Run(context.Background(), ix, ser); !errors.As(err, &me) || !strings.Contains(me.What, "conjunctions") {
		t.Fatalf("Run past the construction: %v", err)
	}
}
