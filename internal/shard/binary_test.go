package shard

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check/checktest"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// TestBinaryAsJSON: a message of pieces in the binary form reads back as
// the same transactions as the pieces' JSON lines — ids, sessions,
// statuses, timestamps, operations — with the places the JSON message's
// header gives, for 1 to 5 shards.
func TestBinaryAsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var reused Batch // one batch decoded into again and again reads as a new one
	for _, n := range []int{1, 2, 3, 5} {
		h := checktest.EveryShape(r, 400, n%2 == 0)
		encs := map[ID]*Encoder{}
		lines := map[ID][]byte{}
		heads := map[ID][]string{}
		var scratch []history.Op
		for i := range h.Txns {
			txn := &h.Txns[i]
			for _, p := range Split(h, txn, n) {
				if encs[p.ID] == nil {
					encs[p.ID] = &Encoder{}
				}
				if err := encs[p.ID].Add(h, txn, &p); err != nil {
					t.Fatal(err)
				}
				var err error
				if lines[p.ID], scratch, err = AppendLine(lines[p.ID], h, txn, &p, scratch); err != nil {
					t.Fatal(err)
				}
				heads[p.ID] = append(heads[p.ID], p.Header())
			}
		}
		for id, e := range encs {
			msg := e.Append(nil)
			got, err := Decode(msg)
			if err != nil {
				t.Fatalf("%d shards, %s: %v", n, id, err)
			}
			if err := reused.Decode(msg); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(reused.Txns, got.Txns) || !reflect.DeepEqual(reused.History, got.History) || !slices.Equal(reused.Of, got.Of) {
				t.Fatalf("%d shards, %s: decoded into a used batch, the message reads otherwise", n, id)
			}
			for i := range got.Txns {
				if !slices.Equal(reused.Places(i), got.Places(i)) {
					t.Fatalf("%d shards, %s: decoded into a used batch, piece %d's places read otherwise", n, id, i)
				}
			}
			want, err := native.Read(bytes.NewReader(lines[id]), "pieces")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Txns) != len(want.Txns) || e.Pieces() != len(want.Txns) {
				t.Fatalf("%d shards, %s: %d pieces read back, %d written", n, id, len(got.Txns), len(want.Txns))
			}
			for i := range want.Txns {
				g, w := &got.Txns[i], &want.Txns[i]
				if g.ID != w.ID || got.History.Sessions[g.Session] != want.Sessions[w.Session] || g.Status != w.Status ||
					g.HasStartTS != w.HasStartTS || g.HasCommitTS != w.HasCommitTS || g.StartTS != w.StartTS || g.CommitTS != w.CommitTS ||
					g.Line != i+1 || len(g.Ops) != len(w.Ops) {
					t.Fatalf("%d shards, %s, piece %d: read back as %+v, JSON gives %+v", n, id, i, *g, *w)
				}
				for j := range w.Ops {
					a, b := g.Ops[j], w.Ops[j]
					if a.Kind == history.Read && a.Value.IsNull() && b.Kind == history.ReadList && b.List == nil {
						// A reader of JSON lines takes a null read of a key
						// that no other operation of the message shows to
						// hold a value for a read of an empty list; the
						// binary form keeps the operation as it was.
						b.Kind = history.Read
					}
					if a.Kind != b.Kind || a.Lock != b.Lock || got.History.Keys[a.Key] != want.Keys[b.Key] || a.Value != b.Value || !slices.Equal(a.List, b.List) {
						t.Fatalf("%d shards, %s, piece %d, ops[%d]: %+v, JSON gives %+v", n, id, i, j, a, b)
					}
				}
				of, places, err := ParseHeader(heads[id][i])
				if err != nil {
					t.Fatal(err)
				}
				if int(got.Of[i]) != of || !slices.Equal(got.Places(i), places) {
					t.Fatalf("%d shards, %s, piece %d: of %d places %v, the header %q", n, id, i, got.Of[i], got.Places(i), heads[id][i])
				}
			}
			e.Reset()
			if e.Pieces() != 0 || len(e.Append(nil)) != len(Magic)+5 {
				t.Fatalf("Reset left %d pieces, %d bytes", e.Pieces(), len(e.Append(nil)))
			}
		}
	}
}

// TestDecodeRefuses: a truncated message, one of another version, with
// flags, with trailing bytes, an index out of its tables, garbage: each
// refused with an error saying what, never a panic.
func TestDecodeRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	h := checktest.EveryShape(r, 30, false)
	var e Encoder
	for i := range h.Txns {
		for _, p := range Split(h, &h.Txns[i], 1) {
			if p.ID.Kind == Keys {
				if err := e.Add(h, &h.Txns[i], &p); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	msg := e.Append(nil)
	if _, err := Decode(msg); err != nil {
		t.Fatal(err)
	}
	for cut := range len(msg) {
		if _, err := Decode(msg[:cut]); err == nil {
			t.Fatalf("a message cut at byte %d of %d read", cut, len(msg))
		}
	}
	bad := func(name string, b []byte, want string) {
		t.Helper()
		_, err := Decode(b)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, want)
		}
	}
	v2 := slices.Clone(msg)
	v2[len(Magic)] = 2
	bad("version 2", v2, "version 2")
	fl := slices.Clone(msg)
	fl[len(Magic)+1] = 1
	bad("flags", fl, "flags")
	bad("trailing bytes", append(slices.Clone(msg), 0), "after the last piece")
	bad("JSON", []byte(`{"id":1,"session":0,"ops":[["r",1,null]]}`), "no magic")
	bad("no pieces' room", append([]byte(Magic+"\x01\x00\x00\x00"), 0xff, 0xff, 0x03), "cannot fit")
	// One key, one session, one piece whose operation names key 1.
	bad("key outside", []byte(Magic+"\x01\x00"+"\x01\x01\x02"+"\x01\x00"+"\x01"+"\x01\x02"+"\x00"+"\x00"+"\x01"+"\x01"+"\x00\x01\x00"), "key 1 outside")
	bad("session outside", []byte(Magic+"\x01\x00"+"\x00"+"\x00"+"\x01"+"\x01\x02"+"\x00"+"\x00"+"\x01"+"\x00"+"\x00"), "session 0 outside")
	for i := range 2000 {
		g := slices.Clone(msg)
		for range 1 + r.IntN(4) {
			g[len(Magic)+2+r.IntN(len(g)-len(Magic)-2)] = byte(r.IntN(256))
		}
		if _, err := Decode(g); err == nil && i < 0 {
			t.Fatal("unreachable") // Decode must not panic; reading is allowed
		}
	}
}

// FuzzDecode: no input makes Decode panic; what it reads encodes again to
// a message that reads the same.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	h := checktest.EveryShape(r, 12, true)
	for _, n := range []int{1, 3} {
		var e Encoder
		for i := range h.Txns {
			for _, p := range Split(h, &h.Txns[i], n) {
				if err := e.Add(h, &h.Txns[i], &p); err != nil {
					f.Fatal(err)
				}
			}
		}
		f.Add(e.Append(nil))
	}
	f.Add([]byte(Magic + "\x01\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(b)
		if err != nil {
			return
		}
		// Encode what was read, piece by piece, and read it again.
		var e Encoder
		for i := range got.Txns {
			txn := &got.Txns[i]
			p := Piece{ID: ID{Keys, 0}, Of: int(got.Of[i])}
			if places := got.Places(i); places != nil {
				for _, j := range places {
					p.Ops = append(p.Ops, int(j))
				}
				if len(p.Ops) != len(txn.Ops) || isPrefix(p.Ops) || slices.Max(p.Ops) > 1<<12 {
					continue // not what an encoder writes
				}
				// The encoder picks t.Ops[j] for each place: lay them out so.
				full := make([]history.Op, slices.Max(p.Ops)+1)
				for k, j := range p.Ops {
					full[j] = txn.Ops[k]
				}
				t2 := *txn
				t2.Ops = full
				txn = &t2
			} else {
				for j := range txn.Ops {
					p.Ops = append(p.Ops, j)
				}
			}
			if len(p.Ops) == 0 && txn.Status == history.Committed {
				continue
			}
			if err := e.Add(got.History, txn, &p); err != nil {
				t.Fatalf("piece %d read but not written again: %v", i, err)
			}
		}
		if _, err := Decode(e.Append(nil)); err != nil {
			t.Fatalf("written again, it does not read: %v", err)
		}
	})
}
