package htmlreport

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/report"
)

// WriteDOT writes the cycles of the sections' anomalies as one Graphviz
// digraph with a cluster per anomaly ("dot -Tsvg cycles.dot -o
// cycles.svg" draws them side by side). It writes the anomalies the page
// shows: the first o.PerKind anomalies of each kind that are cycles, with a comment
// saying how many more there are. Edges carry the colours and dash styles
// of the page, and their evidence as a comment and a tooltip.
func WriteDOT(w io.Writer, secs []Section, o Options) error {
	o = o.withDefaults()
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "// isoscope: dependency cycles, one cluster per anomaly.\n// Render with: dot -Tsvg FILE -o cycles.svg\n")
	fmt.Fprintf(bw, "digraph isoscope {\n  graph [fontname=\"Helvetica\", labelloc=t, labeljust=l];\n  node [shape=ellipse, fontname=\"Helvetica\", style=filled, fillcolor=white];\n  edge [fontname=\"Helvetica\", fontsize=11];\n")
	n := 0
	for f := range secs {
		s := &secs[f]
		h := s.History
		for _, g := range report.Group(s.Anomalies) {
			shown := 0
			for _, i := range g.Indices {
				a := &s.Anomalies[i]
				if !a.IsCycle() {
					continue
				}
				if shown == o.PerKind {
					fmt.Fprintf(bw, "  // … and more %s cycles, not drawn\n", g.Kind)
					break
				}
				shown++
				p := "a" + strconv.Itoa(n) + "_"
				n++
				label := g.Kind.String() + " #" + strconv.Itoa(shown)
				if ph := a.Phenomenon.String(); ph != "" {
					label += " [" + ph + "]"
				}
				if len(secs) > 1 {
					label = s.File + ": " + label
				}
				fmt.Fprintf(bw, "  subgraph cluster_%s {\n    label=%s;\n", strings.TrimSuffix(p, "_"), dotString(label))
				dotCycle(bw, h, a, p, "    ", s.evidenceOf(i))
				fmt.Fprintf(bw, "  }\n")
			}
		}
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// dotString quotes s as a DOT string.
func dotString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
