package htmlreport

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/golden"
)

// TestDOT: one digraph, a cluster per cycle anomaly, each edge labelled
// and coloured by kind; non-cycle anomalies are left out.
func TestDOT(t *testing.T) {
	names, secs := allCases(t)
	var all []Section
	cycles := 0
	for _, n := range names {
		s := secs[n]
		s.File = n
		all = append(all, s)
		for i := range s.Anomalies {
			if s.Anomalies[i].IsCycle() {
				cycles++
			}
		}
	}
	var b bytes.Buffer
	if err := WriteDOT(&b, all, Options{}); err != nil {
		t.Fatal(err)
	}
	dot := b.String()
	if strings.Count(dot, "digraph ") != 1 || !strings.HasSuffix(dot, "}\n") {
		t.Errorf("not one digraph:\n%s", dot)
	}
	if got := strings.Count(dot, "subgraph cluster_"); got != cycles {
		t.Errorf("%d clusters for %d cycles", got, cycles)
	}
	for _, d := range allDeps() {
		re := regexp.MustCompile(`-> "[^"]+" \[label="` + d.String() + `[("]` + `[^]]*color="` + styleOf(d).Color + `"`)
		if !re.MatchString(dot) {
			t.Errorf("no %s edge in its colour", d)
		}
	}
	if !strings.Contains(dot, `label="lost-update: lost-update #1 [G2-item]"`) {
		t.Error("clusters not labelled with file, kind and phenomenon")
	}
	if strings.Count(dot, "{") != strings.Count(dot, "}") {
		t.Error("unbalanced braces")
	}
	b.Reset()
	if err := WriteDOT(&b, []Section{secs["lost-update"]}, Options{}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/lost-update.dot", b.Bytes())
}
