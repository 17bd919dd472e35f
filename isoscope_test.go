package isoscope_test

import (
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
