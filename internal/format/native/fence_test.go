package native

import (
	"bytes"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestFenceKey reads the header's fence_key in the history's kind of key
// and writes it back.
func TestFenceKey(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     history.Value
	}{
		{"string keys", lines(`{"format":"isoscope-history","version":1,"fence_key":"fence"}`, txn1), history.StringValue("fence")},
		{"integer keys, integer fence", lines(`{"format":"isoscope-history","version":1,"fence_key":-1}`, txnInt), history.IntValue(-1)},
		{"integer keys, string fence", lines(`{"format":"isoscope-history","version":1,"fence_key":"77"}`, txnInt), history.IntValue(77)},
		{"string keys, integer fence", lines(`{"format":"isoscope-history","version":1,"fence_key":77}`, txn1), history.StringValue("77")},
		{"no keys", lines(`{"format":"isoscope-history","version":1,"fence_key":"f"}`), history.StringValue("f")},
		{"null", lines(`{"format":"isoscope-history","version":1,"fence_key":null}`, txn1), history.NullValue},
		{"absent", lines(`{"format":"isoscope-history","version":1}`, txn1), history.NullValue},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := Read(strings.NewReader(c.in), "fence.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			if h.Header.FenceKey != c.want {
				t.Fatalf("fence key %#v, want %#v", h.Header.FenceKey, c.want)
			}
			var buf bytes.Buffer
			if err := Write(&buf, h); err != nil {
				t.Fatal(err)
			}
			if c.want.IsNull() == strings.Contains(buf.String(), `"fence_key"`) {
				t.Fatalf("written header %q, fence key %v", strings.SplitN(buf.String(), "\n", 2)[0], c.want)
			}
			back, err := Read(&buf, "back.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(h, back); d != "" {
				t.Fatal(d)
			}
		})
	}
}
