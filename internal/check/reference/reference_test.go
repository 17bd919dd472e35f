package reference

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// checked lists the supported levels, weakest first: the order of the
// verdict strings below.
var checked = []level.ID{
	level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation,
	level.Serializable, level.StrictSerializable,
}

// Each case's want has one character per level of checked (RU RC SI SER
// SSER): '+' the level holds, '-' it is violated, 'e' Check returns an error
// (strict serializability without real-time instants).
var cases = []struct {
	name string
	h    string
	want string
}{
	{"empty", ``, "+++++"},
	{"serial", `s0: @0-1: r x _ w x 1 | s1: @2-3: r x 1 w x 2 w y 1 | s2: @4-5: r x 2 r y 1`, "+++++"},
	{"serial with initial values", `init: x=0 | @0-1: r x 0 w x 1 | @2-3: r x 1 w x 2`, "+++++"},
	{"lost update", `s0: r x _ w x 1 | s1: r x 1 w x 2 | s2: r x 1 w x 3`, "++--e"},
	{"write skew", `unique: init: x=0 y=0 | s1: r x 0 r y 0 w x 1 | s2: r x 0 r y 0 w y 1`, "+++-e"},
	{"read-only anomaly (Fekete)", `init: x=0 y=0 | r y 0 w y 20 | r x 0 r y 0 w x -11 | r x 0 r y 20`, "+++-e"},
	{"long fork", `init: x=0 y=0 | w x 1 | w y 1 | r x 1 r y 0 | r x 0 r y 1`, "++--e"},
	{"fractured read", `w x 1 w y 1 | r x 1 r y _`, "++--e"},
	{"aborted read (G1a)", `aborted: w x 1 | r x 1`, "+---e"},
	{"intermediate read (G1b)", `w x 1 w x 2 | r x 1`, "+---e"},
	{"read of a final write rewritten in between", `w x 1 w x 2 w x 1 | r x 1`, "++++e"},
	{"thin-air read", `w x 1 | r x 5`, "----e"},
	{"thin-air read with initial values", `init: x=0 | r x _`, "----e"},
	{"future read", `r x 1 w x 1`, "----e"},
	{"not my own write", `w x 1 | w x 2 r x 1`, "----e"},
	{"not my last write", `w x 1 | w x 2 w x 3 r x 2`, "----e"},
	{"own write read back", `r x _ w x 1 r x 1 w x 2 r x 2`, "++++e"},
	{"non-repeatable read", `init: x=0 | w x 1 | r x 0 r x 1`, "++--e"},
	{"repeated read across own write", `init: x=0 | r x 0 w x 1 r x 1`, "++++e"},
	{"session guarantee violation", `s0: r x _ w x 1 | s0: r x _`, "++--e"},
	{"session order respected", `s0: r x _ w x 1 | s0: r x 1`, "++++e"},
	{"stale read across sessions is serializable", `s0: r x _ w x 1 | s1: r x _`, "++++e"},
	{"real-time violation", `s0: @0-1: r x _ w x 1 | s1: @2-3: r x _`, "++++-"},
	{"overlapping in real time", `s0: @0-5: r x _ w x 1 | s1: @1-2: r x _`, "+++++"},
	{"real time equal instants do not order", `s0: @0-2: r x _ w x 1 | s1: @2-3: r x _`, "+++++"},
	{"G1c via wr edges", `r x 2 w y 1 | r y 1 w x 2`, "+---e"},
	{"G1c via wr edges, three transactions", `r z 3 w x 1 | r x 1 w y 2 | r y 2 w z 3`, "+---e"},
	{"write cycle is never observable (G0)", `w x 1 w y 2 | w x 2 w y 1 | r x 2 r y 2`, "++--e"},
	{"unknown whose write is read counts as committed", `unknown: w x 1 | r x 1`, "++++e"},
	{"unknown whose write is never read is harmless", `@0-1: unknown: w x 1 | @2-3: r x _`, "+++++"},
	{"unknown that would make a lost update did not commit", `r x _ w x 1 | r x 1 w x 2 | unknown: r x 1 w x 3`, "++++e"},
	{"unknown read makes it commit: fractured", `unknown: w x 1 w y 1 | r x 1 r y _`, "++--e"},
	{"unknown with a bad read did not commit", `unknown: r x 5 | unknown: w x 1 r x 2`, "++++e"},
	// Read uncommitted lets a read observe a transaction that never commits.
	{"unknown with a bad read is read", `unknown: r x 5 w y 1 | r y 1`, "+---e"},
	{"aborted with a bad read is ignored", `aborted: w x 1 r x 2 | aborted: r y 7 | r x _`, "++++e"},
	{"duplicates: only one writer serializes", `w x 1 w y 1 | w x 1 | r x 1 r y _`, "++++e"},
	{"duplicates: no writer serializes", `w x 1 w y 1 | w x 2 w y 1 | r x 1 r y _ | r x 2 r y _`, "++--e"},
	{"duplicates: only one writer avoids G1c", `r x 1 w y 1 | r y 1 w x 1 | w x 1`, "++++e"},
	{"duplicates: read of initial value rewritten", `init: x=0 | w x 1 | r x 1 w x 0 | r x 0 r x 0`, "++++e"},
	{"SI conflict through a snapshot", `init: x=0 | s1: r x 0 w x 1 | s2: r x 1 w x 2 | s3: r x 0`, "++++e"},
	// T3's snapshot must be after T2 and before T1 although T1 commits first:
	// T4 sees T1 and not T3.
	{"SI snapshot older than the last commit", `init: x=0 y=0 z=0 | w y 1 | w x 1 | r x 1 r y 0 w z 5 | r y 1 r z 0`, "+++-e"},
	{"SI snapshot must hold conflicting writer", `init: x=0 y=0 | r x 0 w x 1 w y 1 | r y 0 w x 2 | r x 2 r y 1`, "++--e"},
}

func TestCases(t *testing.T) {
	for _, c := range cases {
		h := history.MustParse(c.h)
		for li, id := range checked {
			ok, err := Check(h, id)
			got := "-"
			switch {
			case err != nil:
				got = "e"
			case ok:
				got = "+"
			}
			if want := c.want[li : li+1]; got != want {
				t.Errorf("%s at %v: got %s (err %v), want %s\n\t%s", c.name, id, got, err, want, c.h)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	var big []string
	for i := 0; i <= MaxTxns; i++ {
		big = append(big, fmt.Sprintf("w x %d", i))
	}
	tooBig := history.MustParse(strings.Join(big, " | "))
	// Aborted transactions do not count towards MaxTxns.
	fits := history.MustParse(strings.Join(big[:MaxTxns], " | ") + " | aborted: w x 99 | aborted: w y 1")
	bad := []struct {
		name string
		h    *history.History
		id   level.ID
	}{
		{"too many transactions", tooBig, level.ReadUncommitted},
		{"too many transactions, unknown ones count", history.MustParse(strings.Join(big[:MaxTxns], " | ") + " | unknown: w y 1"), level.Serializable},
		{"append beside a write", history.MustParse(`a x 1 | w y 1`), level.Serializable},
		{"list operation in an aborted transaction beside a write", history.MustParse(`aborted: a x 1 | w x 1`), level.ReadCommitted},
		{"too many transactions for the Adya enumeration", history.MustParse(strings.Join(big[:MaxAdyaTxns+1], " | ")), level.PL2Plus},
		{"unsupported level", history.MustParse(`w x 1`), level.ID(200)},
		{"SSER without time", history.MustParse(`@0-1: w x 1 | r x 1`), level.StrictSerializable},
		{"SSER with an unknown txn without time", history.MustParse(`@0-1: w x 1 | unknown: r x 1`), level.StrictSerializable},
	}
	for _, b := range bad {
		if ok, err := Check(b.h, b.id); err == nil {
			t.Errorf("%s: got %v and no error", b.name, ok)
		}
	}
	for _, id := range checked[:4] {
		if ok, err := Check(fits, id); err != nil || !ok {
			t.Errorf("%d blind writes and two aborted ones at %v: got %v, %v; want true", MaxTxns, id, ok, err)
		}
	}
	// SSER ignores aborted transactions without time.
	if ok, err := Check(history.MustParse(`@0-1: w x 1 | aborted: w x 2 | @2-3: r x 1`), level.StrictSerializable); err != nil || !ok {
		t.Errorf("aborted txn without time at SSER: got %v, %v", ok, err)
	}
}

// TestLocksIgnored: a locking read is a read.
func TestLocksIgnored(t *testing.T) {
	h := history.MustParse(`w x 1 | r* x 1`)
	for _, id := range checked[:4] {
		if ok, err := Check(h, id); err != nil || !ok {
			t.Errorf("%v: got %v, %v", id, ok, err)
		}
	}
}

// TestSpeed: eight or nine transactions over a few keys, holding or not,
// finish quickly at every level.
func TestSpeed(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	start := time.Now()
	var worst time.Duration
	for i := 0; i < 200; i++ {
		h := generate(rng, 8+rng.Intn(2), 3)
		for _, id := range checked {
			t0 := time.Now()
			if _, err := Check(h, id); err != nil {
				t.Fatal(err)
			}
			worst = max(worst, time.Since(t0))
		}
	}
	t.Logf("1000 checks of 8–9 transactions in %v, slowest %v", time.Since(start), worst)
	if worst > 2*time.Second {
		t.Errorf("slowest check took %v", worst)
	}
}

// TestAdversarialSpeed: many independent blind writers and one impossible
// read make the search exhaust every order.
func TestAdversarialSpeed(t *testing.T) {
	var segs []string
	for i := 0; i < MaxTxns-1; i++ {
		segs = append(segs, fmt.Sprintf("s%d: @%d-%d: w k%d %d", i, 3*i, 3*i+100, i, i))
	}
	// The read of k1 misses the write of its own session's predecessor: only
	// found out when the reader is placed, after every order of the others.
	segs = append(segs, "s1: @50-51: r k0 0 r k1 _")
	h := history.MustParse(strings.Join(segs, " | "))
	for _, id := range checked {
		t0 := time.Now()
		ok, err := Check(h, id)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: %v in %v", id, ok, time.Since(t0))
		if want := id <= level.ReadCommitted; ok != want {
			t.Errorf("%v: got %v, want %v", id, ok, want)
		}
	}
}

// TestImplications: on random histories, each level implies the weaker ones.
func TestImplications(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	counts := make([]int, len(checked))
	for i := 0; i < 3000; i++ {
		h := generate(rng, 1+rng.Intn(7), 1+rng.Intn(3))
		prev := true
		for li := len(checked) - 1; li >= 0; li-- {
			ok, err := Check(h, checked[li])
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				counts[li]++
			}
			if prev && !ok && li < len(checked)-1 {
				// The stronger level held, so this one must.
				t.Fatalf("%v holds but %v does not:\n%s", checked[li+1], checked[li], history.Notation(h))
			}
			prev = ok
		}
	}
	t.Logf("holding RU/RC/SI/SER/SSER: %v of 3000", counts)
}

// TestAgainstNaive compares Check with naive enumerations written
// independently in this file, straight from the definitions, on random
// small histories.
func TestAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	naive := map[level.ID]func(*history.History) bool{
		level.ReadUncommitted:    naiveRU,
		level.ReadCommitted:      naiveRC,
		level.SnapshotIsolation:  naiveSI,
		level.Serializable:       func(h *history.History) bool { return naiveSER(h, false) },
		level.StrictSerializable: func(h *history.History) bool { return naiveSER(h, true) },
	}
	holds := map[level.ID]int{}
	siNotSER := 0
	const n = 4000
	for i := 0; i < n; i++ {
		mode := mixed
		if i%4 == 0 {
			mode = siRun
		}
		h := generateMode(rng, 1+rng.Intn(5), 1+rng.Intn(3), mode)
		for _, id := range checked {
			ok, err := Check(h, id)
			if err != nil {
				t.Fatal(err)
			}
			if want := naive[id](h); ok != want {
				t.Fatalf("%v: Check says %v, naive says %v:\n%s", id, ok, want, history.Notation(h))
			}
			if ok {
				holds[id]++
			}
		}
		si, _ := Check(h, level.SnapshotIsolation)
		ser, _ := Check(h, level.Serializable)
		if si && !ser {
			siNotSER++
		}
	}
	t.Logf("SI holds and SER does not on %d of %d", siNotSER, n)
	if siNotSER == 0 {
		t.Error("no history separates SI from SER")
	}
	for _, id := range checked {
		t.Logf("%v holds on %d of %d", id, holds[id], n)
		if holds[id] == 0 || holds[id] == n {
			t.Errorf("%v: the generator gives no variety (%d of %d hold)", id, holds[id], n)
		}
	}
}

// How generated histories come about.
type genMode int

const (
	// serialRun executes the transactions one after another in file order
	// (real time agreeing): the history is strictly serializable.
	serialRun genMode = iota
	// siRun executes them under snapshot isolation: each reads a random
	// earlier snapshot that holds its session predecessors, and a
	// transaction that would overwrite a write committed after its snapshot
	// aborts (first committer wins). The history satisfies SI.
	siRun
	// mixed is serialRun or siRun with a few reads and sessions perturbed
	// afterwards: any verdict is possible.
	mixed
)

// generate builds a random history of n transactions over nkeys keys, in
// mixed mode.
func generate(rng *rand.Rand, n, nkeys int) *history.History {
	return generateMode(rng, n, nkeys, mixed)
}

// generateMode builds a random history of n transactions over nkeys keys
// with few distinct values (so duplicates are common), by running random
// transactions as mode says. Aborted transactions write and read garbage.
// Unknown-status transactions randomly take effect or not.
func generateMode(rng *rand.Rand, n, nkeys int, mode genMode) *history.History {
	perturb := false
	if mode == mixed {
		perturb = true
		mode = genMode(rng.Intn(2))
	}
	h := history.New()
	keys := make([]history.KeyID, nkeys)
	for k := range keys {
		keys[k] = h.Key(history.StringValue(fmt.Sprintf("k%d", k)))
	}
	nsess := 1 + rng.Intn(3)
	if mode == siRun {
		nsess = 2 * n // 0..n-1 shared, n+i for transaction i alone
	}
	for s := 0; s < nsess; s++ {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	value := func() history.Value {
		if rng.Intn(6) == 0 {
			return history.NullValue
		}
		return history.IntValue(int64(rng.Intn(3)))
	}
	init := map[history.KeyID]history.Value{}
	if rng.Intn(2) == 0 {
		h.Header.Initial.Values = map[history.KeyID]history.Value{}
		for _, k := range keys {
			if rng.Intn(2) == 0 {
				v := history.IntValue(int64(rng.Intn(3)))
				h.Header.Initial.Values[k] = v
				init[k] = v
			}
		}
	}
	get := func(m map[history.KeyID]history.Value, k history.KeyID) history.Value {
		if v, ok := m[k]; ok {
			return v
		}
		return history.NullValue
	}
	// states[i] is the state after the first i transactions that took
	// effect, in commit order (file order); wrote[i] the keys the i+1st
	// wrote.
	states := []map[history.KeyID]history.Value{init}
	var wrote []map[history.KeyID]bool
	// sessionSeen[s] is the number of states at which session s's last
	// effective transaction is visible.
	sessionSeen := make([]int, nsess)
	clock := int64(0)
	for i := 0; i < n; i++ {
		session := rng.Intn(nsess)
		snapAt := len(states) - 1
		if mode == siRun {
			if rng.Intn(3) != 0 {
				snapAt = rng.Intn(len(states))
			}
			// A session whose last transaction is in the snapshot, else a
			// session of its own.
			session = n + i
			if s := rng.Intn(n); sessionSeen[s] <= snapAt {
				session = s
			}
		}
		snap := states[snapAt]
		st := history.Committed
		switch rng.Intn(8) {
		case 0:
			st = history.Aborted
		case 1:
			st = history.Unknown
		}
		own := map[history.KeyID]history.Value{}
		var ops []history.Op
		if mode == siRun && rng.Intn(2) == 0 {
			// Read every key, then write one: write skews and read-only
			// anomalies, which SI allows and serializability does not.
			for _, k := range keys {
				ops = append(ops, history.Op{Kind: history.Read, Key: k, Value: get(snap, k)})
			}
			k := keys[rng.Intn(nkeys)]
			v := history.IntValue(int64(10 + 10*i))
			ops = append(ops, history.Op{Kind: history.Write, Key: k, Value: v})
			own[k] = v
		}
		for j := rng.Intn(4); j > 0 || len(ops) == 0; j-- {
			k := keys[rng.Intn(nkeys)]
			if rng.Intn(2) == 0 {
				v := value()
				if mode == siRun && rng.Intn(3) == 0 {
					v = history.IntValue(int64(10 + 10*i + j)) // unique
				}
				ops = append(ops, history.Op{Kind: history.Write, Key: k, Value: v})
				own[k] = v
				continue
			}
			v, ok := own[k]
			if !ok {
				v = get(snap, k)
			}
			if st == history.Aborted && rng.Intn(2) == 0 {
				v = value()
			}
			ops = append(ops, history.Op{Kind: history.Read, Key: k, Value: v})
		}
		if mode == siRun {
			for _, w := range wrote[snapAt:] {
				for k := range own {
					if w[k] {
						st = history.Aborted // first committer wins
					}
				}
			}
		}
		if st == history.Committed || (st == history.Unknown && rng.Intn(2) == 0) {
			next := map[history.KeyID]history.Value{}
			w := map[history.KeyID]bool{}
			for k, v := range states[len(states)-1] {
				next[k] = v
			}
			for k, v := range own {
				next[k] = v
				w[k] = true
			}
			states = append(states, next)
			wrote = append(wrote, w)
			sessionSeen[session] = len(states) - 1
		}
		// Begin never decreases along the commit order and End >= Begin, so
		// no transaction ends before an earlier one begins.
		clock += int64(rng.Intn(3))
		h.Txns = append(h.Txns, history.Txn{
			ID: history.IntValue(int64(i + 1)), Session: int32(session), Status: st,
			Begin: clock, End: clock + int64(rng.Intn(5)), HasTime: true, Ops: ops,
		})
	}
	// Swap a few neighbours of different sessions in the file: session
	// order stays the same.
	for s := rng.Intn(3); s > 0 && n > 1; s-- {
		i := rng.Intn(n - 1)
		if h.Txns[i].Session != h.Txns[i+1].Session {
			h.Txns[i], h.Txns[i+1] = h.Txns[i+1], h.Txns[i]
		}
	}
	if perturb {
		for i := range h.Txns {
			if rng.Intn(6) == 0 {
				h.Txns[i].Session = int32(rng.Intn(nsess))
			}
			for j := range h.Txns[i].Ops {
				if op := &h.Txns[i].Ops[j]; op.Kind == history.Read && rng.Intn(6) == 0 {
					op.Value = value()
				}
			}
		}
	}
	return h
}

// TestGeneratedRuns: histories produced by serial executions are strictly
// serializable, histories produced by snapshot-isolation executions satisfy
// SI (and so RC and RU).
func TestGeneratedRuns(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	notSER := 0
	for i := 0; i < 2000; i++ {
		n, nkeys := 1+rng.Intn(MaxTxns), 1+rng.Intn(3)
		h := generateMode(rng, n, nkeys, serialRun)
		for _, id := range checked {
			if ok, err := Check(h, id); err != nil || !ok {
				t.Fatalf("serial run at %v: got %v, %v:\n%s", id, ok, err, history.Notation(h))
			}
		}
		h = generateMode(rng, n, nkeys, siRun)
		for _, id := range checked[:3] {
			if ok, err := Check(h, id); err != nil || !ok {
				t.Fatalf("SI run at %v: got %v, %v:\n%s", id, ok, err, history.Notation(h))
			}
		}
		if ok, _ := Check(h, level.Serializable); !ok {
			notSER++
		}
	}
	t.Logf("%d of 2000 SI runs are not serializable", notSER)
	if notSER == 0 {
		t.Error("SI runs never violate serializability: the generator is too tame")
	}
}

// --- naive enumerations, independent of the package's code ---

// effectiveChoices returns every choice of effective transactions: the
// committed ones plus any subset of the unknown ones.
func effectiveChoices(h *history.History) [][]bool {
	var unknown []int
	for i, t := range h.Txns {
		if t.Status == history.Unknown {
			unknown = append(unknown, i)
		}
	}
	var out [][]bool
	for m := 0; m < 1<<len(unknown); m++ {
		eff := make([]bool, len(h.Txns))
		for i, t := range h.Txns {
			eff[i] = t.Status == history.Committed
		}
		for b, i := range unknown {
			if m&(1<<b) != 0 {
				eff[i] = true
			}
		}
		out = append(out, eff)
	}
	return out
}

// permutations calls f with every permutation of xs until f returns true.
func permutations(xs []int, f func([]int) bool) bool {
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == len(xs) {
			return f(xs)
		}
		for i := k; i < len(xs); i++ {
			xs[k], xs[i] = xs[i], xs[k]
			if rec(k + 1) {
				xs[k], xs[i] = xs[i], xs[k]
				return true
			}
			xs[k], xs[i] = xs[i], xs[k]
		}
		return false
	}
	return rec(0)
}

func initialState(h *history.History) map[history.KeyID]history.Value {
	s := map[history.KeyID]history.Value{}
	for k := range h.Keys {
		s[history.KeyID(k)] = h.InitialValue(history.KeyID(k))
	}
	return s
}

// run executes t on a copy of state: every read must return the current
// value (its own writes included). It returns the state after t.
func run(t *history.Txn, state map[history.KeyID]history.Value) (map[history.KeyID]history.Value, bool) {
	local := map[history.KeyID]history.Value{}
	for k, v := range state {
		local[k] = v
	}
	for _, op := range t.Ops {
		if op.Kind == history.Write {
			local[op.Key] = op.Value
		} else if local[op.Key] != op.Value {
			return nil, false
		}
	}
	return local, true
}

func indices(eff []bool) []int {
	var xs []int
	for i, e := range eff {
		if e {
			xs = append(xs, i)
		}
	}
	return xs
}

func naiveSER(h *history.History, realTime bool) bool {
	for _, eff := range effectiveChoices(h) {
		if permutations(indices(eff), func(order []int) bool {
			for a := range order {
				for b := a + 1; b < len(order); b++ {
					ta, tb := &h.Txns[order[a]], &h.Txns[order[b]]
					if ta.Session == tb.Session && order[a] > order[b] {
						return false
					}
					if realTime && tb.Status != history.Unknown && tb.End < ta.Begin {
						return false
					}
				}
			}
			state := initialState(h)
			for _, i := range order {
				var ok bool
				if state, ok = run(&h.Txns[i], state); !ok {
					return false
				}
			}
			return true
		}) {
			return true
		}
	}
	return false
}

func writesKey(t *history.Txn, k history.KeyID) bool {
	for _, op := range t.Ops {
		if op.Kind == history.Write && op.Key == k {
			return true
		}
	}
	return false
}

func naiveSI(h *history.History) bool {
	for _, eff := range effectiveChoices(h) {
		if permutations(indices(eff), func(order []int) bool {
			n := len(order)
			// prefix[s]: the state after the first s transactions.
			prefix := []map[history.KeyID]history.Value{initialState(h)}
			for _, i := range order {
				next, _ := run(&history.Txn{Ops: writesOnly(h.Txns[i].Ops)}, prefix[len(prefix)-1])
				prefix = append(prefix, next)
			}
			snap := make([]int, n) // snapshot point of each position
			var rec func(p int) bool
			rec = func(p int) bool {
				if p == n {
					return true
				}
				for s := 0; s <= p; s++ {
					snap[p] = s
					if siOK(h, order, prefix, snap, p) && rec(p+1) {
						return true
					}
				}
				return false
			}
			return rec(0)
		}) {
			return true
		}
	}
	return false
}

func writesOnly(ops []history.Op) []history.Op {
	var out []history.Op
	for _, op := range ops {
		if op.Kind == history.Write {
			out = append(out, op)
		}
	}
	return out
}

// siOK checks the transaction at position p with snapshot point snap[p].
func siOK(h *history.History, order []int, prefix []map[history.KeyID]history.Value, snap []int, p int) bool {
	t := &h.Txns[order[p]]
	if _, ok := run(t, prefix[snap[p]]); !ok {
		return false
	}
	for q := 0; q < p; q++ {
		u := &h.Txns[order[q]]
		inSnap := q < snap[p]
		if u.Session == t.Session && order[q] < order[p] && !inSnap {
			return false
		}
		for _, op := range t.Ops {
			if op.Kind == history.Write && writesKey(u, op.Key) && !inSnap {
				return false
			}
		}
	}
	// A session successor must not be ordered before t.
	for q := p + 1; q < len(order); q++ {
		u := &h.Txns[order[q]]
		if u.Session == t.Session && order[q] < order[p] {
			return false
		}
	}
	return true
}

// write names one write op: transaction and op index; txn -1 is the
// initial state.
type write struct{ txn, op int }

// externalReads simulates t's own writes: it reports whether every read
// after an own write of the key returns the last one, and returns the other
// reads.
func externalReads(t *history.Txn) ([]history.Op, bool) {
	own := map[history.KeyID]history.Value{}
	var ext []history.Op
	for _, op := range t.Ops {
		if op.Kind == history.Write {
			own[op.Key] = op.Value
			continue
		}
		if v, ok := own[op.Key]; ok {
			if v != op.Value {
				return nil, false
			}
			continue
		}
		ext = append(ext, op)
	}
	return ext, true
}

// candidates lists every write the read r of transaction reader could have
// read: the initial state if it holds the value, and every write op of
// another transaction (any status) of the value to the key.
func candidates(h *history.History, reader int, r history.Op) []write {
	var out []write
	if h.InitialValue(r.Key) == r.Value {
		out = append(out, write{-1, -1})
	}
	for j := range h.Txns {
		if j == reader {
			continue
		}
		for o, op := range h.Txns[j].Ops {
			if op.Kind == history.Write && op.Key == r.Key && op.Value == r.Value {
				out = append(out, write{j, o})
			}
		}
	}
	return out
}

func naiveRU(h *history.History) bool {
	for _, eff := range effectiveChoices(h) {
		ok := true
		for _, i := range indices(eff) {
			ext, intOK := externalReads(&h.Txns[i])
			if !intOK {
				ok = false
			}
			for _, r := range ext {
				if len(candidates(h, i, r)) == 0 {
					ok = false
				}
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func isLastWrite(t *history.Txn, o int) bool {
	for _, op := range t.Ops[o+1:] {
		if op.Kind == history.Write && op.Key == t.Ops[o].Key {
			return false
		}
	}
	return true
}

func acyclic(n int, edges [][2]int) bool {
	adj := make([][]int, n)
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
	}
	color := make([]int, n)
	var visit func(u int) bool
	visit = func(u int) bool {
		color[u] = 1
		for _, v := range adj[u] {
			if color[v] == 1 || (color[v] == 0 && !visit(v)) {
				return false
			}
		}
		color[u] = 2
		return true
	}
	for u := 0; u < n; u++ {
		if color[u] == 0 && !visit(u) {
			return false
		}
	}
	return true
}

func naiveRC(h *history.History) bool {
	for _, eff := range effectiveChoices(h) {
		type read struct {
			reader int
			cands  []write
		}
		var reads []read
		ok := true
		for _, i := range indices(eff) {
			ext, intOK := externalReads(&h.Txns[i])
			if !intOK {
				ok = false
			}
			for _, r := range ext {
				c := candidates(h, i, r)
				if len(c) == 0 {
					ok = false // thin air
				}
				reads = append(reads, read{i, c})
			}
		}
		if !ok {
			continue
		}
		// Every version order: per key, a permutation of its effective
		// writers.
		var vo [][]int
		for k := range h.Keys {
			var ws []int
			for _, i := range indices(eff) {
				if writesKey(&h.Txns[i], history.KeyID(k)) {
					ws = append(ws, i)
				}
			}
			vo = append(vo, ws)
		}
		var edges [][2]int
		var chooseVO func(k int) bool
		chooseVO = func(k int) bool {
			if k == len(vo) {
				return acyclic(len(h.Txns), edges)
			}
			return permutations(vo[k], func(ws []int) bool {
				saved := len(edges)
				for a := 0; a+1 < len(ws); a++ {
					edges = append(edges, [2]int{ws[a], ws[a+1]})
				}
				found := chooseVO(k + 1)
				edges = edges[:saved]
				return found
			})
		}
		var assign func(r int) bool
		assign = func(r int) bool {
			if r == len(reads) {
				return chooseVO(0)
			}
			for _, w := range reads[r].cands {
				if w.txn >= 0 && (!eff[w.txn] || !isLastWrite(&h.Txns[w.txn], w.op)) {
					continue // G1a, G1b
				}
				saved := len(edges)
				if w.txn >= 0 {
					edges = append(edges, [2]int{w.txn, reads[r].reader})
				}
				found := assign(r + 1)
				edges = edges[:saved]
				if found {
					return true
				}
			}
			return false
		}
		if assign(0) {
			return true
		}
	}
	return false
}
