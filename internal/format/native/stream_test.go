package native

import (
	"bytes"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestWriterStreams writes a history transaction by transaction, with keys
// and sessions interned between the calls, and reads it back.
func TestWriterStreams(t *testing.T) {
	want := history.MustParse("unique: | t1: s0: r x _ w x 1 | t2: s1: aborted: r x 1 w x 2 | t3: s0: unknown: @5-9: r x 1 w y 3 scan x z [x=1,y=3] | t4: s2: a l 4 r l [4]")
	want.Header.Present, want.Header.Version = true, Version
	want.Header.Source = "stream test"

	h := history.New()
	h.Header = want.Header
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), `{"format":"isoscope-history"`) || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("after the first Flush: %q, want the header line", out.String())
	}
	for i := range want.Txns {
		tx := want.Txns[i]
		tx.Ops = remap(tx.Ops, want, h)
		label := want.Sessions[tx.Session]
		tx.Session = -1
		for s, l := range h.Sessions {
			if l == label {
				tx.Session = int32(s)
			}
		}
		if tx.Session < 0 {
			tx.Session = int32(len(h.Sessions))
			h.Sessions = append(h.Sessions, label)
		}
		if err := w.WriteTxn(&tx); err != nil {
			t.Fatal(err)
		}
		h.Txns = append(h.Txns, tx)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(out.Bytes()), "stream")
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if d := diff(want, got); d != "" {
		t.Errorf("%s\n%s", d, out.String())
	}
}

// remap rewrites ops' keys from history a's ids to b's, interning them in b.
func remap(ops []history.Op, a, b *history.History) []history.Op {
	out := make([]history.Op, len(ops))
	for i, op := range ops {
		if op.Key != history.NoKey {
			op.Key = b.Key(a.Keys[op.Key])
		}
		if op.Range != nil {
			rg := *op.Range
			rg.Pairs = nil
			for _, p := range op.Range.Pairs {
				rg.Pairs = append(rg.Pairs, history.KV{Key: b.Key(a.Keys[p.Key]), Value: p.Value})
			}
			op.Range = &rg
		}
		out[i] = op
	}
	return out
}

func TestWriterRejectsBrokenTxns(t *testing.T) {
	h := history.New()
	h.Sessions = []history.Value{history.IntValue(0)}
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTxn(&history.Txn{ID: history.IntValue(1), Ops: []history.Op{{Kind: history.Read, Key: 3}}}); err == nil {
		t.Error("WriteTxn accepted a key out of range")
	}
	if err := w.WriteTxn(&history.Txn{ID: history.IntValue(2)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "\n"); got != 2 {
		t.Errorf("%d lines, want the header and one transaction:\n%s", got, out.String())
	}
	if err := (&Writer{w: failWriter{}, h: h, buf: []byte("x")}).Flush(); err == nil {
		t.Error("Flush hid a write error")
	}
}
