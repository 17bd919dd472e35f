package native

import (
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// appendHistory is a history of txns transactions of 1 to 4 appends and
// list reads over keys keys, each key's elements 1, 2, 3, … (scaled by
// scale): unique unless dups elements are appended again at random, and
// integers unless strings of them are strings.
func appendHistory(r *rand.Rand, txns, keys int, scale int64, dups, strings int) *history.History {
	h := history.New()
	h.Header.UniqueValues = true
	h.Sessions = []history.Value{history.IntValue(0)}
	for k := range keys {
		h.Key(history.IntValue(int64(k)))
	}
	next := make([]int64, keys)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Line: i + 2}
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			if r.IntN(2) == 0 {
				t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: history.KeyID(k)})
				continue
			}
			next[k]++
			t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: history.KeyID(k), Value: history.IntValue(next[k] * scale)})
		}
		h.Txns = append(h.Txns, t)
	}
	var appends []*history.Op
	for i := range h.Txns {
		for j := range h.Txns[i].Ops {
			if h.Txns[i].Ops[j].Kind == history.Append {
				appends = append(appends, &h.Txns[i].Ops[j])
			}
		}
	}
	for range dups {
		if len(appends) >= 2 {
			a, b := appends[r.IntN(len(appends))], appends[r.IntN(len(appends))]
			if a != b {
				*b = *a
			}
		}
	}
	for range strings {
		if len(appends) > 0 {
			a := appends[r.IntN(len(appends))]
			a.Value = history.StringValue(a.Value.String())
		}
	}
	return h
}

// appendsUniqueNaive is the definition: no element is appended to a key
// twice.
func appendsUniqueNaive(h *history.History) bool {
	type elem struct {
		k history.KeyID
		v history.Value
	}
	seen := map[elem]bool{}
	for i := range h.Txns {
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Append {
				if seen[elem{op.Key, op.Value}] {
					return false
				}
				seen[elem{op.Key, op.Value}] = true
			}
		}
	}
	return true
}

// TestAppendsUniqueAgree holds checkUnique's counting-sort pass over the
// appends (intsUnique) to the definition on histories small and large
// (split across the processors), dense and sparse, with and without
// repeated elements and string elements: intsUnique never says unique
// when they are not, says so whenever they are integers and unique, and
// checkUnique refuses exactly the histories with a repeat.
func TestAppendsUniqueAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 2))
	var dupSeen, cleanSeen int
	for run := range 400 {
		txns := 1 + r.IntN(40)
		if run%50 == 0 {
			txns = parallelUnique + r.IntN(1000)
		}
		dups, strs := 0, 0
		if r.IntN(2) == 0 {
			dups = 1 + r.IntN(2)
		}
		if r.IntN(3) == 0 {
			strs = 1 + r.IntN(3)
		}
		h := appendHistory(r, txns, 1+r.IntN(6), 1+r.Int64N(3)*int64(r.IntN(2))*1000, dups, strs)
		want := appendsUniqueNaive(h)
		ints := true
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				if op.Kind == history.Append && op.Value.Kind != history.Int {
					ints = false
				}
			}
		}
		if got := intsUnique(h, history.Append); got != (want && ints) {
			t.Fatalf("run %d (%d transactions): intsUnique %v, unique %v, integers %v", run, txns, got, want, ints)
		}
		if err := checkUnique(h); (err == nil) != want {
			t.Fatalf("run %d (%d transactions): checkUnique %v, unique %v", run, txns, err, want)
		}
		if want {
			cleanSeen++
		} else {
			dupSeen++
		}
	}
	if dupSeen == 0 || cleanSeen == 0 {
		t.Fatalf("%d histories with repeats, %d without: a case is missing", dupSeen, cleanSeen)
	}
}
