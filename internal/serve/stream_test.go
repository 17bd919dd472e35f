package serve

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestEncodeDecode: every value of every space comes back as it was, two
// values collide only when they are equal in one space, and a space's
// small integers stay integers in their order.
func TestEncodeDecode(t *testing.T) {
	vals := []history.Value{history.IntValue(0), history.IntValue(1), history.IntValue(1<<spaceShift - 1), history.IntValue(1 << spaceShift),
		history.IntValue(-1), history.IntValue(math.MinInt64), history.IntValue(math.MaxInt64), history.StringValue(""), history.StringValue("x"),
		history.StringValue("\x00\x00\x00\x00\x00s"), history.StringValue("\x00\x00\x00\x00\x01i12345678"), history.NullValue}
	seen := map[history.Value]string{}
	for _, space := range []uint32{0, 1, 7, maxIntSpace - 1, maxIntSpace, math.MaxUint32} {
		for _, v := range vals {
			e := encode(space, v)
			if e.Kind == history.String && (len(e.S) == 0 || e.S[0] != 0) {
				t.Fatalf("%d %v: a string the input may hold: %q", space, v, e.S)
			}
			if sp, d := decode(e); sp != space || d != v {
				t.Fatalf("%d %v: encoded %v, decoded %d %v", space, v, e, sp, d)
			}
			key := history.IntValue(int64(space)).String() + "/" + v.String()
			if other, ok := seen[e]; ok {
				t.Fatalf("%s and %s both encode to %v", other, key, e)
			}
			seen[e] = key
		}
		if space < maxIntSpace && (encode(space, history.IntValue(5)).Kind != history.Int || encode(space, history.IntValue(5)).N >= encode(space, history.IntValue(6)).N) {
			t.Fatalf("space %d: small integers are not kept as ordered integers", space)
		}
	}
}

// TestDigestSet: the set of ids and digests agrees with a map on random
// ids, mostly growing with gaps filled later (as a run's ids come), some
// far apart or negative, and on string ids; densely numbered ids cost
// little more than their digests.
func TestDigestSet(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var s digestSet
	ref := map[int64]uint64{}
	for i := range 20000 {
		n := int64(i) + int64(r.IntN(64)) - 32
		if r.IntN(50) == 0 {
			n = r.Int64N(1<<50) - 1<<49
		}
		if r.IntN(500) == 0 {
			n = [...]int64{math.MinInt64, math.MaxInt64, -1, 0, -64, 63, 64}[r.IntN(7)]
		}
		v := history.IntValue(n)
		d, ok := s.get(v)
		if want, held := ref[n]; ok != held || d != want {
			t.Fatalf("get(%d) = %d %v, want %d %v", n, d, ok, want, held)
		}
		if ok {
			continue
		}
		d = r.Uint64()
		s.put(v, d)
		ref[n] = d
		if got, ok := s.get(v); !ok || got != d {
			t.Fatalf("%d: %d %v after put(%d)", n, got, ok, d)
		}
	}
	for n := int64(-100); n < 20100; n++ {
		d, ok := s.get(history.IntValue(n))
		if want, held := ref[n]; ok != held || d != want {
			t.Fatalf("get(%d) = %d %v, want %d %v", n, d, ok, want, held)
		}
	}
	for n, want := range ref {
		if d, ok := s.get(history.IntValue(n)); !ok || d != want {
			t.Fatalf("get(%d) = %d %v, want %d", n, d, ok, want)
		}
	}
	var dense digestSet
	for i := range 10000 {
		dense.put(history.IntValue(int64(10000-i)), uint64(i))
		dense.put(history.IntValue(int64(10001+i)), uint64(i))
	}
	if len(dense.blocks) > 20000/64+2 {
		t.Fatalf("20,000 dense ids in %d blocks", len(dense.blocks))
	}
	s.put(history.StringValue("a"), 5)
	if d, ok := s.get(history.StringValue("a")); !ok || d != 5 {
		t.Fatal("string ids")
	}
	if _, ok := s.get(history.StringValue("b")); ok {
		t.Fatal("string ids")
	}
}
