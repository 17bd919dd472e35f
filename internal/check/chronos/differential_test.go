package chronos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/workload"
)

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
		if p, ok := last[t.Session]; ok && !checktest.Visible(h, p, i, ser) {
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
					v = checktest.NaiveSnapshot(h, history.TxnID(i), op.Key, ser)
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
				if _, both := checktest.FinalWrite(&h.Txns[j], op.Key); !both {
					continue
				}
				if ser && h.Txns[i].CommitTS == h.Txns[j].CommitTS {
					return false
				}
				if !ser && !checktest.Visible(h, i, j, false) && !checktest.Visible(h, j, i, false) {
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
	agreesWithAxioms(t, 3000, 29, checktest.Timestamped, naiveValid, func(h *history.History, id level.ID) (bool, string, error) {
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
