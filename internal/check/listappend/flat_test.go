package listappend

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check/checker"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Element schemes of flatLists' keys: what the flat tables hold (dense
// integers, those near the ends of int64 among them), what they must
// leave to the map (sparse integers, strings, null), and a mix.
const (
	schemeDense = iota
	schemeSparse
	schemeStrings
	schemeHigh
	schemeLow
	schemeMixed
	numSchemes
)

// flatLists records a small list-append history shaped to provoke the
// flat append tables: each key's elements follow a scheme of its own,
// transactions commit, abort or end unknown, and reads sometimes return
// what no correct store would — a list that is not a prefix of the key's
// order (two elements swapped, one dropped), an element nobody appended
// (inside a dense key's range or outside it), a repeated element, the
// appends of an aborted transaction — and an element is now and then
// appended twice.
func flatLists(r *rand.Rand, txns, keys int) *history.History {
	h := history.New()
	for s := range 3 {
		h.Sessions = append(h.Sessions, history.IntValue(int64(s)))
	}
	key := make([]history.KeyID, keys)
	scheme := make([]int, keys)
	for k := range keys {
		key[k] = h.Key(history.StringValue(fmt.Sprint("k", k)))
		scheme[k] = r.IntN(numSchemes)
	}
	issued := make([]int64, keys)
	elem := func(k int, n int64) history.Value {
		switch s := scheme[k]; {
		case s == schemeSparse:
			return history.IntValue(n * 1000)
		case s == schemeStrings:
			return history.StringValue(fmt.Sprint("e", n))
		case s == schemeHigh:
			return history.IntValue(math.MaxInt64 - n)
		case s == schemeLow:
			return history.IntValue(math.MinInt64 + n)
		case s == schemeMixed && n%5 == 0:
			return history.StringValue(fmt.Sprint(n))
		case s == schemeMixed && n == 3:
			return history.NullValue
		}
		return history.IntValue(n)
	}
	fresh := func(k int) history.Value {
		if issued[k] > 0 && r.IntN(25) == 0 {
			return elem(k, 1+r.Int64N(issued[k])) // appended twice
		}
		issued[k]++
		return elem(k, issued[k])
	}
	lists := make([][]history.Value, keys)
	for i := range txns {
		t := history.Txn{ID: history.IntValue(int64(i + 1)), Session: int32(r.IntN(3))}
		switch r.IntN(8) {
		case 0:
			t.Status = history.Aborted
		case 1:
			t.Status = history.Unknown
		}
		own := make([][]history.Value, keys)
		for range 1 + r.IntN(4) {
			k := r.IntN(keys)
			if r.IntN(2) == 0 {
				e := fresh(k)
				own[k] = append(own[k], e)
				t.Ops = append(t.Ops, history.Op{Kind: history.Append, Key: key[k], Value: e})
				continue
			}
			list := append(slices.Clone(lists[k]), own[k]...)
			switch f := r.IntN(20); {
			case f == 0 && len(list) >= 2:
				j := r.IntN(len(list) - 1)
				list[j], list[j+1] = list[j+1], list[j]
			case f == 1 && len(list) >= 2:
				list = slices.Delete(list, r.IntN(len(list)-1), len(list)-1)
			case f == 2:
				list = append(list, elem(k, issued[k]+1+r.Int64N(3)))
			case f == 3 && len(list) > 0:
				list = append(list, list[r.IntN(len(list))])
			case f == 4:
				list = append(list, elem(k, 1+r.Int64N(issued[k]+2)*7))
			}
			t.Ops = append(t.Ops, history.Op{Kind: history.ReadList, Key: key[k], List: list})
		}
		installed := t.Status == history.Committed || r.IntN(2) == 0 && t.Status == history.Unknown || r.IntN(6) == 0
		if installed {
			for k := range keys {
				lists[k] = append(slices.Clip(lists[k]), own[k]...)
			}
		}
		h.Txns = append(h.Txns, t)
	}
	return h
}

// TestFlatTablesAgree holds the flat append tables to the map they stand
// in for: on thousands of histories shaped to provoke them (flatLists),
// at every level the checker decides, the check with the tables finds
// exactly what the check with every element in the map finds, and Plan
// refuses the same histories with the same error.
func TestFlatTablesAgree(t *testing.T) {
	levels := []level.ID{level.ReadUncommitted, level.ReadCommitted, level.SnapshotIsolation, level.GSI,
		level.Serializable, level.PlainSerializable, level.RepeatableRead, level.CursorStability, level.PL2Plus, level.RCSession}
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	r := rand.New(rand.NewPCG(32, 1))
	var refused, violated, held, flat, mapped int
	for run := range runs {
		h := flatLists(r, 2+r.IntN(10), 1+r.IntN(3))
		ix := history.NewIndex(h)
		tables, errT := indexAppends(h, true)
		maps, errM := indexAppends(h, false)
		if fmt.Sprint(errT) != fmt.Sprint(errM) {
			t.Fatalf("run %d: the tables say %v, the map %v\n%s", run, errT, errM, history.Notation(h))
		}
		if errT != nil {
			refused++
			continue
		}
		flat += len(tables.slots)
		mapped += len(tables.others)
		for _, id := range levels {
			l := level.Get(id)
			got, err := checkWith(context.Background(), ix, tables, l, checker.Options{})
			if err != nil {
				t.Fatalf("run %d at %s: %v", run, l.Name, err)
			}
			want, err := checkWith(context.Background(), ix, maps, l, checker.Options{})
			if err != nil {
				t.Fatalf("run %d at %s (map): %v", run, l.Name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("run %d at %s: with the tables %v, with the map %v\n%s", run, l.Name, got, want, history.Notation(h))
			}
			if len(got) > 0 {
				violated++
			} else {
				held++
			}
		}
	}
	// The histories provoke both paths and every outcome.
	if refused == 0 || violated == 0 || held == 0 || flat == 0 || mapped == 0 {
		t.Fatalf("refused %d, violated %d, held %d, flat slots %d, map elements %d: the histories miss a case",
			refused, violated, held, flat, mapped)
	}
	t.Logf("refused %d, violated %d, held %d checks; %d flat slots, %d map elements", refused, violated, held, flat, mapped)
}
