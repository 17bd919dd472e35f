package check_test

import (
	"context"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// randomMT builds a small random read-modify-write history with unique
// values: each transaction touches one or two keys, reads each (from the
// initial state or any write of the key, occasionally from nowhere) and
// may overwrite it; some transactions abort or end unknown; instants are
// random and may overlap.
func randomMT(r *rand.Rand, txns, keys, sessions int) *history.History {
	h := history.New()
	h.Header.UniqueValues = true
	for s := range sessions {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	for k := range keys {
		key[k] = h.Key(history.IntValue(int64(k)))
	}
	type plan struct {
		keys  []int
		write []bool
		twice bool
	}
	plans := make([]plan, txns)
	written := make([][]int64, keys) // values written per key
	next := int64(1)
	for i := range plans {
		p := &plans[i]
		p.keys = []int{r.IntN(keys)}
		if r.IntN(2) == 0 && keys > 1 {
			if k := r.IntN(keys); k != p.keys[0] {
				p.keys = append(p.keys, k)
			}
		}
		for _, k := range p.keys {
			w := r.IntN(3) > 0
			p.write = append(p.write, w)
			if w {
				written[k] = append(written[k], next)
				next++
			}
		}
		p.twice = len(p.keys) == 1 && !p.write[0] && r.IntN(6) == 0
	}
	pick := func(k int) history.Value {
		n := len(written[k])
		switch x := r.IntN(n + 8); {
		case x == 0:
			return history.IntValue(999) // thin air, rarely
		case x <= 3 || n == 0:
			return history.NullValue
		default:
			return history.IntValue(written[k][r.IntN(n)])
		}
	}
	cursor := make([]int, keys)
	for i, p := range plans {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(sessions)), HasTime: true}
		t.Begin = int64(r.IntN(20))
		t.End = t.Begin + int64(r.IntN(10))
		switch r.IntN(12) {
		case 0:
			t.Status = history.Aborted
		case 1:
			t.Status = history.Unknown
		}
		for j, k := range p.keys {
			t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k], Value: pick(k)})
			if p.twice {
				t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: key[k], Value: pick(k)})
			}
			if p.write[j] {
				v := written[k][cursor[k]]
				cursor[k]++
				t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: key[k], Value: history.IntValue(v)})
			}
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

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
		h := randomMT(r, 2+r.IntN(6), 1+r.IntN(3), 1+r.IntN(3))
		violations += agree(t, h, seed, "auto")
		agree(t, h, seed, "mt")
		total += len(differentialLevels)
	}
	// Guard against a generator that only makes trivial cases.
	if violations < total/10 || violations > total*9/10 {
		t.Errorf("unbalanced generator: %d violations of %d verdicts", violations, total)
	}
}

// randomLWT builds single-key compare-and-set histories: links that read a
// value and write a fresh one, and reads alone.
func randomLWT(r *rand.Rand, txns int) *history.History {
	h := history.New()
	h.Sessions = []history.Value{history.IntValue(0)}
	x := h.Key(history.StringValue("x"))
	var values []int64
	next := int64(1)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(len(h.Sessions)), HasTime: true}
		h.Sessions = append(h.Sessions, history.IntValue(int64(i+1)))
		t.Begin = int64(r.IntN(30))
		t.End = t.Begin + int64(r.IntN(8))
		read := history.NullValue
		if len(values) > 0 && r.IntN(4) > 0 {
			read = history.IntValue(values[r.IntN(len(values))])
		}
		t.Ops = append(t.Ops, history.Op{Kind: history.Read, Key: x, Value: read})
		if r.IntN(3) > 0 {
			values = append(values, next)
			t.Ops = append(t.Ops, history.Op{Kind: history.Write, Key: x, Value: history.IntValue(next)})
			next++
		}
		if r.IntN(15) == 0 {
			t.Status = history.Unknown
		}
		h.Txns = append(h.Txns, t)
	}
	return h
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
		h := randomLWT(r, 2+r.IntN(6))
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

// randomRW builds small read/write histories with blind writes and values
// drawn from a tiny domain, so that values repeat.
func randomRW(r *rand.Rand, txns, keys int) *history.History {
	h := history.New()
	for s := range 3 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(3))}
		if r.IntN(10) == 0 {
			t.Status = history.Aborted
		}
		for range 1 + r.IntN(3) {
			k := h.Key(history.IntValue(int64(r.IntN(keys))))
			v := history.IntValue(int64(r.IntN(3)))
			if r.IntN(4) == 0 {
				v = history.NullValue
			}
			kind := history.Read
			if r.IntN(2) == 0 && !v.IsNull() {
				kind = history.Write
			}
			t.Ops = append(t.Ops, history.Op{Kind: kind, Key: k, Value: v})
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// TestDifferentialWeakSAT: with repeated values (ambiguous writers), the
// solver checker agrees with the oracle at read uncommitted, read
// committed and repeatable read.
func TestDifferentialWeakSAT(t *testing.T) {
	held, total := 0, 0
	for seed := range uint64(differentialRuns) {
		r := rand.New(rand.NewPCG(seed, 41))
		h := randomRW(r, 2+r.IntN(6), 1+r.IntN(2))
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
			h = randomRW(r, 2+r.IntN(6), 1+r.IntN(3))
			for i := range h.Txns {
				h.Txns[i].Begin = int64(r.IntN(20))
				h.Txns[i].End = h.Txns[i].Begin + int64(r.IntN(10))
				h.Txns[i].HasTime = true
				if r.IntN(12) == 0 {
					h.Txns[i].Status = history.Unknown
				}
			}
		} else {
			h = randomMT(r, 2+r.IntN(6), 1+r.IntN(3), 1+r.IntN(3))
		}
		for _, id := range levels {
			satAgrees(t, h, seed, id)
		}
	}
}
