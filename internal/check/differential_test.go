package check_test

import (
	"context"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// differentialRuns is how many random histories each differential test
// checks; raise it with -args -differential.runs=N for a deeper search.
var differentialRuns = 4000

var differentialLevels = []level.ID{
	level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation, level.Serializable, level.StrictSerializable,
	level.GSI, level.PlainSerializable,
}

func agree(t *testing.T, h *history.History, seed uint64, checker string) (violations int) {
	t.Helper()
	for _, id := range differentialLevels {
		want, err := reference.Check(h, id)
		if err != nil {
			t.Fatalf("seed %d: oracle: %v", seed, err)
		}
		res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: checker})
		if err != nil {
			if checker != "auto" {
				continue // the named checker does not decide this level
			}
			t.Fatalf("seed %d %s: %v\n%s", seed, id, err, history.Notation(h))
		}
		got := res.Outcome == check.Satisfied
		if got != want {
			t.Fatalf("seed %d %s (checker %s): got satisfied=%v, oracle says %v; anomalies %s\n%s",
				seed, id, res.Checker, got, want, kinds(res), history.Notation(h))
		}
		if !got {
			violations++
		}
	}
	return violations
}

// TestDifferentialMT: on thousands of random small read-modify-write
// histories, every level's verdict agrees with the brute-force oracle.
func TestDifferentialMT(t *testing.T) {
	n := differentialRuns
	if testing.Short() {
		n = 300
	}
	violations, total := 0, 0
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 17))
		h := checktest.MT(r, 2+r.IntN(6), 1+r.IntN(3), 1+r.IntN(3))
		violations += agree(t, h, seed, "auto")
		agree(t, h, seed, "mt")
		total += len(differentialLevels)
	}
	// Guard against a generator that only makes trivial cases.
	if violations < total/10 || violations > total*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violations, total)
	}
}

// TestDifferentialLWT compares Algorithm 2 (lwt), the general mt checker
// and the register checker (linear, which hands such keys to Algorithm 2)
// with the oracle on linearizability of single-key histories.
func TestDifferentialLWT(t *testing.T) {
	n := differentialRuns
	if testing.Short() {
		n = 300
	}
	decided := 0
	sser := level.Get(level.StrictSerializable)
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 29))
		h := checktest.LWT(r, 2+r.IntN(6))
		want, err := reference.Check(h, level.StrictSerializable)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"lwt", "mt", "linear"} {
			res, err := check.Run(context.Background(), h, sser, check.Options{Checker: name})
			if err != nil {
				continue
			}
			if name == "lwt" {
				decided++
			}
			if got := res.Outcome == check.Satisfied; got != want {
				t.Fatalf("seed %d (%s): got %v, oracle %v; %s\n%s", seed, name, got, want, kinds(res), history.Notation(h))
			}
		}
	}
	if decided < n/2 {
		t.Errorf("lwt decided only %d of %d histories", decided, n)
	}
}

func init() {
	flag.IntVar(&differentialRuns, "differential.runs", differentialRuns, "random histories per differential test")
}

// TestDifferentialWeakSAT: with repeated values (ambiguous writers), the
// solver checker agrees with the oracle at read uncommitted, read
// committed and repeatable read.
func TestDifferentialWeakSAT(t *testing.T) {
	held, total := 0, 0
	for seed := range uint64(differentialRuns) {
		r := rand.New(rand.NewPCG(seed, 41))
		h := checktest.RepeatedRW(r, 2+r.IntN(6), 1+r.IntN(2))
		if seed%4 == 0 {
			h.Txns[r.IntN(len(h.Txns))].Status = history.Unknown
		}
		for _, id := range []level.ID{level.ReadUncommitted, level.ReadCommitted, level.RepeatableRead} {
			total++
			if satAgrees(t, h, seed, id) {
				held++
			}
		}
	}
	t.Logf("%d of %d verdicts hold", held, total)
}

// TestDifferentialSAT: the solver checker agrees with the oracle on small
// general histories (blind writes, repeated values, aborted and unknown
// transactions, random instants) at SER, SI and SSER, and with the
// mini-transaction checker on read-modify-write ones.
func TestDifferentialSAT(t *testing.T) {
	levels := []level.ID{level.SnapshotIsolation, level.Serializable, level.StrictSerializable}
	for seed := range uint64(differentialRuns) {
		r := rand.New(rand.NewPCG(seed, 43))
		var h *history.History
		if seed%2 == 0 {
			h = checktest.RepeatedRW(r, 2+r.IntN(6), 1+r.IntN(3))
			for i := range h.Txns {
				h.Txns[i].Begin = int64(r.IntN(20))
				h.Txns[i].End = h.Txns[i].Begin + int64(r.IntN(10))
				h.Txns[i].HasTime = true
				if r.IntN(12) == 0 {
					h.Txns[i].Status = history.Unknown
				}
			}
		} else {
			h = checktest.MT(r, 2+r.IntN(6), 1+r.IntN(3), 1+r.IntN(3))
		}
		for _, id := range levels {
			satAgrees(t, h, seed, id)
		}
	}
}
