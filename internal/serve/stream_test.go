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

// TestIDSet: the interval set agrees with a map on random ids, mostly
// growing with gaps filled later (as a run's ids come), and holds few
// intervals for dense ids.
func TestIDSet(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var s idSet
	ref := map[int64]bool{}
	for i := range 20000 {
		n := int64(i) + int64(r.IntN(64)) - 32
		if r.IntN(50) == 0 {
			n = r.Int64N(1<<50) - 1<<49
		}
		v := history.IntValue(n)
		if s.has(v) != ref[n] {
			t.Fatalf("has(%d) = %v, want %v", n, s.has(v), ref[n])
		}
		s.add(v)
		ref[n] = true
		if !s.has(v) {
			t.Fatalf("%d not held after add", n)
		}
	}
	for n := int64(-100); n < 20100; n++ {
		if s.has(history.IntValue(n)) != ref[n] {
			t.Fatalf("has(%d) = %v, want %v", n, s.has(history.IntValue(n)), ref[n])
		}
	}
	for i := 1; i < len(s.iv); i++ {
		if s.iv[i-1][1]+1 >= s.iv[i][0] || s.iv[i][0] > s.iv[i][1] {
			t.Fatalf("intervals %v and %v overlap or touch", s.iv[i-1], s.iv[i])
		}
	}
	var dense idSet
	for i := range 10000 {
		dense.add(history.IntValue(int64(10000 - i)))
		dense.add(history.IntValue(int64(10000 + i)))
	}
	if len(dense.iv) != 1 {
		t.Fatalf("dense ids in %d intervals", len(dense.iv))
	}
	s.add(history.StringValue("a"))
	if !s.has(history.StringValue("a")) || s.has(history.StringValue("b")) {
		t.Fatal("string ids")
	}
}
