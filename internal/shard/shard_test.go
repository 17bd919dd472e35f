package shard

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// TestSplit: every operation of a transaction goes to exactly one key
// piece, the one of its key's shard, in order; the session piece is on its
// session's shard; every piece counts them all; and the lines read back
// as the transaction's id, session, timestamps and the piece's operations.
func TestSplit(t *testing.T) {
	h := history.New()
	h.Sessions = []history.Value{history.StringValue("alice")}
	for k := range 12 {
		h.Key(history.IntValue(int64(k)))
	}
	var ops []history.Op
	for k := range 12 {
		ops = append(ops, history.Op{Kind: history.Write, Key: history.KeyID(k), Value: history.IntValue(int64(100 + k))})
	}
	txn := history.Txn{ID: history.StringValue("t 1"), StartTS: 5, CommitTS: 9, HasStartTS: true, HasCommitTS: true, Ops: ops, Line: 3}
	for _, n := range []int{1, 2, 4} {
		pieces := Split(h, &txn, n)
		seen := make([]int, len(ops))
		var scratch []history.Op
		for _, p := range pieces {
			if p.Of != len(pieces) {
				t.Fatalf("%d shards: a piece says %d pieces of %d", n, p.Of, len(pieces))
			}
			line, s, err := AppendLine(nil, h, &txn, &p, scratch)
			if err != nil {
				t.Fatal(err)
			}
			scratch = s
			back, err := native.Read(bytes.NewReader(line), "piece")
			if err != nil {
				t.Fatalf("%s: %v\n%s", p.ID, err, line)
			}
			bt := back.Txns[0]
			if bt.ID != txn.ID || back.Sessions[bt.Session] != h.Sessions[0] || bt.StartTS != 5 || bt.CommitTS != 9 {
				t.Fatalf("%s: the piece lost its transaction's identity: %s", p.ID, line)
			}
			if p.ID.Kind == Sessions {
				if p.ID.Shard != Of(h.Sessions[0], n) || len(bt.Ops) != 1 {
					t.Fatalf("session piece %s: %s", p.ID, line)
				}
				continue
			}
			of, idx, err := ParseHeader(p.Header())
			if err != nil || of != len(pieces) {
				t.Fatalf("%s: header %q parsed as %d, %v", p.ID, p.Header(), of, err)
			}
			for i, j := range p.Ops {
				if (idx == nil && j != i) || (idx != nil && int(idx[i]) != j) {
					t.Fatalf("%s: header %q places operation %d at %v", p.ID, p.Header(), j, idx)
				}
			}
			if !slices.IsSorted(p.Ops) || len(bt.Ops) != len(p.Ops) {
				t.Fatalf("%s: operations %v, line %s", p.ID, p.Ops, line)
			}
			for i, j := range p.Ops {
				seen[j]++
				if Of(h.Keys[ops[j].Key], n) != p.ID.Shard || back.Keys[bt.Ops[i].Key] != h.Keys[ops[j].Key] {
					t.Fatalf("%s holds operation %d of another shard", p.ID, j)
				}
			}
		}
		for j, c := range seen {
			if c != 1 {
				t.Fatalf("%d shards: operation %d is in %d pieces", n, j, c)
			}
		}
	}
}

// TestParseID: k:N and s:N within the number of shards; anything else is
// refused.
func TestParseID(t *testing.T) {
	if id, err := ParseID("k:3", 4); err != nil || id != (ID{Keys, 3}) || id.Subject("p") != "p.k.3" {
		t.Fatalf("k:3: %v %v", id, err)
	}
	for _, bad := range []string{"k:4", "x:1", "k", "s:-1", "s:a"} {
		if _, err := ParseID(bad, 4); err == nil {
			t.Fatalf("%s: no error", bad)
		}
	}
	for _, bad := range []string{"0", "2/1.x", "2/-1", "3/", "2/1.", "2/1..2", "x", "2/99999999999"} {
		if _, _, err := ParseHeader(bad); err == nil {
			t.Fatalf("piece header %q was taken", bad)
		}
	}
	// AppendHeader appends the places to what it is given.
	if n, ops, err := AppendHeader([]int32{7}, "4/1.10.3"); err != nil || n != 4 || !slices.Equal(ops, []int32{7, 1, 10, 3}) {
		t.Fatalf("4/1.10.3 after 7: %d %v %v", n, ops, err)
	}
}

// TestOfPinned holds Of to values computed apart from it (a Python
// transcription of FNV-1a and MurmurHash3's finalizer): publishers and
// workers of one deployment, built apart, must shard alike.
func TestOfPinned(t *testing.T) {
	cases := []struct {
		v    history.Value
		n    int
		want int
	}{
		{history.IntValue(0), 4, 3}, {history.IntValue(1), 4, 2}, {history.IntValue(2), 4, 3}, {history.IntValue(3), 4, 2},
		{history.IntValue(4), 4, 1}, {history.IntValue(5), 4, 0}, {history.IntValue(6), 4, 2}, {history.IntValue(7), 4, 1},
		{history.IntValue(1000), 7, 6}, {history.IntValue(-1), 1024, 229}, {history.IntValue(1 << 40), 1000, 641},
		{history.StringValue("user42"), 16, 7}, {history.StringValue(""), 3, 0}, {history.Value{}, 5, 1},
	}
	for _, c := range cases {
		if got := Of(c.v, c.n); got != c.want {
			t.Errorf("Of(%v, %d) = %d, want %d", c.v, c.n, got, c.want)
		}
	}
}

// TestOfSpreads checks that keys in arithmetic progressions — the shapes
// workloads give keys — spread over the shards: each shard of n gets its
// share within a bound a uniform hash exceeds with a probability under
// 1e-6 (FNV-1a alone put 0, 4, …, 252 all in one shard of 4).
func TestOfSpreads(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8, 16, 64} {
		for _, tc := range [][2]int64{{64, 1}, {64, 4}, {20000, 1}, {20000, 2}, {20000, 4}, {20000, 8}, {20000, 64}, {20000, 256}, {20000, 1000}, {20000, 1 << 16}, {20000, 1 << 32}} {
			keys, step := tc[0], tc[1]
			count := make([]int, n)
			for k := range keys {
				count[Of(history.IntValue(k*step), n)]++
			}
			mean := float64(keys) / float64(n)
			// 5 standard deviations of a binomial count.
			bound := 5 * math.Sqrt(mean*(1-1/float64(n)))
			for s, c := range count {
				if math.Abs(float64(c)-mean) > bound {
					t.Errorf("%d shards, %d keys step %d: shard %d has %d, want %.0f ± %.0f", n, keys, step, s, c, mean, bound)
				}
			}
		}
		count := make([]int, n)
		for k := range 20000 {
			count[Of(history.StringValue("user"+strconv.Itoa(k)), n)]++
		}
		for s, c := range count {
			if mean := 20000 / float64(n); math.Abs(float64(c)-mean) > 5*math.Sqrt(mean) {
				t.Errorf("%d shards, keys user0…: shard %d has %d keys", n, s, c)
			}
		}
	}
}

func TestSharding(t *testing.T) {
	for _, n := range []int{1, 2, 1024} {
		if got, err := ParseSharding(Sharding(n)); err != nil || got != n {
			t.Errorf("ParseSharding(Sharding(%d)) = %d, %v", n, got, err)
		}
	}
	for _, s := range []string{"", "fnv1a64/4", "fnv1a64-fmix64", "fnv1a64-fmix64/0", "fnv1a64-fmix64/x"} {
		if _, err := ParseSharding(s); err == nil {
			t.Errorf("ParseSharding(%q) accepted", s)
		}
	}
}
