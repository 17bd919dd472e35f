package shard

import (
	"bytes"
	"slices"
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
	for _, bad := range []string{"0", "2/1.x", "2/-1"} {
		if _, _, err := ParseHeader(bad); err == nil {
			t.Fatalf("piece header %q was taken", bad)
		}
	}
}
