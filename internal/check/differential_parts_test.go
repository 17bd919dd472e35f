package check_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// glueParts makes one history of independent parts (history.Parts) from
// histories, part i's key k becoming "[i k]" and its transactions
// interleaved with the others' at random; the parts share their sessions
// (session s of every part is session s), as Jepsen's processes move from
// key to key.
func glueParts(r *rand.Rand, parts []*history.History) *history.History {
	h := history.New()
	sessions := 0
	for _, p := range parts {
		sessions = max(sessions, len(p.Sessions))
	}
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	next := make([]int, len(parts))
	h.Parts = make([]history.Part, len(parts))
	for i := range parts {
		h.Parts[i].Key = history.IntValue(int64(i))
	}
	for left := true; left; {
		left = false
		i := r.IntN(len(parts))
		for j := range parts {
			if k := (i + j) % len(parts); next[k] < len(parts[k].Txns) {
				i, left = k, true
				break
			}
		}
		if !left {
			break
		}
		p := parts[i]
		t := p.Txns[next[i]]
		next[i]++
		t.ID = history.IntValue(int64(len(h.Txns) + 1))
		ops := make([]history.Op, len(t.Ops))
		for j, op := range t.Ops {
			op.Key = h.Key(history.StringValue(fmt.Sprintf("[%d %s]", i, p.KeyName(op.Key))))
			ops[j] = op
		}
		t.Ops = ops
		h.Parts[i].Txns = append(h.Parts[i].Txns, history.TxnID(len(h.Txns)))
		h.Txns = append(h.Txns, t)
	}
	for i, p := range parts {
		for k, v := range p.Header.Initial.Values {
			if h.Header.Initial.Values == nil {
				h.Header.Initial.Values = map[history.KeyID]history.Value{}
			}
			h.Header.Initial.Values[h.Key(history.StringValue(fmt.Sprintf("[%d %s]", i, p.KeyName(k))))] = v
		}
	}
	return h
}

// TestDifferentialParts: on random histories of independent parts (small
// read-modify-write histories and compare-and-set registers, interleaved,
// sharing sessions), the verdict on each part at every level is the
// brute-force oracle's on that part alone, the verdict together is
// violated exactly when a part is, and every anomaly lies within one
// part.
func TestDifferentialParts(t *testing.T) {
	n := differentialRuns / 4
	if testing.Short() {
		n = 100
	}
	violated, total := 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 41))
		parts := make([]*history.History, 2+r.IntN(3))
		for i := range parts {
			if r.IntN(2) == 0 {
				parts[i] = checktest.MT(r, 1+r.IntN(5), 1+r.IntN(2), 1+r.IntN(3))
			} else {
				parts[i] = checktest.LWT(r, 1+r.IntN(5))
			}
		}
		h := glueParts(r, parts)
		for _, id := range differentialLevels {
			res, err := check.Run(context.Background(), h, level.Get(id), check.Options{})
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, id, err)
			}
			if len(res.Parts) != len(parts) {
				t.Fatalf("seed %d %s: %d verdicts for %d parts", seed, id, len(res.Parts), len(parts))
			}
			anyViolated := false
			for i, p := range parts {
				want, err := reference.Check(p, id)
				if err != nil {
					t.Fatalf("seed %d: oracle: %v", seed, err)
				}
				if got := res.Parts[i].Outcome == check.Satisfied; got != want {
					t.Fatalf("seed %d %s part %d: satisfied=%v, oracle says %v\n%s", seed, id, i, got, want, history.Notation(p))
				}
				anyViolated = anyViolated || !want
			}
			if (res.Outcome == check.Violated) != anyViolated || res.Outcome == check.Undecided {
				t.Fatalf("seed %d %s: together %s, a part violated: %v", seed, id, res.Outcome, anyViolated)
			}
			part := map[history.TxnID]int{}
			for i, p := range h.Parts {
				for _, tx := range p.Txns {
					part[tx] = i
				}
			}
			for _, a := range res.Anomalies {
				in := -1 // the part of the anomaly's first transaction (init aside)
				for _, tx := range a.Txns {
					if tx < 0 {
						continue
					}
					if in < 0 {
						in = part[tx]
					}
					if part[tx] != in {
						t.Fatalf("seed %d %s: anomaly %s spans parts: %v", seed, id, a.Kind, a.Txns)
					}
				}
			}
			total++
			if anyViolated {
				violated++
			}
		}
	}
	if violated < total/10 || violated > total*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violated, total)
	}
}
