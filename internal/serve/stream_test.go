package serve

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/wire"
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

// TestCanonicalEncoding: two transactions have one canonical encoding
// exactly when they say the same — the same id, session name, status,
// times, timestamps and operations with the same keys (by name), values
// and lists — on random transactions over a small domain where ints and
// strings that print alike, and lists that join alike, abound; and a
// transaction written out and read back keeps its encoding.
func TestCanonicalEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h := &history.History{Keys: []history.Value{history.IntValue(1), history.StringValue("1"), history.StringValue("a")},
		Sessions: []history.Value{history.IntValue(0), history.StringValue("0")}}
	vals := []history.Value{history.NullValue, history.IntValue(1), history.StringValue("1"), history.StringValue(""),
		history.StringValue("ab"), history.StringValue("a"), history.StringValue("b")}
	pick := func() history.Value { return vals[r.IntN(len(vals))] }
	random := func() history.Txn {
		t := history.Txn{ID: []history.Value{history.IntValue(1), history.IntValue(2), history.StringValue("1")}[r.IntN(3)],
			Session: int32(r.IntN(2)), Status: history.Status(r.IntN(2)), HasTime: r.IntN(2) == 0, Begin: int64(r.IntN(2)), End: int64(r.IntN(2)),
			HasStartTS: r.IntN(2) == 0, StartTS: uint64(r.IntN(2)), HasCommitTS: r.IntN(2) == 0, CommitTS: uint64(r.IntN(2)), Line: r.IntN(9)}
		for range r.IntN(3) {
			o := history.Op{Kind: []history.OpKind{history.Read, history.Write, history.Append, history.ReadList}[r.IntN(4)],
				Lock: r.IntN(4) == 0, Key: history.KeyID(r.IntN(3)), Value: pick()}
			for range r.IntN(3) {
				o.List = append(o.List, pick())
			}
			t.Ops = append(t.Ops, o)
		}
		return t
	}
	// said is what a transaction says: its values resolved, its line
	// left out.
	said := func(t history.Txn) string {
		ops := make([]any, len(t.Ops))
		for i, o := range t.Ops {
			ops[i] = []any{o.Kind, o.Lock, h.Keys[o.Key], o.Value, o.List}
		}
		return fmt.Sprintf("%#v", []any{t.ID, h.Sessions[t.Session], t.Status, t.HasTime, t.Begin, t.End, t.HasStartTS, t.StartTS, t.HasCommitTS, t.CommitTS, ops})
	}
	// near is t with one of its fields drawn again (often to what it
	// was), an operation added or taken away, or nothing changed but its
	// line.
	near := func(t history.Txn) history.Txn {
		fresh := random()
		t.Ops = slices.Clone(t.Ops)
		t.Line++
		switch f := r.IntN(16); {
		case f == 0:
			t.ID = fresh.ID
		case f == 1:
			t.Session = fresh.Session
		case f == 2:
			t.Status = fresh.Status
		case f == 3:
			t.HasTime, t.Begin = fresh.HasTime, fresh.Begin
		case f == 4:
			t.End = fresh.End
		case f == 5:
			t.HasStartTS, t.StartTS = fresh.HasStartTS, fresh.StartTS
		case f == 6:
			t.HasCommitTS, t.CommitTS = fresh.HasCommitTS, fresh.CommitTS
		case f == 7:
			t.Ops = append(t.Ops, fresh.Ops...)
		case f == 8 && len(t.Ops) > 0:
			t.Ops = t.Ops[:len(t.Ops)-1]
		case f >= 9 && len(t.Ops) > 0 && len(fresh.Ops) > 0:
			i, o := r.IntN(len(t.Ops)), fresh.Ops[0]
			switch f {
			case 9:
				t.Ops[i].Kind = o.Kind
			case 10:
				t.Ops[i].Lock = o.Lock
			case 11:
				t.Ops[i].Key = o.Key
			case 12:
				t.Ops[i].Value = o.Value
			default:
				t.Ops[i].List = o.List
			}
		}
		return t
	}
	same, differ := 0, 0
	for range 200000 {
		a := random()
		b := near(a)
		ea, eb := appendCanonical(nil, h, &a), appendCanonical(nil, h, &b)
		if (said(a) == said(b)) != bytes.Equal(ea, eb) {
			t.Fatalf("%s\n%s\nsay the same: %v; encodings %x, %x", said(a), said(b), said(a) == said(b), ea, eb)
		}
		if bytes.Equal(ea, eb) {
			same++
		} else {
			differ++
		}
	}
	if same < 100 || differ < 100 {
		t.Fatalf("%d pairs alike, %d different: the domain is not small enough to test both", same, differ)
	}

	// Written and read back: the same encoding.
	g, _, err := gen.Generate(gen.Config{Txns: 300, Sessions: 5, Keys: 50, Seed: 2, Timestamps: true, AbortRatio: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := native.Write(&buf, g); err != nil {
		t.Fatal(err)
	}
	back, txns, err := wire.ParseLines(buf.Bytes(), "batch")
	if err != nil {
		t.Fatal(err)
	}
	for i := range txns {
		if !bytes.Equal(appendCanonical(nil, g, &g.Txns[i]), appendCanonical(nil, back, &txns[i])) {
			t.Fatalf("transaction %s read back encodes differently", g.Txns[i].ID)
		}
	}
}
