package chronos_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/workload"
)

// randomTS builds a small random key-value history with random timestamps
// (small, so that ties occur): reads, writes of fresh values and deletes
// over a few keys, some transactions aborted, some with commit_ts below
// start_ts. Each read returns, with probability honest, what the
// timestamps say it must (naiveRead under ser or SI), and otherwise the
// initial value or any written one.
func randomTS(r *rand.Rand, txns, keys, sessions int, honest float64, ser bool) *history.History {
	h := history.New()
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	h.Header.Initial.Values = map[history.KeyID]history.Value{}
	for k := range keys {
		key[k] = h.Key(history.IntValue(int64(k)))
		h.Header.Initial.Values[key[k]] = history.IntValue(0)
	}
	next := int64(1)
	var written [][]history.Value = make([][]history.Value, keys)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasStartTS: true, HasCommitTS: true}
		t.StartTS = uint64(r.IntN(3 * txns))
		t.CommitTS = t.StartTS + uint64(r.IntN(6))
		if r.IntN(12) == 0 {
			t.CommitTS = uint64(r.IntN(int(t.StartTS) + 1)) // maybe below the start
		}
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			switch x := r.IntN(10); {
			case x < 5:
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k]})
			case x < 9:
				v := history.IntValue(next)
				next++
				written[k] = append(written[k], v)
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: v})
			default:
				t.Ops = append(t.Ops, history.Op{Kind: history.Delete, Key: key[k]})
			}
		}
		h.Txns = append(h.Txns, t)
	}
	// Fill in the reads, transaction by transaction in file order: a
	// read's honest value depends only on writes, which are fixed.
	for i := range h.Txns {
		own := map[history.KeyID]history.Value{}
		for j := range h.Txns[i].Ops {
			op := &h.Txns[i].Ops[j]
			switch op.Kind {
			case history.Write:
				own[op.Key] = op.Value
			case history.Delete:
				own[op.Key] = history.NullValue
			case history.Read:
				v, mine := own[op.Key]
				if !mine {
					v = naiveSnapshot(h, history.TxnID(i), op.Key, ser)
				}
				if r.Float64() >= honest {
					k := int(op.Key)
					if n := len(written[k]); n > 0 && r.IntN(4) > 0 {
						v = written[k][r.IntN(n)]
					} else {
						v = history.IntValue(0)
					}
				}
				op.Value = v
				own[op.Key] = v
			}
		}
	}
	return h
}

// Replay positions: a transaction's start and commit as comparable keys
// (timestamp, class, file position), the rule of the package doc: at one
// timestamp commits of transactions that started earlier, then
// transactions that start and commit there, then starts.
type pos struct {
	ts    uint64
	class int
	idx   int
	sub   int
}

func less(a, b pos) bool {
	return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.class, b.class), cmp.Compare(a.idx, b.idx), cmp.Compare(a.sub, b.sub)) < 0
}

// startOf and commitOf place transaction i under SI (a commit below the
// start counts as the start).
func startOf(h *history.History, i int) pos {
	t := &h.Txns[i]
	s := min(t.StartTS, t.CommitTS)
	if s == t.CommitTS {
		return pos{s, 1, i, 0}
	}
	return pos{s, 2, i, 0}
}

func commitOf(h *history.History, i int, ser bool) pos {
	t := &h.Txns[i]
	if ser {
		return pos{t.CommitTS, 0, i, 0}
	}
	if min(t.StartTS, t.CommitTS) == t.CommitTS {
		return pos{t.CommitTS, 1, i, 1}
	}
	return pos{t.CommitTS, 0, i, 0}
}

// visible says whether w's writes are in t's snapshot (SI) or before t in
// commit order (SER).
func visible(h *history.History, w, t int, ser bool) bool {
	if w == t {
		return false
	}
	if ser {
		return less(commitOf(h, w, true), commitOf(h, t, true))
	}
	return less(commitOf(h, w, false), startOf(h, t))
}

func finalWrite(t *history.Txn, k history.KeyID) (history.Value, bool) {
	for j := len(t.Ops) - 1; j >= 0; j-- {
		if op := t.Ops[j]; op.Key == k && (op.Kind == history.Write || op.Kind == history.Delete) {
			return op.Value, true // a delete's Value is null
		}
	}
	return history.Value{}, false
}

// naiveSnapshot returns k's value that transaction t must read first: the
// final write of the latest committed writer visible to it, or the
// initial value.
func naiveSnapshot(h *history.History, t history.TxnID, k history.KeyID, ser bool) history.Value {
	best, v := -1, h.InitialValue(k)
	for w := range h.Txns {
		if h.Txns[w].Status != history.Committed || !visible(h, w, int(t), ser) {
			continue
		}
		fv, ok := finalWrite(&h.Txns[w], k)
		if ok && (best < 0 || less(commitOf(h, best, ser), commitOf(h, w, ser))) {
			best, v = w, fv
		}
	}
	return v
}

// sessionAxioms returns the committed transactions, in file order, and
// whether they keep the axioms that do not look at operations: no commit
// below a start (SI), every session predecessor visible.
func sessionAxioms(h *history.History, ser bool) ([]int, bool) {
	var live []int
	for i := range h.Txns {
		if h.Txns[i].Status == history.Committed {
			live = append(live, i)
		}
	}
	last := map[int32]int{}
	for _, i := range live {
		t := &h.Txns[i]
		if !ser && t.CommitTS < t.StartTS {
			return nil, false
		}
		if p, ok := last[t.Session]; ok && !visible(h, p, i, ser) {
			return nil, false
		}
		last[t.Session] = i
	}
	return live, true
}

// naiveValid decides the history by the axioms, pairwise, in O(n²·m): no
// commit below a start (SI), session predecessors visible, every read the
// transaction's own state or its snapshot, no two overlapping (SI) or
// equally timestamped (SER) writers of a key.
func naiveValid(h *history.History, ser bool) bool {
	live, ok := sessionAxioms(h, ser)
	if !ok {
		return false
	}
	for _, i := range live {
		t := &h.Txns[i]
		own := map[history.KeyID]history.Value{}
		for _, op := range t.Ops {
			switch op.Kind {
			case history.Write, history.Delete:
				own[op.Key] = op.Value
			case history.Read:
				v, mine := own[op.Key]
				if !mine {
					v = naiveSnapshot(h, history.TxnID(i), op.Key, ser)
				}
				if v.IsNull() != op.Value.IsNull() || !v.IsNull() && v != op.Value {
					return false
				}
				own[op.Key] = op.Value
			}
		}
	}
	for a, i := range live {
		for _, j := range live[a+1:] {
			for _, op := range h.Txns[i].Ops {
				if op.Kind != history.Write && op.Kind != history.Delete {
					continue
				}
				if _, both := finalWrite(&h.Txns[j], op.Key); !both {
					continue
				}
				if ser && h.Txns[i].CommitTS == h.Txns[j].CommitTS {
					return false
				}
				if !ser && !visible(h, i, j, false) && !visible(h, j, i, false) {
					return false
				}
			}
		}
	}
	return true
}

// TestDifferentialNaive: on thousands of random small timestamped
// histories, the verdict of the shared checks and chronos agrees with the
// pairwise definition of the axioms, and where chronos accepts, the
// brute-force black-box oracle accepts too.
func TestDifferentialNaive(t *testing.T) {
	agreesWithAxioms(t, 3000, 29, randomTS, naiveValid, func(h *history.History, id level.ID) (bool, string, error) {
		ok, err := reference.Check(h, id)
		return ok, "the black-box oracle", err
	})
}

// agreesWithAxioms runs n random histories (stream picks the random
// stream; random makes one, honest in 85% of its timestamps) at SI and SER
// through chronos, and fails unless its verdict is axioms' and, where it
// accepts, blackBox accepts too (blackBox may decline with an error).
func agreesWithAxioms(t *testing.T, n int, stream uint64,
	random func(r *rand.Rand, txns, keys, sessions int, honest float64, ser bool) *history.History,
	axioms func(h *history.History, ser bool) bool,
	blackBox func(h *history.History, id level.ID) (ok bool, name string, err error)) {
	t.Helper()
	if testing.Short() {
		n /= 10
	}
	var violations, accepted int
	for seed := range uint64(n) {
		for _, id := range []level.ID{level.SnapshotIsolation, level.Serializable} {
			ser := id == level.Serializable
			r := rand.New(rand.NewPCG(seed, stream))
			h := random(r, 2+r.IntN(6), 1+r.IntN(3), 1+r.IntN(3), 0.85, ser)
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "chronos"})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			got, want := res.Outcome == check.Satisfied, axioms(h, ser)
			if got != want {
				t.Fatalf("seed %d %s: chronos satisfied=%v, the axioms say %v; found %s\n%s",
					seed, level.Get(id).Short, got, want, kinds(res.Anomalies), history.Notation(h))
			}
			if !got {
				violations++
				continue
			}
			accepted++
			if ok, name, err := blackBox(h, id); err == nil && !ok {
				t.Fatalf("seed %d %s: chronos accepts, %s does not\n%s", seed, level.Get(id).Short, name, history.Notation(h))
			}
		}
	}
	t.Logf("%d violations, %d accepted", violations, accepted)
	if violations < n/5 || accepted < n/5 {
		t.Errorf("unbalanced generator: %d violations, %d accepted", violations, accepted)
	}
}

// generated is one timestamped history of internal/gen.
type generated = gen.Timestamped

// generate is gen.TimestampedSet and a history of Cobra-style general
// transactions from the serial simulator.
func generate(t *testing.T, txns int, seed uint64) []generated {
	t.Helper()
	out, err := gen.TimestampedSet(txns, seed)
	if err != nil {
		t.Fatal(err)
	}
	h, err := gen.GenerateGeneral(gen.GeneralConfig{Txns: txns, Sessions: 6, Keys: 30, Dist: workload.Zipfian, Ops: 6,
		ReadRatio: 0.5, DuplicateKeys: 0.3, Seed: seed, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	return append(out, generated{Name: "general/serial", H: h, Serial: true})
}

// TestGeneratedValid: histories generated with timestamps are valid by
// their timestamps (SI always; SER when the database was serial), and the
// black-box checkers (mt where it decides, else sat) accept them too.
func TestGeneratedValid(t *testing.T) {
	for seed := range uint64(3) {
		for _, g := range generate(t, 300, seed) {
			for _, id := range []level.ID{level.SnapshotIsolation, level.Serializable} {
				if id == level.Serializable && !g.Serial {
					continue
				}
				l := level.Get(id)
				res, err := check.Run(context.Background(), g.H, l, check.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Checker != "chronos" || res.Outcome != check.Satisfied {
					t.Fatalf("%s seed %d %s: %s says %s: %s", g.Name, seed, l.Short, res.Checker, res.Outcome, kinds(res.Anomalies))
				}
				black := "sat"
				if strings.HasPrefix(g.Name, "mt/") {
					black = "mt"
				}
				res, err = check.Run(context.Background(), g.H, l, check.Options{Checker: black})
				if err != nil {
					t.Fatal(err)
				}
				if res.Outcome != check.Satisfied {
					t.Fatalf("%s seed %d %s: chronos accepts, %s says %s: %s", g.Name, seed, l.Short, black, res.Outcome, kinds(res.Anomalies))
				}
			}
		}
	}
}

// TestPlantedFaultsFound: every planted timestamp fault is found, as the
// kind it promises, on the reader and naming the writer, with the moved
// timestamps in the explanation.
func TestPlantedFaultsFound(t *testing.T) {
	for seed := range uint64(3) {
		for _, g := range generate(t, 400, seed) {
			for _, f := range []gen.TSFault{gen.EarlyCommit, gen.Skew} {
				h := cloneHistory(g.H)
				planted, err := gen.InjectTimestampFaults(h, f, 3, seed)
				if err != nil {
					t.Fatalf("%s seed %d %s: %v", g.Name, seed, f, err)
				}
				for _, id := range []level.ID{level.SnapshotIsolation, level.Serializable} {
					if id == level.Serializable && !g.Serial {
						continue
					}
					res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: "chronos"})
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range planted {
						w, rd := p.Txns[0], p.Txns[1]
						if !foundFault(h, res.Anomalies, p.Kind, w, rd) {
							t.Errorf("%s seed %d %s %s: planted %s (writer %s, reader %s) not found among %s",
								g.Name, seed, f, level.Get(id).Short, p.Kind, h.TxnName(w), h.TxnName(rd), kinds(res.Anomalies))
						}
					}
				}
			}
		}
	}
}

func foundFault(h *history.History, as []anomaly.Anomaly, kind anomaly.Kind, w, rd history.TxnID) bool {
	for i := range as {
		a := &as[i]
		if a.Kind != kind || a.Txns[0] != rd || !slices.Contains(a.Txns[1:], w) {
			continue
		}
		e := report.Explain(h, a)
		if strings.Contains(e, fmt.Sprintf("commit_ts %d", h.Txns[w].CommitTS)) {
			return true
		}
	}
	return false
}

func cloneHistory(h *history.History) *history.History {
	c := *h
	c.Txns = slices.Clone(h.Txns)
	return &c
}
