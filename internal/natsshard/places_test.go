package natsshard

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/shard"
)

// TestPlaces: the places a worker keeps are found again by stream and id —
// integer ids growing, out of order and given again (the later piece's
// places win), string ids, non-canonical integers kept as text — and a
// piece whose operations are its transaction's first keeps nothing.
func TestPlaces(t *testing.T) {
	var p places
	put := func(stream, idJSON, header string) {
		tb := p.table(stream)
		_, ops, err := shard.AppendHeader(tb.begin(), header)
		if err != nil {
			t.Fatal(err)
		}
		tb.end([]byte(idJSON), ops)
	}
	put("a", "5", "2/1.3")
	put("a", "7", "2")
	put("a", "9", "3/0.2")
	put("a", "-4", "2/4")
	put("a", "5", "2/6.7.8")
	put("b", "5", "2/2")
	put("a", `"x"`, "2/1")
	put("a", "012", "2/9")
	for _, c := range []struct {
		stream string
		id     history.Value
		want   []int32
	}{
		{"a", history.IntValue(5), []int32{6, 7, 8}},
		{"a", history.IntValue(7), nil},
		{"a", history.IntValue(9), []int32{0, 2}},
		{"a", history.IntValue(-4), []int32{4}},
		{"a", history.IntValue(12), nil},
		{"b", history.IntValue(5), []int32{2}},
		{"b", history.IntValue(9), nil},
		{"c", history.IntValue(5), nil},
		{"a", history.StringValue("x"), []int32{1}},
		{"a", history.StringValue("y"), nil},
	} {
		if got := p.get(c.stream, c.id); !slices.Equal(got, c.want) {
			t.Errorf("stream %s id %s: places %v, want %v", c.stream, c.id, got, c.want)
		}
	}
	if got, ok := canonicalInt([]byte("-0")); ok {
		t.Errorf("-0 read as the integer %d", got)
	}
}

// TestLineID: a line's id as JSON, an integer or a string with commas.
func TestLineID(t *testing.T) {
	for line, want := range map[string]string{
		`{"id":12,"session":3,"ops":[]}`:      "12",
		`{"id":"a,b","session":3,"ops":[]}`:   `"a,b"`,
		`{"id":"a,\"session\":","session":1}`: `"a,\"session\":"`,
		`{"session":3,"id":12,"ops":[]}`:      "",
		`{"id":12}`:                           "",
	} {
		got, ok := lineID([]byte(line))
		if string(got) != want || ok != (want != "") {
			t.Errorf("%s: id %q %v, want %q", line, got, ok, want)
		}
	}
}

// TestPlacesChunks: many transactions' places, over several chunks of
// places and of sorted ids — ids mostly growing, some out of order or
// given again, pieces of up to twice a chunk's places, through both ways
// in (a binary piece's put, a JSON line's begin and end) — are found again
// as a map keeps them (the later piece of an id wins).
func TestPlacesChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var p places
	tb := p.table("s")
	want := map[int64][]int32{}
	next := int64(0)
	for total := 0; total < 3*opsChunk || len(tb.sorted) < 3; {
		id := next
		switch r := rng.IntN(100); {
		case r < 5 && next > 0:
			id = rng.Int64N(next) // out of order, or again
		default:
			next += 1 + rng.Int64N(3)
			id = next
		}
		n := 1 + rng.IntN(6)
		if rng.IntN(2000) == 0 {
			n = rng.IntN(2 * opsChunk)
		}
		places := make([]int32, n)
		for i := range places {
			places[i] = rng.Int32N(1 << 20)
		}
		if n > 0 && rng.IntN(2) == 0 {
			tb.put(history.IntValue(id), places)
		} else {
			ops := append(tb.begin(), places...)
			tb.end([]byte(strconv.FormatInt(id, 10)), ops)
		}
		if n > 0 {
			want[id] = places
		}
		total += n
	}
	if len(tb.full) < 2 || len(tb.sorted) < 2 {
		t.Fatalf("the test filled %d chunks of places and %d of ids: too few to test their seams", len(tb.full), len(tb.sorted))
	}
	for id := range next + 2 {
		if got := p.get("s", history.IntValue(id)); !slices.Equal(got, want[id]) {
			t.Fatalf("id %d: %d places %v…, want %d %v…", id, len(got), got[:min(4, len(got))], len(want[id]), want[id][:min(4, len(want[id]))])
		}
	}
}
