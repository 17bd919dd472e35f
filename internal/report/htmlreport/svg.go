package htmlreport

import (
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/isoscope/isoscope/internal/anomaly"
)

// depStyle is how one kind of dependency is drawn: its colour and its
// dash pattern (anti-dependencies dashed, orders dotted), so that kinds
// differ by more than colour.
type depStyle struct {
	Color string
	Dash  string // stroke-dasharray, "" for solid
	Desc  string
}

// depStyles lists the dependency kinds in the order of anomaly.Dep. The
// colours are the Okabe–Ito palette, which stays distinct for readers with
// colour-vision deficiencies.
var depStyles = [...]depStyle{
	anomaly.WW:  {"#D55E00", "", "write–write: the target overwrote the source's version"},
	anomaly.WR:  {"#0072B2", "", "write–read: the target read the source's version"},
	anomaly.RW:  {"#E69F00", "7 4", "read–write (anti-dependency): the source read a version the target overwrote"},
	anomaly.SO:  {"#009E73", "2 4", "session order: the source ran earlier in the same session"},
	anomaly.RT:  {"#CC79A7", "2 4", "real time: the source ended before the target began"},
	anomaly.PWR: {"#56B4E9", "", "predicate write–read: a scan of the target saw the source's write"},
	anomaly.PRW: {"#8F6A2E", "7 4", "predicate anti-dependency: a scan of the source missed the target's write"},
}

// allDeps lists every dependency kind, in legend order.
func allDeps() []anomaly.Dep {
	out := make([]anomaly.Dep, len(depStyles))
	for i := range out {
		out[i] = anomaly.Dep(i)
	}
	return out
}

func styleOf(d anomaly.Dep) depStyle {
	if int(d) < len(depStyles) {
		return depStyles[d]
	}
	return depStyle{Color: "#555555"}
}

// svgBuf accumulates SVG markup. Text goes through esc; numbers through
// num, which keeps one decimal, so that output is stable and compact.
type svgBuf struct{ strings.Builder }

func (b *svgBuf) s(parts ...string) {
	for _, p := range parts {
		b.WriteString(p)
	}
}

// num formats a coordinate with at most one decimal.
func num(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	r := math.Round(f*10) / 10
	if r == math.Trunc(r) {
		return strconv.FormatInt(int64(r), 10)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

// esc escapes text for an SVG or HTML text node or attribute.
func esc(s string) string { return template.HTMLEscapeString(s) }

// clip shortens s to at most n characters, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// textWidth estimates the width of s in pixels at the given font size for
// the sans-serif fonts of the page (a rough average advance).
func textWidth(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * 0.6
}

// LegendSVG draws the dependency kinds' colours and line styles, one entry
// per kind, as an inline SVG.
func LegendSVG() template.HTML {
	var b svgBuf
	const step = 118.0
	deps := allDeps()
	w := step * float64(len(deps))
	b.s(`<svg class="legend" role="img" aria-label="dependency kinds" xmlns="http://www.w3.org/2000/svg" width="`, num(w), `" height="24" viewBox="0 0 `, num(w), ` 24">`)
	for i, d := range deps {
		st := styleOf(d)
		x := float64(i) * step
		b.s(`<g class="dep-`, d.String(), `"><title>`, esc(st.Desc), `</title>`)
		b.s(`<line x1="`, num(x+4), `" y1="12" x2="`, num(x+44), `" y2="12" stroke="`, st.Color, `" stroke-width="3"`)
		if st.Dash != "" {
			b.s(` stroke-dasharray="`, st.Dash, `"`)
		}
		b.s(`/>`)
		b.s(`<path d="M`, num(x+52), ` 12 L`, num(x+42), ` 7 L`, num(x+42), ` 17 Z" fill="`, st.Color, `"/>`)
		b.s(`<text x="`, num(x+58), `" y="16" font-size="13">`, d.String(), `</text></g>`)
	}
	b.s(`</svg>`)
	return template.HTML(b.String())
}
