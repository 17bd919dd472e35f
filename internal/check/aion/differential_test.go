package aion_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
)

// clock is a test clock: it moves only when told.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// signature renders a finding by input ids, so that findings over
// different histories compare.
func signature(h *history.History, a *anomaly.Anomaly) string {
	names := make([]string, len(a.Txns))
	for i, t := range a.Txns {
		names[i] = h.TxnName(t)
	}
	ops := make([]string, len(a.Ops))
	for i, o := range a.Ops {
		ops[i] = fmt.Sprintf("%s:%d", h.TxnName(o.Txn), o.Op)
	}
	key := ""
	if a.Key >= 0 {
		key = h.KeyName(a.Key)
	}
	return fmt.Sprintf("%s/%s txns=%s key=%s value=%s ops=%s", a.Kind, a.Phenomenon, strings.Join(names, ","), key, a.Value, strings.Join(ops, ","))
}

// chronosFindings checks h with chronos (the shared checks included).
func chronosFindings(t *testing.T, h *history.History, ser bool) []string {
	t.Helper()
	id := level.SnapshotIsolation
	if ser {
		id = level.Serializable
	}
	res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "chronos"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range res.Anomalies {
		out = append(out, signature(h, &res.Anomalies[i]))
	}
	slices.Sort(out)
	return out
}

// arrival is the order and times at which a transaction reaches Aion.
type arrival struct {
	txn int
	at  time.Duration
}

// schedule shuffles h's transactions: transaction i is sent at i ms and
// arrives after a random delay of up to maxDelay, but never before the
// previous transaction of its session (collectors keep session order).
func schedule(h *history.History, r *rand.Rand, maxDelay time.Duration) []arrival {
	return scheduleLate(h, r, maxDelay, 0, 0)
}

// scheduleLate is schedule, with each transaction held back by late
// besides, with probability p (and its session's later ones with it).
func scheduleLate(h *history.History, r *rand.Rand, maxDelay time.Duration, p float64, late time.Duration) []arrival {
	last := map[int32]time.Duration{}
	out := make([]arrival, len(h.Txns))
	for i := range h.Txns {
		at := time.Duration(i)*time.Millisecond + time.Duration(r.Int64N(int64(maxDelay)+1))
		if p > 0 && r.Float64() < p {
			at += late
		}
		if p, ok := last[h.Txns[i].Session]; ok && at < p {
			at = p
		}
		last[h.Txns[i].Session] = at
		out[i] = arrival{i, at}
	}
	slices.SortStableFunc(out, func(a, b arrival) int { return cmp.Compare(a.at, b.at) })
	return out
}

// feed sends h to a checker in batches of batch transactions, in the
// order and at the times of sched, and finishes it.
func feed(t *testing.T, h *history.History, sched []arrival, batch int, cfg aion.Config, clk *clock) (*aion.Checker, []aion.Violation) {
	t.Helper()
	cfg.Clock = clk.Now
	c, err := aion.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := clk.now
	var found []aion.Violation
	for i := 0; i < len(sched); i += batch {
		end := min(i+batch, len(sched))
		txns := make([]history.Txn, 0, end-i)
		for _, a := range sched[i:end] {
			txns = append(txns, h.Txns[a.txn])
		}
		clk.now = start.Add(sched[end-1].at)
		if err := c.Add(h, txns); err != nil {
			t.Fatal(err)
		}
		found = append(found, c.Take()...)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	return c, append(found, c.Take()...)
}

func aionFindings(vs []aion.Violation) []string {
	out := make([]string, len(vs))
	for i := range vs {
		out[i] = signature(vs[i].History, &vs[i].Anomaly)
	}
	slices.Sort(out)
	return out
}

// generated is one timestamped history of internal/gen.
type generated = gen.Timestamped

// generate returns gen.TimestampedSet (valid histories) and, for each,
// copies with early-commit and skew faults.
func generate(t *testing.T, txns int, seed uint64) []generated {
	t.Helper()
	base, err := gen.TimestampedSet(txns, seed)
	if err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(base)
	for _, g := range base {
		for _, f := range []gen.TSFault{gen.EarlyCommit, gen.Skew} {
			c := *g.H
			c.Txns = slices.Clone(g.H.Txns)
			if _, err := gen.InjectTimestampFaults(&c, f, 4, seed); err != nil {
				t.Fatalf("%s: %v", g.Name, err)
			}
			out = append(out, generated{Name: fmt.Sprintf("%s+%s", g.Name, f), H: &c})
		}
	}
	return out
}

// TestDifferentialChronos: on generated timestamped histories, valid and
// with faults, Aion fed in shuffled order with random delays (shorter
// than its timeout), in batches, finds exactly what Chronos finds, at SI
// and SER; where it finds nothing, the graph checkers (mt, or the solver)
// accept the history too.
func TestDifferentialChronos(t *testing.T) {
	violations := 0
	for seed := range uint64(3) {
		for _, g := range generate(t, 400, seed) {
			for _, ser := range []bool{false, true} {
				want := chronosFindings(t, g.H, ser)
				if g.Serial || !ser && !strings.Contains(g.Name, "+") {
					if len(want) != 0 {
						t.Fatalf("%s: chronos finds %v in a valid history", g.Name, want)
					}
				}
				r := rand.New(rand.NewPCG(seed, 7))
				sched := schedule(g.H, r, 200*time.Millisecond)
				clk := &clock{now: time.Unix(1000, 0)}
				c, vs := feed(t, g.H, sched, 1+r.IntN(50), aion.Config{Serializable: ser, Timeout: time.Hour}, clk)
				got := aionFindings(vs)
				if !slices.Equal(got, want) {
					t.Fatalf("%s seed %d ser=%v:\nchronos %d: %s\naion    %d: %s", g.Name, seed, ser, len(want), strings.Join(want, "\n  "), len(got), strings.Join(got, "\n  "))
				}
				violations += len(got)
				if len(got) == 0 && seed == 0 {
					// Accepted by the timestamps: the black-box checkers
					// must accept too (the converse need not hold).
					black := "sat"
					if strings.HasPrefix(g.Name, "mt/") {
						black = "mt"
					}
					id := level.SnapshotIsolation
					if ser {
						id = level.Serializable
					}
					res, err := check.Run(context.Background(), g.H, level.Get(id), check.Options{Checker: black})
					if err != nil {
						t.Fatal(err)
					}
					if res.Outcome != check.Satisfied {
						t.Fatalf("%s ser=%v: aion accepts, %s says %s", g.Name, ser, black, res.Outcome)
					}
				}
				if st := c.Stats(); st.Pending != 0 {
					t.Fatalf("%s: %d verdicts still pending after Finish", g.Name, st.Pending)
				}
			}
		}
	}
	if violations == 0 {
		t.Fatal("no violations: the faults did not reach the checkers")
	}
	t.Logf("%d violations agreed on", violations)
}

// TestDifferentialRandom: on small random histories full of timestamp
// ties, commit_ts below start_ts, stale and future reads, Aion fed in
// random order agrees with Chronos.
func TestDifferentialRandom(t *testing.T) {
	agreed := 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 11))
		h := checktest.CommittedTimestamped(r, 4+r.IntN(12), 1+r.IntN(3), 1+r.IntN(3))
		if seed%2 == 1 {
			h = stringify(h) // string ids and values take the other paths
		}
		for _, ser := range []bool{false, true} {
			want := chronosFindings(t, h, ser)
			clk := &clock{now: time.Unix(0, 0)}
			_, vs := feed(t, h, schedule(h, r, 50*time.Millisecond), 1+r.IntN(4), aion.Config{Serializable: ser, Timeout: time.Hour,
				Initial: initial(h)}, clk)
			got := aionFindings(vs)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d ser=%v:\n%s\nchronos: %s\naion:    %s", seed, ser, history.Notation(h), strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			}
			agreed += len(got)
		}
	}
	t.Logf("%d findings agreed on", agreed)
}

// initial is h's initial state by key.
func initial(h *history.History) map[history.Value]history.Value {
	m := map[history.Value]history.Value{}
	for k, v := range h.Header.Initial.Values {
		m[h.Keys[k]] = v
	}
	return m
}

// stringify returns h with its integer transaction ids and values written
// as strings, zero-padded so that they order as the integers did.
func stringify(h *history.History) *history.History {
	str := func(prefix string, v history.Value) history.Value {
		if v.Kind != history.Int {
			return v
		}
		return history.StringValue(fmt.Sprintf("%s%09d", prefix, v.N+1e8))
	}
	out := *h
	out.Txns = make([]history.Txn, len(h.Txns))
	for i, t := range h.Txns {
		t.ID = str("t", t.ID)
		t.Ops = slices.Clone(t.Ops)
		for j := range t.Ops {
			t.Ops[j].Value = str("v", t.Ops[j].Value)
		}
		out.Txns[i] = t
	}
	out.Header.Initial.Values = map[history.KeyID]history.Value{}
	for k, v := range h.Header.Initial.Values {
		out.Header.Initial.Values[k] = str("v", v)
	}
	return &out
}

// TestDifferentialLists: on random list-append histories fed in shuffled
// order, Aion's findings equal Chronos's, at SI and SER.
func TestDifferentialLists(t *testing.T) {
	agreed := 0
	for seed := range uint64(1500) {
		r := rand.New(rand.NewPCG(seed, 13))
		for _, ser := range []bool{false, true} {
			h := checktest.TimestampedListsAborts(r, 4+r.IntN(14), 1+r.IntN(3), 1+r.IntN(3), ser)
			agreed += listsAgree(t, seed, h, r, ser, 1+r.IntN(4))
		}
	}
	if agreed == 0 {
		t.Fatal("no findings: the faults did not reach the checkers")
	}
	t.Logf("%d findings agreed on", agreed)
}

// listsAgree feeds list history h to Aion in shuffled batches of batch
// transactions and fails t unless its findings are Chronos's; it returns
// how many.
func listsAgree(t *testing.T, seed uint64, h *history.History, r *rand.Rand, ser bool, batch int) int {
	t.Helper()
	want := chronosFindings(t, h, ser)
	clk := &clock{now: time.Unix(0, 0)}
	_, vs := feed(t, h, schedule(h, r, 50*time.Millisecond), batch, aion.Config{Serializable: ser, Timeout: time.Hour}, clk)
	got := aionFindings(vs)
	if ser {
		want, got = sameCommitGroups(want), sameCommitGroups(got)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("seed %d ser=%v:\n%s\nchronos: %s\naion:    %s", seed, ser, history.Notation(h), strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
	return len(got)
}

// sameCommitGroups replaces, in SER findings, the concurrent writes of a
// key with one commit_ts (signatures "concurrent-write/ txns=a,b key=k
// …") by the groups of transactions they connect, per key: with three or
// more such writers, Chronos names the pairs adjacent in its replay order
// and Aion those adjacent when each arrived, which differ with the
// arrival order, while the writers named are the same.
func sameCommitGroups(fs []string) []string {
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		parent[x] = x
		return x
	}
	var out []string
	for _, f := range fs {
		var a, b, key string
		if n, _ := fmt.Sscanf(f, "concurrent-write/ txns=%s key=%s value=null", &a, &key); n != 2 {
			out = append(out, f)
			continue
		}
		a, b, _ = strings.Cut(a, ",")
		parent[find(key+"|"+a)] = find(key + "|" + b)
	}
	groups := map[string][]string{}
	for x := range parent {
		groups[find(x)] = append(groups[find(x)], x)
	}
	for _, g := range groups {
		slices.Sort(g)
		out = append(out, "same-commit "+strings.Join(g, " "))
	}
	slices.Sort(out)
	return out
}

// TestListFindingsRender: every list finding renders (report.NewFinding
// and report.Explain), also those naming an aborted appender whose
// operations the checker does not keep.
func TestListFindingsRender(t *testing.T) {
	n := 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 17))
		h := checktest.TimestampedListsAborts(r, 4+r.IntN(14), 1+r.IntN(3), 1+r.IntN(3), false)
		_, vs := feed(t, h, schedule(h, r, 50*time.Millisecond), 3, aion.Config{Timeout: time.Hour}, &clock{now: time.Unix(0, 0)})
		for _, v := range vs {
			if report.Explain(v.History, &v.Anomaly) == "" {
				t.Fatalf("%s: no explanation", v.Anomaly.Kind)
			}
			report.NewFinding(v.History, &v.Anomaly)
			n++
		}
	}
	t.Logf("%d findings rendered", n)
}

// TestDifferentialSharedLists: on list-append histories long enough for
// lists of dozens of elements, whose reads share their storage as the
// native reader makes them (history.Lists), fed in shuffled batches, Aion's
// findings equal Chronos's: the duplicate search that looks into a shared
// array only past what earlier reads of the batch saw changes nothing.
func TestDifferentialSharedLists(t *testing.T) {
	long, agreed := 0, 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 29))
		ser := seed%2 == 1
		h := checktest.TimestampedListsAborts(r, 40+r.IntN(40), 1+r.IntN(2), 1+r.IntN(3), ser)
		var lists history.Lists
		for i := range h.Txns {
			tx := &h.Txns[i]
			for j := range tx.Ops {
				if op := &tx.Ops[j]; op.Kind == history.ReadList {
					own := 0
					if tx.Status != history.Committed {
						own = history.OwnTail(tx.Ops[:j], op.Key, op.List)
					}
					if op.List = lists.Share(h.Keys[op.Key], op.List, own); len(op.List) > 16 {
						long++
					}
				}
			}
		}
		agreed += listsAgree(t, seed, h, r, ser, 4+r.IntN(20))
	}
	if long < 300 || agreed == 0 {
		t.Fatalf("%d reads of more than 16 elements, %d findings: the test does not reach the shared arrays", long, agreed)
	}
	t.Logf("%d findings agreed on, %d reads of more than 16 elements", agreed, long)
}
