package isoscope_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/isoscope/isoscope"
)

// TestStrictSerializableWithoutInstants: through the public API too,
// strict serializability of a history without begin and end instants is
// checked at serializability: a violation there is one of it, and
// otherwise the outcome is unknown, saying why.
func TestStrictSerializableWithoutInstants(t *testing.T) {
	for _, tc := range []struct {
		text, outcome, says string
	}{
		{`{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",1],["w","x",2]]}
{"id":3,"session":2,"ops":[["r","x",1],["w","x",3]]}
`, "violation", "found at serializable"},
		{`{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}
{"id":2,"session":1,"ops":[["r","x",1],["w","x",2]]}
`, "unknown", "no begin and end instants"},
	} {
		h, err := isoscope.ReadHistory(strings.NewReader(tc.text), "h.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: isoscope.StrictSerializable})
		if err != nil {
			t.Fatalf("want a verdict, got %v", err)
		}
		says := res.Note
		if res.Outcome == isoscope.Undecided {
			says = res.Reason
		}
		if res.Level != isoscope.StrictSerializable || res.Outcome.String() != tc.outcome || res.CheckedAt != isoscope.Serializable || !strings.Contains(says, tc.says) {
			t.Errorf("level %s outcome %s checked at %q, %q; want %s checked at serializable saying %q", res.Level, res.Outcome, res.CheckedAt, says, tc.outcome, tc.says)
		}
	}
}

// TestNewHistoryRefuses: a history built in Go is validated as a file
// is, and the error names the transaction.
func TestNewHistoryRefuses(t *testing.T) {
	x := isoscope.Str("x")
	for _, tc := range []struct {
		name string
		txns []isoscope.Txn
		want string
	}{
		{"duplicate id", []isoscope.Txn{{ID: isoscope.Int(7), Session: x, Ops: []isoscope.Op{isoscope.W(x, isoscope.Int(1))}}, {ID: isoscope.Int(7), Session: x, Ops: []isoscope.Op{isoscope.R(x, isoscope.Int(1))}}}, "txns[1]: "},
		{"no session", []isoscope.Txn{{Ops: []isoscope.Op{isoscope.W(x, isoscope.Int(1))}}}, "txns[0]: no session"},
		{"end before begin", []isoscope.Txn{{Session: x, Timed: true, Begin: 10, End: 5, Ops: []isoscope.Op{isoscope.W(x, isoscope.Int(1))}}}, "txns[0]: "},
		{"unknown kind", []isoscope.Txn{{Session: x, Ops: []isoscope.Op{{Kind: 99, Key: x}}}}, "txns[0]: ops[0]: unknown operation kind"},
		{"unknown status", []isoscope.Txn{{Session: x, Status: 9}}, "txns[0]: unknown status"},
	} {
		_, err := isoscope.NewHistory(tc.txns)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestBuiltEqualsRead: every history of testdata/formats, taken apart
// into Go values (History.Txn) and built again (NewHistory), gets the same
// verdict, checker and anomalies at several levels as the one read from
// the file. (Committed transactions without operations, which Cobra logs
// hold and the isoscope format does not, are left out: they take part in
// no dependency.)
func TestBuiltEqualsRead(t *testing.T) {
	entries, err := os.ReadDir("testdata/formats")
	if err != nil {
		t.Fatal(err)
	}
	levels := []isoscope.Level{isoscope.ReadCommitted, isoscope.CursorStability, isoscope.SnapshotIsolation, isoscope.Serializable}
	for _, e := range entries {
		read, err := isoscope.OpenHistory(context.Background(), filepath.Join("testdata/formats", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var txns []isoscope.Txn
		for i := range read.Len() {
			if x := read.Txn(i); len(x.Ops) > 0 || x.Status == isoscope.Aborted {
				txns = append(txns, x)
			}
		}
		built, err := isoscope.NewHistory(txns, read.Initial()...)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		if bs, rs := built.Stats(), read.Stats(); bs.Operations != rs.Operations || bs.Keys != rs.Keys {
			t.Fatalf("%s: built %+v, read %+v", e.Name(), bs, rs)
		}
		for _, l := range levels {
			a, errA := isoscope.Check(context.Background(), read, isoscope.Options{Level: l})
			b, errB := isoscope.Check(context.Background(), built, isoscope.Options{Level: l})
			if (errA == nil) != (errB == nil) {
				t.Fatalf("%s at %s: read %v, built %v", e.Name(), l, errA, errB)
			}
			if errA != nil {
				continue
			}
			if a.Outcome != b.Outcome || a.Checker != b.Checker || !reflect.DeepEqual(a.Anomalies, b.Anomalies) {
				t.Errorf("%s at %s: read %s by %s %+v\nbuilt %s by %s %+v", e.Name(), l, a.Outcome, a.Checker, a.Anomalies, b.Outcome, b.Checker, b.Anomalies)
			}
		}
	}
}

// TestTxnLeavesOutScans: Txn of a transaction with a range scan gives
// its other operations (it indexed the keys with the scan's missing key
// before).
func TestTxnLeavesOutScans(t *testing.T) {
	h, err := isoscope.ReadHistory(strings.NewReader(`{"id":1,"session":0,"ops":[["w",1,5],["scan",0,9,[[1,5]]],["r",1,5]]}`+"\n"), "scan.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if x := h.Txn(0); len(x.Ops) != 2 || x.Ops[0].Kind != isoscope.Write || x.Ops[1].Kind != isoscope.Read {
		t.Errorf("Txn(0) = %+v, want the write and the read", x)
	}
}

// TestLevels: every level parses from its name and short form, and
// implication runs downwards.
func TestLevels(t *testing.T) {
	for l := isoscope.ReadUncommitted; l <= isoscope.PlainSerializable; l++ {
		for _, name := range []string{l.String(), l.Short()} {
			if got, err := isoscope.ParseLevel(name); err != nil || got != l {
				t.Errorf("ParseLevel(%q) = %v, %v; want %v", name, got, err, l)
			}
		}
		if !isoscope.StrictSerializable.Implies(l) && l != isoscope.PLFCV {
			t.Errorf("strict serializability does not imply %s", l)
		}
	}
	if _, err := isoscope.Check(context.Background(), &isoscope.History{}, isoscope.Options{Level: 42}); err == nil {
		t.Error("level 42 accepted")
	}
}

// TestReadHistoryFormats: ReadHistory reads every stream format check
// reads, detected from its first bytes, gzip-compressed or not.
func TestReadHistoryFormats(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("w(1,5,1,10)\nr(1,5,2,20)\n"))
	zw.Close()
	for _, tc := range []struct {
		name, text string
		txns       int
	}{
		{"h.jsonl", `{"id":1,"session":0,"ops":[["w","x",1]]}` + "\n", 1},
		{"h.txt.gz", gz.String(), 2},
		{"h.edn", "{:type :invoke, :process 0, :f :txn, :value [[:append 1 1]]}\n{:type :ok, :process 0, :f :txn, :value [[:append 1 1]]}\n", 1},
	} {
		h, err := isoscope.ReadHistory(strings.NewReader(tc.text), tc.name)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if st := h.Stats(); st.Transactions != tc.txns {
			t.Errorf("%s: %d transactions, want %d", tc.name, st.Transactions, tc.txns)
		}
	}
	if _, err := isoscope.ReadHistory(strings.NewReader("hello"), "h.txt"); err == nil || !strings.Contains(err.Error(), "h.txt: cannot tell the history format") {
		t.Errorf("garbage: %v", err)
	}
}
