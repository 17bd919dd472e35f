package htmlreport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// roundTrip writes s's document as check --json does and reads it back
// against the same history.
func roundTrip(t *testing.T, s Section) Section {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(s.Doc); err != nil {
		t.Fatal(err)
	}
	docs, err := ReadDocuments(&b)
	if err != nil {
		t.Fatal(err)
	}
	r, err := FromDocument(s.File, s.History, docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFromDocument: a saved result maps back to the same transactions,
// keys, cycles and values, so that the page draws the same pictures.
func TestFromDocument(t *testing.T) {
	names, secs := allCases(t)
	for _, name := range names {
		s := secs[name]
		r := roundTrip(t, s)
		for i := range s.Anomalies {
			a, b := s.Anomalies[i], r.Anomalies[i]
			a.Ops = nil      // not in the JSON
			if a.IsCycle() { // the JSON has a cycle's keys on its edges only
				a.Key, a.Value = history.NoKey, history.Value{}
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: anomaly %d:\n got %+v\nwant %+v", name, i, b, a)
			}
			if a.IsCycle() && CycleSVG(s.History, a.Cycle, nil) != CycleSVG(r.History, b.Cycle, nil) {
				t.Errorf("%s: the cycle draws differently", name)
			}
		}
		if p := page(t, Options{}, r); !strings.Contains(p, `class="op hl `) {
			t.Errorf("%s: the re-rendered page highlights nothing", name)
		}
	}
}

func TestFromDocumentErrors(t *testing.T) {
	s := checkedSection(t, "init: x=0 | r x 0 w x 1 | r x 0 w x 2", level.Serializable)
	other := history.MustParse("init: x=0 | t7: r x 0 w x 1 | t8: r x 0 w x 2")
	if _, err := FromDocument("h", other, s.Doc); err == nil || !strings.Contains(err.Error(), "transaction 1 is not in the history") {
		t.Errorf("wrong history: %v", err)
	}
	for _, tc := range []struct{ in, err string }{
		{"", "empty"},
		{`{"level":"serializable"`, "unexpected EOF"},
		{`{"a":1}`, "not an isoscope result"},
		{`{"level":"serializable","outcome":"violation","anomalies":[{"kind":"nope","transactions":[]}]}`, "unknown kind"},
		{`{"level":"serializable","outcome":"violation","anomalies":[{"kind":"lost-update","transactions":[1.5]}]}`, "not an integer"},
	} {
		docs, err := ReadDocuments(strings.NewReader(tc.in))
		if err == nil {
			_, err = FromDocument("h", s.History, docs[0])
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}
