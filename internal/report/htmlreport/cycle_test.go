package htmlreport

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// TestCycleSVG: every cycle of the catalogue draws as a ring with one
// node per transaction and one labelled, coloured edge per dependency;
// the pictures are kept as golden files.
func TestCycleSVG(t *testing.T) {
	names, secs := allCases(t)
	drawn := 0
	for _, name := range names {
		s := secs[name]
		for i := range s.Anomalies {
			a := &s.Anomalies[i]
			if !a.IsCycle() {
				continue
			}
			drawn++
			link := func(t history.TxnID) string { return "#t" + strconv.Itoa(int(t)) }
			svg := string(CycleSVG(s.History, a.Cycle, link))
			if !strings.HasPrefix(svg, `<svg class="cycle"`) || !strings.HasSuffix(svg, `</svg>`) {
				t.Fatalf("%s: not an svg: %.80s", name, svg)
			}
			if got := strings.Count(svg, `<g class="node`); got != len(a.Cycle) {
				t.Errorf("%s: %d nodes for a cycle of %d", name, got, len(a.Cycle))
			}
			if got := strings.Count(svg, `<g class="edge dep-`); got != len(a.Cycle) {
				t.Errorf("%s: %d edges for a cycle of %d", name, got, len(a.Cycle))
			}
			for _, st := range a.Cycle {
				lbl := edgeLabel(s.History, st)
				if !strings.Contains(svg, `fill="`+styleOf(st.Dep).Color+`">`+lbl+`</text>`) {
					t.Errorf("%s: label %s missing or not in its colour", name, lbl)
				}
				if st.From != history.Init && !strings.Contains(svg, `<a href="#t`+strconv.Itoa(int(st.From))+`">`) {
					t.Errorf("%s: node %s links nowhere", name, txnLabel(s.History, st.From))
				}
			}
			vb := regexp.MustCompile(`viewBox="([-0-9. ]+)"`).FindStringSubmatch(svg)
			if vb == nil || strings.Count(vb[1], " ") != 3 {
				t.Errorf("%s: bad viewBox", name)
			}
			if i == firstCycle(s) {
				golden.Check(t, "testdata/cycle/"+name+".svg", []byte(svg+"\n"))
			}
		}
	}
	if drawn < 12 {
		t.Errorf("only %d cycles drawn", drawn)
	}
}

func firstCycle(s Section) int {
	for i := range s.Anomalies {
		if s.Anomalies[i].IsCycle() {
			return i
		}
	}
	return -1
}

// TestLongCycleRing: long cycles still make a ring whose nodes do not
// overlap.
func TestLongCycleRing(t *testing.T) {
	var b strings.Builder
	b.WriteString("init: k0=0")
	n := 9
	for i := range n {
		b.WriteString(" k" + strconv.Itoa(i+1) + "=0")
	}
	// Ti reads k(i) from T(i-1) (T1 from Tn): a wr cycle of length n.
	for i := 1; i <= n; i++ {
		prev := i - 1
		if prev == 0 {
			prev = n
		}
		b.WriteString(" | w k" + strconv.Itoa(i) + " 1 r k" + strconv.Itoa(prev) + " 1")
	}
	s := checkedSection(t, b.String(), level.Serializable)
	i := firstCycle(s)
	if i < 0 {
		t.Fatalf("no cycle: %+v", s.Anomalies)
	}
	svg := string(CycleSVG(s.History, s.Anomalies[i].Cycle, nil))
	re := regexp.MustCompile(`<ellipse cx="([-0-9.]+)" cy="([-0-9.]+)" rx="([0-9.]+)"`)
	ms := re.FindAllStringSubmatch(svg, -1)
	if len(ms) != len(s.Anomalies[i].Cycle) {
		t.Fatalf("%d nodes", len(ms))
	}
	f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	for a := range ms {
		for c := a + 1; c < len(ms); c++ {
			dx, dy := math.Abs(f(ms[a][1])-f(ms[c][1])), math.Abs(f(ms[a][2])-f(ms[c][2]))
			if dx < f(ms[a][3])+f(ms[c][3]) && dy < nodeH {
				t.Errorf("nodes %d and %d overlap", a, c)
			}
		}
	}
}
