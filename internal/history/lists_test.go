package history

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestListsShare: on random reads of a few keys — prefixes of each key's
// order, shorter and longer in any order, and (with diverge) some that
// diverge from it — every list Share returns equals the one it was given
// (which the caller then overwrites, as a reader's scratch slice), stays
// equal after every later read, and cannot be appended to in place;
// without divergent reads the prefixes share a few arrays per key (one
// for each time its longest list grew past its array), reads that end in
// their own appends (of a transaction that did not commit) keeping copies
// of their own without spoiling the others' sharing.
func TestListsShare(t *testing.T) {
	for _, diverge := range []bool{false, true} {
		testListsShare(t, diverge)
	}
}

func testListsShare(t *testing.T, diverge bool) {
	rng := rand.New(rand.NewPCG(3, 5))
	keys := []Value{IntValue(1), IntValue(2), StringValue("x")}
	orders := map[Value][]Value{}
	for _, k := range keys {
		for i := range 300 {
			orders[k] = append(orders[k], IntValue(int64(i*7+len(k.S))))
		}
	}
	var l Lists
	type read struct {
		got, want []Value
	}
	var reads []read
	scratch := make([]Value, 0, 400)
	for range 5000 {
		k := keys[rng.IntN(len(keys))]
		n := rng.IntN(301)
		want := slices.Clone(orders[k][:n])
		if diverge && n > 0 && rng.IntN(20) == 0 {
			want[rng.IntN(n)] = IntValue(-1)
		}
		// A read of its own appends, by a transaction that did not
		// commit: they must not become the key's.
		own := 0
		if n > 0 && rng.IntN(10) == 0 {
			own = 1 + rng.IntN(3)
			for range own {
				want = append(want, IntValue(-3-rng.Int64N(1000)))
			}
		}
		scratch = append(scratch[:0], want...)
		got := l.Share(k, scratch, own)
		for i := range scratch {
			scratch[i] = IntValue(-2) // the caller reuses its scratch
		}
		if len(got) != cap(got) {
			t.Fatalf("a shared list of %d has room for %d: an append would write into the others", len(got), cap(got))
		}
		reads = append(reads, read{got, want})
	}
	for i, r := range reads {
		if !slices.Equal(r.got, r.want) {
			t.Fatalf("read %d: %v, want %v", i, r.got, r.want)
		}
	}
	arrays := map[*Value]bool{}
	for _, r := range reads {
		if len(r.got) > 0 {
			arrays[&r.got[0]] = true
		}
	}
	if !diverge && len(arrays) > 3*20+600 { // the keys' arrays as they grew, and the reads of own appends
		t.Errorf("%d reads hold %d arrays: the prefixes are not shared", len(reads), len(arrays))
	}
}

// TestRepeats: on reads of a few keys sharing storage (Lists), some with
// elements repeated early, late or past where other reads of the array
// end, Repeats.First gives what a fresh look at each list gives, in any
// order of reads.
func TestRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	for round := range 50 {
		var l Lists
		var r Repeats
		orders := map[Value][]Value{}
		keys := []Value{IntValue(1), IntValue(2)}
		for _, k := range keys {
			for i := range 200 {
				v := IntValue(int64(i))
				if rng.IntN(40) == 0 && i > 0 { // a repeat in the key's order
					v = IntValue(int64(rng.IntN(i)))
				}
				orders[k] = append(orders[k], v)
			}
		}
		for range 300 {
			k := keys[rng.IntN(len(keys))]
			list := l.Share(k, orders[k][:rng.IntN(201)], 0)
			got, gotOK := r.First(list)
			want, wantOK := firstRepeat(slices.Clone(list))
			if got != want || gotOK != wantOK {
				t.Fatalf("round %d, a list of %d: %v %v, want %v %v", round, len(list), got, gotOK, want, wantOK)
			}
		}
		if len(r.arrays) == 0 {
			t.Fatalf("round %d: no array was read twice", round)
		}
	}
}

// TestLooked: a look at a read starts where earlier looks at its array
// (with its key) ended, or at its end when they went past it, and a fresh
// array or another key starts at 0.
func TestLooked(t *testing.T) {
	var l Lists
	k := IntValue(1)
	order := []Value{IntValue(1), IntValue(2), IntValue(3), IntValue(4), IntValue(5)}
	a5 := l.Share(k, order, 0) // the longest first: the others are slices of its array
	a3, a2 := l.Share(k, order[:3], 0), l.Share(k, order[:2], 0)
	other := slices.Clone(order[:4])
	looked := Looked{}
	for i, c := range []struct {
		key  KeyID
		list []Value
		want int
	}{{0, a3, 0}, {0, a5, 3}, {0, a2, 2}, {0, a5, 5}, {0, other, 0}, {1, a5, 0}, {0, nil, 0}} {
		if got := looked.From(c.key, c.list); got != c.want {
			t.Errorf("look %d (key %d, %d elements): from %d, want %d", i, c.key, len(c.list), got, c.want)
		}
	}
}

// TestFirstRepeatShortAndLong: firstRepeat, which compares element by
// element up to smallList and uses a set past it, finds what a set finds
// on lists either side of smallList.
func TestFirstRepeatShortAndLong(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	bySet := func(list []Value) (Value, bool) {
		seen := map[Value]bool{}
		for _, e := range list {
			if seen[e] {
				return e, true
			}
			seen[e] = true
		}
		return Value{}, false
	}
	for range 2000 {
		n := rng.IntN(3 * smallList)
		list := make([]Value, n)
		for i := range list {
			list[i] = IntValue(int64(rng.IntN(4*n*(1+rng.IntN(20)) + 1)))
		}
		got, gotOK := firstRepeat(list)
		want, wantOK := bySet(list)
		if got != want || gotOK != wantOK {
			t.Fatalf("%v: %v %v, want %v %v", list, got, gotOK, want, wantOK)
		}
	}
}

// TestListsRebase: after random reads of a few keys — prefixes of each
// key's order, extensions of it, lists that part from it, own appends at
// the end — every list Rebase returns has the elements Share returned,
// every list shared from an array its key's longest list outgrew lands
// in the longest list's array, and no other list moves.
func TestListsRebase(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 3))
	rebased := 0
	for run := range 500 {
		var l Lists
		keys := []Value{IntValue(1), StringValue("k")}
		orders := make([][]Value, len(keys))
		type read struct {
			key  int
			list []Value
		}
		var reads []read
		for range 1 + r.IntN(60) {
			k := r.IntN(len(keys))
			if r.IntN(2) == 0 {
				orders[k] = append(orders[k], IntValue(int64(len(orders[k])+1)))
			}
			list := slices.Clone(orders[k][:r.IntN(len(orders[k])+1)])
			own := 0
			switch r.IntN(8) {
			case 0:
				list = append(list, IntValue(-1)) // parts from the order
			case 1:
				own = 1 + r.IntN(2)
				for range own {
					list = append(list, IntValue(int64(-10-r.IntN(5))))
				}
			}
			reads = append(reads, read{k, l.Share(keys[k], list, own)})
		}
		for _, rd := range reads {
			got := l.Rebase(keys[rd.key], rd.list)
			if !slices.Equal(got, rd.list) {
				t.Fatalf("run %d: Rebase(%v) = %v", run, rd.list, got)
			}
			longest := l.longest[keys[rd.key]]
			if len(got) == 0 {
				continue
			}
			_, outgrown := l.old[&rd.list[0]]
			switch moved := &got[0] != &rd.list[0]; {
			case outgrown && (&got[0] != &longest[0] || cap(got) != len(got)):
				t.Fatalf("run %d: %v, shared from an outgrown array, is not rebased", run, rd.list)
			case !outgrown && moved:
				t.Fatalf("run %d: %v moved though its array was not outgrown", run, rd.list)
			case moved:
				rebased++
			}
		}
		l.Forget()
		if len(reads) > 0 && l.Rebase(keys[reads[0].key], reads[0].list) == nil && len(reads[0].list) > 0 {
			t.Fatalf("run %d: Rebase after Forget lost a list", run)
		}
	}
	if rebased == 0 {
		t.Fatal("no list was rebased: the reads miss the case")
	}
}
