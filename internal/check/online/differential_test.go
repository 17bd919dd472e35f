package online

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// stream feeds h (in arrival order) to a checker in random batches and
// drains it.
func stream(t *testing.T, r *rand.Rand, h *history.History, l level.Level, fences bool, roundMin int, hook bool, mem int64) (Result, error) {
	t.Helper()
	cfg := Config{Level: l, MemoryBytes: mem}
	if fences {
		f := fenceName
		cfg.FenceKey = &f
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.st.roundMin, c.st.nextRound, c.st.dropHook = roundMin, roundMin, hook
	var online []Finding
	for i := 0; i < len(h.Txns); {
		n := min(1+r.IntN(48), len(h.Txns)-i)
		got, err := c.Add(h, h.Txns[i:i+n])
		if err != nil {
			return Result{}, err
		}
		online = append(online, got...)
		i += n
	}
	res, err := c.Drain(context.Background())
	if err != nil {
		return res, err
	}
	if len(res.Findings) < len(online) || !slices.EqualFunc(res.Findings[:len(online)], online, func(a, b Finding) bool { return a.History == b.History && a.Arrived == b.Arrived }) {
		return res, fmt.Errorf("drain's findings do not begin with the %d reported online", len(online))
	}
	return res, nil
}

// disagree holds an online result against the offline check of the same
// history: every finding must be one of a violated history with every
// edge of its cycle holding in the whole history, and the verdicts must
// be equal. It returns what differs, "" for nothing.
func disagree(h *history.History, l level.Level, on Result) string {
	off, err := check.Run(context.Background(), h, l, check.Options{})
	if err != nil {
		return "offline: " + err.Error()
	}
	if off.Outcome == check.Undecided {
		return ""
	}
	if len(on.Findings) > 0 && off.Outcome != check.Violated {
		f := on.Findings[0]
		return fmt.Sprintf("online found %s (%v) but offline says %s", f.Anomaly.Kind, names(f), off.Outcome)
	}
	for _, f := range on.Findings {
		if f.Chosen {
			continue // its cycle rests on the solver's choice of an order no read showed
		}
		if why := badEdge(h, f); why != "" {
			return fmt.Sprintf("online finding %s (%v): %s", f.Anomaly.Kind, names(f), why)
		}
	}
	if on.Outcome == check.Undecided && on.Stats.DroppedKeys > 0 && strings.Contains(on.Reason, "dropped under the memory bound") {
		// A key dropped under a small bound was touched again: the
		// checker says it cannot judge, which is no verdict to compare.
		return ""
	}
	if on.Outcome == check.Undecided && lateSessionOnly(on.Reason) {
		// A session that first arrived after what its reads missed was
		// forgotten (arrival lets a session lag arbitrarily): no fence of
		// it could be asked to read past it, and the checker says so.
		return ""
	}
	if on.Outcome != off.Outcome {
		return fmt.Sprintf("online says %s (%s), offline %s (%d anomalies, first %v)", on.Outcome, on.Reason, off.Outcome, len(off.Anomalies), firstKind(off))
	}
	return ""
}

// lateSessionOnly says the only reason an online result is undecided is
// reads by sessions that first arrived after what they missed was
// forgotten.
func lateSessionOnly(reason string) bool {
	return strings.Contains(reason, "by sessions that first arrived after") && !strings.Contains(reason, "; ")
}

func firstKind(r check.Result) string {
	if len(r.Anomalies) == 0 {
		return "-"
	}
	return r.Anomalies[0].Kind.String()
}

func names(f Finding) []string {
	var out []string
	for _, t := range f.Anomaly.Txns {
		out = append(out, f.History.TxnName(t))
	}
	return out
}

// badEdge checks each edge of f's cycle in the whole history h, by the
// lists' definitions (not the checkers'): "" when every edge holds.
func badEdge(h *history.History, f Finding) string {
	byID := map[history.Value]int{}
	for i, t := range h.Txns {
		byID[t.ID] = i
	}
	// Each key's order: its longest committed read.
	order := map[history.KeyID]map[history.Value]int{}
	longest := map[history.KeyID][]history.Value{}
	for _, t := range h.Txns {
		if t.Status != history.Committed {
			continue
		}
		for j, o := range t.Ops {
			if o.Kind != history.ReadList {
				continue
			}
			// Less the transaction's own appends at its end.
			var own []history.Value
			for _, p := range t.Ops[:j] {
				if p.Kind == history.Append && p.Key == o.Key {
					own = append(own, p.Value)
				}
			}
			l := o.List
			if len(own) > 0 && len(l) >= len(own) && slices.Equal(l[len(l)-len(own):], own) {
				l = l[:len(l)-len(own)]
			}
			if len(l) > len(longest[o.Key]) {
				longest[o.Key] = l
			}
		}
	}
	for k, l := range longest {
		order[k] = map[history.Value]int{}
		for i, e := range l {
			order[k][e] = i
		}
	}
	pos := func(k history.KeyID, e history.Value) int {
		if p, ok := order[k][e]; ok {
			return p
		}
		return 1 << 30
	}
	for _, st := range f.Anomaly.Cycle {
		if st.From < 0 || st.To < 0 {
			continue
		}
		fi, ok1 := byID[f.History.Txns[st.From].ID]
		ti, ok2 := byID[f.History.Txns[st.To].ID]
		if !ok1 || !ok2 {
			return "a transaction of the cycle is not in the history"
		}
		from, to := &h.Txns[fi], &h.Txns[ti]
		k := history.NoKey
		if st.Key != history.NoKey {
			var ok bool
			if k, ok = h.LookupKey(f.History.Keys[st.Key]); !ok {
				return "a key of the cycle is not in the history"
			}
		}
		appends := func(t *history.Txn) []history.Value {
			var out []history.Value
			for _, o := range t.Ops {
				if o.Kind == history.Append && o.Key == k {
					out = append(out, o.Value)
				}
			}
			return out
		}
		holds := false
		registers := len(appends(from)) == 0 && len(appends(to)) == 0
		switch st.Dep {
		case anomaly.SO:
			holds = from.Session == to.Session && fi < ti
		case anomaly.WR:
			for _, o := range to.Ops {
				if o.Kind == history.Read && o.Key == k {
					for _, w := range from.Ops {
						holds = holds || w.Kind == history.Write && w.Key == k && w.Value == o.Value
					}
				}
				if o.Kind == history.ReadList && o.Key == k {
					for _, e := range appends(from) {
						holds = holds || slices.Contains(o.List, e)
					}
				}
			}
		case anomaly.WW:
			for _, a := range appends(from) {
				for _, b := range appends(to) {
					// Two appends no read shows: the solver's choice.
					holds = holds || pos(k, a) < pos(k, b) || pos(k, a) == pos(k, b)
				}
			}
		case anomaly.RW:
			for _, o := range from.Ops {
				if o.Kind != history.ReadList || o.Key != k {
					continue
				}
				for _, b := range appends(to) {
					holds = holds || !slices.Contains(o.List, b) && pos(k, b) >= len(o.List)-len(appends(from))
				}
			}
		default:
			holds = true
		}
		if registers && (st.Dep == anomaly.WW || st.Dep == anomaly.RW) {
			// A register's version order is the solver's choice: the
			// edge is one of an order the violation holds under.
			holds = true
		}
		if !holds {
			return fmt.Sprintf("edge %s %s→%s on %s does not hold", st.Dep, from.ID, to.ID, h.KeyName(k))
		}
	}
	return ""
}

var levels = []level.ID{level.Serializable, level.SnapshotIsolation, level.ReadCommitted}

// TestDifferentialSimulated streams simulated list stores' histories —
// correct ones and ones whose reads are now and then stale — with fences,
// in orders that keep only each session's order, past many garbage-
// collection rounds, and holds every result against the offline
// checker's.
func TestDifferentialSimulated(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 120
	}
	var cases, violated, undecided, late, forgot, rounds, findings, dropped int
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 35))
		c := simConfig{txns: 300 + r.IntN(900), sessions: 2 + r.IntN(5), keys: 2 + r.IntN(5), appendsPerKey: 5 + r.IntN(30),
			fenceEvery: []int{0, 3, 8, 20}[r.IntN(4)], lag: 1 + r.IntN(20)}
		switch r.IntN(4) {
		case 0:
		case 1:
			c.stale = 0.002
		case 2:
			c.stale = 0.02
		default:
			c.stale, c.abort, c.unknown = 0.005, 0.05, 0.03
		}
		h := arrival(r, simLists(r, c))
		l := level.Get(levels[r.IntN(len(levels))])
		var mem int64
		if r.IntN(3) == 0 {
			mem = 64 << 10 // small: settled keys are dropped
		}
		res, err := stream(t, r, h, l, c.fenceEvery > 0, 32+r.IntN(64), false, mem)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := disagree(h, l, res); d != "" {
			t.Fatalf("case %d (%+v, %s): %s", i, c, l.Name, d)
		}
		cases++
		if res.Outcome == check.Violated {
			violated++
		}
		if res.Outcome == check.Undecided {
			undecided++
			if lateSessionOnly(res.Reason) {
				late++
			}
		}
		forgot += int(res.Stats.Forgotten)
		rounds += int(res.Stats.Rounds)
		dropped += int(res.Stats.DroppedKeys)
		findings += len(res.Findings)
	}
	t.Logf("%d histories, %d violated, %d undecided (%d a session that arrived late, the others a dropped key touched again), %d findings, %d rounds, %d transactions forgotten, %d keys dropped",
		cases, violated, undecided, late, findings, rounds, forgot, dropped)
	if undecided > cases/20 {
		t.Fatalf("%d of %d undecided", undecided, cases)
	}
	if violated == 0 || violated == cases || forgot == 0 || dropped == 0 {
		t.Fatalf("the cases do not exercise the checker: %d violated of %d, %d forgotten", violated, cases, forgot)
	}
}

// TestDifferentialGenerated streams gen's list-append histories, with
// planted anomalies and fences, the same way.
func TestDifferentialGenerated(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 60
	}
	var violated, forgot int
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 36))
		cfg := gen.ListAppendConfig{Txns: 300 + r.IntN(900), Sessions: 2 + r.IntN(5), ActiveKeys: 2 + r.IntN(6), AppendsPerKey: 5 + r.IntN(40),
			MaxOps: 1 + r.IntN(4), ReadRatio: 0.5, Seed: uint64(i)}
		if r.IntN(3) == 0 {
			cfg.Mode = gen.SnapshotIsolation
		}
		if r.IntN(2) == 0 {
			cfg.Plant = []gen.ListPlant{gen.ListPlants()[r.IntN(len(gen.ListPlants()))]}
		}
		abort := 0.0 // aborted transactions and fences, as on a database that refuses some
		if r.IntN(2) == 0 {
			abort = 0.2
			cfg.AbortRatio = 0.1
		}
		g, _, err := gen.GenerateListAppend(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := arrival(r, withFences(r, g, 1+r.IntN(10), abort))
		l := level.Get(levels[r.IntN(len(levels))])
		res, err := stream(t, r, h, l, true, 32+r.IntN(64), false, 0)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := disagree(h, l, res); d != "" {
			t.Fatalf("case %d (%s, mode %s, plant %v): %s", i, l.Name, cfg.Mode, cfg.Plant, d)
		}
		if res.Outcome == check.Violated {
			violated++
		}
		forgot += int(res.Stats.Forgotten)
	}
	t.Logf("%d histories, %d violated, %d transactions forgotten", n, violated, forgot)
	if violated == 0 || forgot == 0 {
		t.Fatalf("the cases do not exercise the checker: %d violated, %d forgotten", violated, forgot)
	}
}

// TestPlantedGCBugIsCaught forgets one transaction too many each round
// (the test hook) and requires the differential comparison to notice.
func TestPlantedGCBugIsCaught(t *testing.T) {
	caught := 0
	for i := range 60 {
		r := rand.New(rand.NewPCG(uint64(i), 37))
		c := simConfig{txns: 600, sessions: 3, keys: 3, appendsPerKey: 20, fenceEvery: 5, lag: 10, stale: 0.01}
		h := arrival(r, simLists(r, c))
		l := level.Get(levels[i%len(levels)])
		res, err := stream(t, r, h, l, true, 48, true, 0)
		if err != nil {
			caught++
			continue
		}
		if disagree(h, l, res) != "" {
			caught++
		}
	}
	t.Logf("the planted bug was caught in %d of 60 histories", caught)
	if caught == 0 {
		t.Fatal("forgetting a transaction too early went unnoticed by the differential comparison")
	}
}

// TestDifferentialSetBound streams simulated histories to checkers whose
// bound SetBound moves between batches, as a service does under memory
// pressure (from 1 KiB, which drops every idle key, to the configured
// bound), so that idle keys are dropped between rounds too, and holds
// every result against the offline checker's: equal, or undecided with
// a dropped key touched again.
func TestDifferentialSetBound(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 40
	}
	var violated, undecided, dropped, forgot int
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), 38))
		c := simConfig{txns: 300 + r.IntN(900), sessions: 2 + r.IntN(5), keys: 2 + r.IntN(5), appendsPerKey: 5 + r.IntN(30),
			fenceEvery: []int{3, 8, 20}[r.IntN(3)], lag: 1 + r.IntN(20)}
		if r.IntN(2) == 0 {
			c.stale, c.abort, c.unknown = 0.005, 0.05, 0.03
		}
		h := arrival(r, simLists(r, c))
		l := level.Get(levels[r.IntN(len(levels))])
		f := fenceName
		const mem = 64 << 20
		ch, err := New(Config{Level: l, MemoryBytes: mem, FenceKey: &f})
		if err != nil {
			t.Fatal(err)
		}
		ch.st.roundMin, ch.st.nextRound = 32+r.IntN(64), 32
		for j := 0; j < len(h.Txns); {
			k := min(1+r.IntN(48), len(h.Txns)-j)
			if _, err := ch.Add(h, h.Txns[j:j+k]); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			j += k
			switch r.IntN(4) {
			case 0:
				ch.SetBound(1 << (10 + r.IntN(8)))
			case 1:
				ch.SetBound(mem)
			}
			if st := ch.Stats(); st.Bound < 1 || st.Bound > mem {
				t.Fatalf("case %d: bound %d outside 1..%d", i, st.Bound, mem)
			}
		}
		res, err := ch.Drain(context.Background())
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := disagree(h, l, res); d != "" {
			t.Fatalf("case %d (%+v, %s): %s", i, c, l.Name, d)
		}
		switch res.Outcome {
		case check.Violated:
			violated++
		case check.Undecided:
			undecided++
		}
		dropped += int(res.Stats.DroppedKeys)
		forgot += int(res.Stats.Forgotten)
	}
	t.Logf("%d histories, %d violated, %d undecided, %d keys dropped, %d transactions forgotten", n, violated, undecided, dropped, forgot)
	if violated == 0 || violated == n || dropped == 0 || forgot == 0 {
		t.Fatalf("the cases do not exercise the checker: %d violated of %d, %d keys dropped, %d forgotten", violated, n, dropped, forgot)
	}
	if undecided > n/4 {
		t.Fatalf("%d of %d undecided", undecided, n)
	}
}
