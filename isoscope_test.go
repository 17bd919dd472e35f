package isoscope_test

import (
	"bytes"
	"compress/gzip"
	"context"
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
		res, err := isoscope.Check(context.Background(), h, isoscope.Options{Level: "sser"})
		if err != nil {
			t.Fatalf("want a verdict, got %v", err)
		}
		says := res.Note
		if res.Outcome == "unknown" {
			says = res.Reason
		}
		if res.Level != "strict-serializable" || res.Outcome != tc.outcome || res.CheckedAt != "serializable" || !strings.Contains(says, tc.says) {
			t.Errorf("level %s outcome %s checked at %q, %q; want %s checked at serializable saying %q", res.Level, res.Outcome, res.CheckedAt, says, tc.outcome, tc.says)
		}
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
