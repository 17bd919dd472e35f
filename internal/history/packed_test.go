package history

import (
	"math/rand/v2"
	"testing"
)

// TestPackedTable: the table agrees with a Go map through inserts,
// overwrites, lookups of absent words and growth from a small size.
func TestPackedTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	tab, want := newPackedTable(4), map[uint64]int32{}
	for i := range 200_000 {
		w := uint64(r.IntN(5000))<<40 | uint64(r.IntN(50))
		if r.IntN(3) == 0 {
			w = ^uint64(0) - 1 - uint64(r.IntN(3)) // words near the top
		}
		if r.IntN(2) == 0 {
			tab.put(w, int32(i))
			want[w] = int32(i)
		} else {
			got, found := tab.putIfAbsent(w, int32(i))
			prev, had := want[w]
			if found != had || found && got != prev {
				t.Fatalf("putIfAbsent(%x) = %d, %v; want %d, %v", w, got, found, prev, had)
			}
			if !had {
				want[w] = int32(i)
			}
		}
		q := uint64(r.IntN(6000))<<40 | uint64(r.IntN(60))
		got, ok := tab.get(q)
		if w2, ok2 := want[q]; ok != ok2 || got != w2 {
			t.Fatalf("get(%x) = %d, %v; want %d, %v", q, got, ok, w2, ok2)
		}
	}
	if tab.n != len(want) {
		t.Fatalf("%d entries, want %d", tab.n, len(want))
	}
	for w, id := range want {
		if got, ok := tab.get(w); !ok || got != id {
			t.Fatalf("get(%x) = %d, %v; want %d", w, got, ok, id)
		}
	}
}

// TestResolveReadsParallel: on a history large enough to split the read
// resolution across processors, the parts agree with one sequential pass.
func TestResolveReadsParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	h := New()
	for k := range 500 {
		h.Key(IntValue(int64(k)))
	}
	h.Sessions = append(h.Sessions, IntValue(0))
	for i := range parallelReads + 1000 {
		var ops []Op
		for range 4 {
			k := KeyID(r.IntN(500))
			if r.IntN(2) == 0 {
				ops = append(ops, Op{Kind: Write, Key: k, Value: IntValue(int64(r.IntN(2000)))})
			} else {
				ops = append(ops, Op{Kind: Read, Key: k, Value: IntValue(int64(r.IntN(2000)))})
			}
		}
		h.Txns = append(h.Txns, Txn{ID: IntValue(int64(i)), Ops: ops})
	}
	ix := NewIndex(h)
	got := append([]int32(nil), ix.readFrom...)
	ix.resolveReadsOf(0, len(h.Txns), nil)
	for i := range got {
		if got[i] != ix.readFrom[i] {
			t.Fatalf("operation %d: parallel %d, sequential %d", i, got[i], ix.readFrom[i])
		}
	}
}

// TestIndexPartitioned: on a history large enough for the partitioned
// inserts, with repeated values, nulls, deletes, strings, values that do
// not pack and initial values, the index agrees with a plain map: first
// writes, chains in file order, and the first duplicate in file order.
func TestIndexPartitioned(t *testing.T) {
	for _, initial := range []bool{false, true} {
		r := rand.New(rand.NewPCG(5, 5))
		h := New()
		for k := range 300 {
			h.Key(IntValue(int64(k)))
		}
		if initial {
			h.Header.Initial.Values = map[KeyID]Value{7: IntValue(123456), 8: StringValue("i")}
		}
		h.Sessions = append(h.Sessions, IntValue(0))
		value := func(i int) Value {
			switch r.IntN(40) {
			case 0:
				return NullValue
			case 1:
				return StringValue("s" + string(rune('a'+r.IntN(3))))
			case 2:
				return IntValue(-1 - int64(r.IntN(3)))
			case 3:
				return IntValue(int64(r.IntN(1000)))
			case 4:
				return IntValue(123456)
			}
			return IntValue(int64(10*i + r.IntN(5)))
		}
		for i := range 70000 {
			var ops []Op
			for range 4 {
				k := KeyID(r.IntN(300))
				switch r.IntN(5) {
				case 0:
					ops = append(ops, Op{Kind: Delete, Key: k})
				case 1, 2:
					ops = append(ops, Op{Kind: Write, Key: k, Value: value(i)})
				default:
					ops = append(ops, Op{Kind: Read, Key: k, Value: value(i)})
				}
			}
			h.Txns = append(h.Txns, Txn{ID: IntValue(int64(i)), Ops: ops})
		}
		ix := NewIndex(h)
		if ix.packed.partitions() < 2 {
			t.Fatalf("%d partitions: the test does not reach the partitioned inserts", ix.packed.partitions())
		}
		checkIndex(t, h, ix)
	}
}

// checkIndex compares ix with a plain map over h's writes: write ids, first
// writes, chains in file order, the first duplicate in file order and the
// reads' first writes.
func checkIndex(t *testing.T, h *History, ix *Index) {
	t.Helper()
	type pair struct {
		k KeyID
		v Value
	}
	first := map[pair]int32{}
	last := map[pair]int32{}
	id := int32(0)
	dupAt := int32(-1)
	var dupRefs [2]OpRef
	for i := range h.Txns {
		for j, op := range h.Txns[i].Ops {
			if op.Kind != Write && op.Kind != Delete {
				continue
			}
			ref := OpRef{Txn: TxnID(i), Op: int32(j)}
			if got := ix.WriteRef(id); got != ref {
				t.Fatalf("write %d is %v, want %v", id, got, ref)
			}
			p := pair{op.Key, h.Installed(op)}
			if f, ok := first[p]; ok {
				if ix.NextWrite(last[p]) != id {
					t.Fatalf("write %d: the chain of %v goes to %d", id, p, ix.NextWrite(last[p]))
				}
				if dupAt < 0 && !p.v.IsNull() {
					dupAt, dupRefs = id, [2]OpRef{ix.WriteRef(f), ref}
				}
			} else {
				first[p] = id
				if dupAt < 0 && !p.v.IsNull() && ix.WrittenInitially(p.k, p.v) {
					dupAt, dupRefs = id, [2]OpRef{{Txn: Init, Op: -1}, ref}
				}
			}
			last[p] = id
			id++
		}
	}
	for p, f := range first {
		if got, ok := ix.FirstWrite(p.k, p.v); !ok || got != f {
			t.Fatalf("first write of %v: %d, %v; want %d", p, got, ok, f)
		}
		if ix.NextWrite(last[p]) != -1 {
			t.Fatalf("the chain of %v goes on after its last write", p)
		}
	}
	if ix.Unique() != (dupAt < 0) {
		t.Fatalf("Unique() = %v, want %v", ix.Unique(), dupAt < 0)
	}
	if _, _, refs := ix.Duplicate(); dupAt >= 0 && refs != dupRefs {
		t.Fatalf("Duplicate() = %v, want %v", refs, dupRefs)
	}
	for i := range h.Txns {
		for j, op := range h.Txns[i].Ops {
			got := ix.ReadFrom(TxnID(i), j)
			want := NotExternal
			if op.Kind == Read && !ownWriteBefore(h.Txns[i].Ops[:j], op.Key) {
				want = FromNothing
				if f, ok := first[pair{op.Key, op.Value}]; ok {
					want = f
				}
			}
			if got != want {
				t.Fatalf("txn %d op %d: ReadFrom %d, want %d", i, j, got, want)
			}
		}
	}
}

// TestIndexPartitionedBoundaries: writes whose probes leave a processor's
// range of the table, at its end and at the table's end, keep their first
// write and chain.
func TestIndexPartitionedBoundaries(t *testing.T) {
	const n = parallelReads + 1000
	r := rand.New(rand.NewPCG(8, 8))
	size := uint64(len(newPackedTable(n).slots))
	var edge []Value // values of key 1 whose first slot is near a boundary
	for len(edge) < 60 {
		v := int64(r.IntN(1 << 39))
		w, _ := pack(1, v)
		slot := ((w + 1) * 0x9E3779B97F4A7C15) >> (64 - uint(bits(size)))
		if slot >= size-3 || slot >= size/2-3 && slot < size/2 {
			edge = append(edge, IntValue(v))
		}
	}
	h := New()
	h.Key(IntValue(0))
	h.Key(IntValue(1))
	h.Sessions = append(h.Sessions, IntValue(0))
	for i := range n {
		op := Op{Kind: Write, Key: 0, Value: IntValue(int64(i))}
		if i%500 == 0 {
			op = Op{Kind: Write, Key: 1, Value: edge[r.IntN(len(edge))]}
		}
		h.Txns = append(h.Txns, Txn{ID: IntValue(int64(i)), Ops: []Op{op, {Kind: Read, Key: 1, Value: edge[r.IntN(len(edge))]}}})
	}
	ix := NewIndex(h)
	if len(ix.packed.slots) != int(size) || ix.packed.partitions() < 2 {
		t.Fatalf("%d slots, %d partitions: the test misses its boundaries", len(ix.packed.slots), ix.packed.partitions())
	}
	checkIndex(t, h, ix)
}

func bits(n uint64) int {
	b := 0
	for ; n > 1; n >>= 1 {
		b++
	}
	return b
}
