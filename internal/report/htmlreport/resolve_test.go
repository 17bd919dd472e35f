package htmlreport

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/report"
)

// reread writes s's document as check --json does (drop, when set, edits
// the JSON first), reads it back, resolves it against the same history
// and makes its section again.
func reread(t *testing.T, s Section, drop *regexp.Regexp) Section {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(s.Doc); err != nil {
		t.Fatal(err)
	}
	raw := b.Bytes()
	if drop != nil {
		raw = drop.ReplaceAll(raw, nil)
	}
	docs, err := report.ReadDocuments(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c, err := report.Resolve(s.File, s.History, docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return FromChecked(c)
}

// TestRerenderedPageSame: a saved result, resolved against its history,
// draws the page and the DOT file of the check that wrote it, byte for
// byte: every kind, the operations at issue of non-cycle anomalies
// included.
func TestRerenderedPageSame(t *testing.T) {
	names, secs := allCases(t)
	for _, name := range names {
		s := secs[name]
		r := reread(t, s, nil)
		if want, got := page(t, Options{}, s), page(t, Options{}, r); got != want {
			t.Errorf("%s: the re-rendered page differs:\n%s", name, golden.FirstDiff(want, got))
		}
		var want, got bytes.Buffer
		if err := WriteDOT(&want, []Section{s}, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := WriteDOT(&got, []Section{r}, Options{}); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: the re-rendered DOT differs", name)
		}
	}
}

// TestRerenderedOldResult: a result written before findings carried
// their operations still renders, and highlights what the anomalies'
// edges (or, for the non-cycle ones, their explanations) still name.
func TestRerenderedOldResult(t *testing.T) {
	noOps := regexp.MustCompile(`,"ops":\[[^\]]*\]`)
	names, secs := allCases(t)
	for _, name := range names {
		s := secs[name]
		r := reread(t, s, noOps)
		for i := range r.Anomalies {
			if len(r.Anomalies[i].Ops) > 0 {
				t.Errorf("%s: anomaly %d has operations", name, i)
			}
		}
		p := page(t, Options{}, r)
		if !strings.Contains(p, `<li class="anomaly`) {
			t.Errorf("%s: the page of an old result shows no anomaly", name)
		}
	}
}
