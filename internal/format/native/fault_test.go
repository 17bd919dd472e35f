package native

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// TestFaultsRoundTrip streams transactions and fault records through the
// Writer and reads them back: the faults come back in order with their
// fields, and the transactions are untouched by them.
func TestFaultsRoundTrip(t *testing.T) {
	h := history.MustParse("t1: s0: w x 1 | t2: s1: r x 1")
	h.Header.Present, h.Header.Version = true, Version
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	faults := []history.Fault{
		{Kind: "partition", Node: "n2", Begin: 100, End: 250, Info: `n2 cut off from "n1" n3`},
		{Kind: "cut", Node: "n1", Begin: 300, End: 300},
		{Kind: "clock", Node: "n3", Begin: 400, End: 900, Offset: -83_000_000_000, Info: "n3's clock 1m23s behind"},
	}
	if err := w.WriteTxn(&h.Txns[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFault(&faults[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTxn(&h.Txns[1]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFault(&faults[1]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFault(&faults[2]); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(out.Bytes()), "faults.jsonl")
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got.Txns) != 2 || len(got.Faults) != 3 {
		t.Fatalf("read %d transactions and %d faults, want 2 and 3:\n%s", len(got.Txns), len(got.Faults), out.String())
	}
	for i, f := range got.Faults {
		want := faults[i]
		want.Line = []int{3, 5, 6}[i]
		if f != want {
			t.Errorf("fault %d: got %+v, want %+v", i, f, want)
		}
	}
	// Written whole, the faults follow the transactions and read back.
	var whole bytes.Buffer
	if err := Write(&whole, got); err != nil {
		t.Fatal(err)
	}
	again, err := Read(&whole, "again.jsonl")
	if err != nil || len(again.Faults) != 3 || again.Faults[0].Info != faults[0].Info || again.Faults[2].Offset != faults[2].Offset {
		t.Fatalf("Write and Read again: %v, faults %+v", err, again.Faults)
	}
}

// TestFaultsBadInput: a fault record is validated like a transaction,
// with the line and field named.
func TestFaultsBadInput(t *testing.T) {
	head := `{"format":"isoscope-history","version":1}` + "\n" + `{"id":1,"session":0,"ops":[["w","x",1]]}` + "\n"
	cases := []struct{ line, field, msg string }{
		{`{"fault":"kill","node":"n1"}`, "begin", "missing"},
		{`{"fault":"","begin":5}`, "fault", "empty"},
		{`{"fault":7,"begin":5}`, "fault", "want a string"},
		{`{"fault":"pause","begin":9,"end":3}`, "end", "before begin"},
		{`{"fault":"pause","begin":"soon"}`, "begin", "want an instant"},
		{`{"fault":"pause","begin":-1}`, "begin", "want an instant"},
		{`{"fault":"pause","begin":1,"node":3}`, "node", "want a string"},
		{`{"fault":"clock","begin":1,"offset":"83s"}`, "offset", "want a clock offset"},
		{`{"fault":"clock","begin":1,"offset":1.5}`, "offset", "want a clock offset"},
		{`{"fault":"pause","begin":1`, "fault", "malformed JSON"},
	}
	for _, c := range cases {
		_, err := Read(strings.NewReader(head+c.line+"\n"), "bad.jsonl")
		var fe *format.Error
		if !errors.As(err, &fe) || fe.Line != 3 || fe.Field != c.field || !strings.Contains(fe.Msg, c.msg) {
			t.Errorf("%s: got %v, want line 3, field %s, %q", c.line, err, c.field, c.msg)
		}
	}
	// Unknown fields of a fault record are ignored, as a transaction's.
	h, err := Read(strings.NewReader(head+`{"fault":"clock","begin":1,"end":2,"skew_ms":300}`+"\n"), "ok.jsonl")
	if err != nil || len(h.Faults) != 1 || h.Faults[0].Kind != "clock" {
		t.Fatalf("got %v, %+v", err, h)
	}
}

// TestFaultsParallel: in an input long enough to be parsed in chunks on
// every processor, the fault records are kept in file order.
func TestFaultsParallel(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"format":"isoscope-history","version":1,"unique_values":true}` + "\n")
	nf := 0
	for i := 1; b.Len() < 9<<20; i++ {
		fmt.Fprintf(&b, `{"id":%d,"session":%d,"ops":[["w",%d,%d],["r",%d,null]]}`+"\n", i, i%7, i%1000+1, i, 100000+i)
		if i%20000 == 0 {
			fmt.Fprintf(&b, `{"fault":"pause","node":"n%d","begin":%d,"end":%d}`+"\n", nf, i, i+1)
			nf++
		}
	}
	h, err := Read(strings.NewReader(b.String()), "big.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Faults) != nf || nf < 3 {
		t.Fatalf("read %d faults, want %d", len(h.Faults), nf)
	}
	for i, f := range h.Faults {
		if f.Node != fmt.Sprintf("n%d", i) {
			t.Fatalf("fault %d is %s's: out of order", i, f.Node)
		}
	}
}
