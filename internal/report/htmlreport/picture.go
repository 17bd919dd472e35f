package htmlreport

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/evidence"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/report"
)

// Picture is one anomaly's picture, as files beside the page: Name.svg, a
// standalone SVG (its title, its explanation, its cycle drawn as a ring
// with each edge's evidence below, or for an anomaly that is not a cycle
// its transactions and the operations at issue), and Name.dot, the same
// as Graphviz DOT.
type Picture struct {
	Name     string
	SVG, DOT []byte
}

// PictureName names the picture of the n-th anomaly (from 1) of kind in
// section sec: "lost-update-1"; with several sections, prefixed by the
// section's number from 1, "h2-lost-update-1".
func PictureName(sec int, multi bool, kind anomaly.Kind, n int) string {
	name := kind.String() + "-" + strconv.Itoa(n)
	if multi {
		name = "h" + strconv.Itoa(sec+1) + "-" + name
	}
	return name
}

// Pictures returns the pictures of the anomalies the page shows (the
// first o.PerKind of each kind of each section), named as the page links
// them with o.Pictures.
func Pictures(secs []Section, o Options) []Picture {
	o = o.withDefaults()
	var out []Picture
	for si := range secs {
		s := &secs[si]
		for _, g := range report.Group(s.Anomalies) {
			for n, i := range g.Indices[:min(len(g.Indices), o.PerKind)] {
				a := &s.Anomalies[i]
				title := fmt.Sprintf("%s #%d", g.Kind, n+1)
				if ph := a.Phenomenon.String(); ph != "" {
					title += " [" + ph + "]"
				}
				if len(secs) > 1 {
					title = s.File + ": " + title
				}
				expl := ""
				if i < len(s.Doc.Anomalies) {
					expl = s.Doc.Anomalies[i].Explanation
				}
				es := s.evidenceOf(i)
				var dot bytes.Buffer
				writeAnomalyDOT(&dot, s.History, a, title, es)
				out = append(out, Picture{
					Name: PictureName(si, len(secs) > 1, g.Kind, n+1),
					SVG:  AnomalySVG(s.History, a, title, expl, es),
					DOT:  dot.Bytes(),
				})
			}
		}
	}
	return out
}

// pictureCSS is what a standalone picture needs of the page's styles.
const pictureCSS = `text{font-family:"Liberation Sans","DejaVu Sans",Arial,Helvetica,sans-serif;fill:#1f2328}
.node ellipse{fill:#fff;stroke:#24292f;stroke-width:1.6}.node.init ellipse{fill:#eaeef2;stroke-dasharray:4 3}
.node text{font-weight:600}.title{font-weight:700}.muted{fill:#59636e}.bad{fill:#a40e26;font-weight:700}
.box{fill:#fbfcfd;stroke:#d1d9e0;stroke-width:1.2}.ops text{font-family:"Liberation Mono","DejaVu Sans Mono",monospace}
.ops text.ts{fill:#59636e;font-size:12px}`

// wrap breaks s into lines of at most width characters, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// AnomalySVG draws anomaly a of h as a standalone SVG document: its
// title and explanation (each left out when empty), then, for a cycle,
// the ring (CycleSVG) and each edge's evidence (es), or else a box per
// transaction involved with its operations at issue, the offending one
// first.
func AnomalySVG(h *history.History, a *anomaly.Anomaly, title, explanation string, es []evidence.Edge) []byte {
	const width, lineH, pad = 96, 18.0, 16.0
	var text []string // lines under the picture
	var body svgBuf
	bodyW, bodyH := 0.0, 0.0
	if a.IsCycle() {
		ring := string(CycleSVG(h, a.Cycle, nil))
		bodyW, bodyH = svgSize(ring)
		body.s(strings.Replace(ring, "<svg ", `<svg x="`+num(pad)+`" y="{Y}" `, 1))
		if len(a.Core) > 0 {
			text = append(text, wrap(report.CoreNote(h, a), width)...)
		}
		if a.BestFound && len(es) > 0 {
			text = append(text, wrap(report.BestFoundNote(es), width)...)
		}
		for i := range es {
			mark := ""
			if a.BestFound && es[i].Basis == evidence.Chosen {
				mark = " [the solver's choice]"
			}
			text = append(text, wrap(report.Chain(h, []anomaly.Step{es[i].Step})+": "+report.EdgeText(h, &es[i])+mark, width)...)
		}
	} else {
		bodyW, bodyH = findingBoxes(&body, h, a, pad)
	}
	head := wrap(explanation, width)
	var b svgBuf
	w := math.Max(bodyW+2*pad, 0)
	for _, l := range append(append([]string{title}, head...), text...) {
		w = math.Max(w, textWidth(l, 13)+2*pad)
	}
	top := 0.0 // the title's height
	if title != "" {
		top = 22
	}
	hgt := pad + top + float64(len(head))*lineH + 8 + bodyH + 8 + float64(len(text))*lineH + pad
	b.s(`<?xml version="1.0" encoding="UTF-8"?>`+"\n", `<svg xmlns="http://www.w3.org/2000/svg" width="`, num(w), `" height="`, num(hgt), `" viewBox="0 0 `, num(w), ` `, num(hgt), `">`)
	b.s(`<title>`, esc(cmp.Or(title, a.Kind.String())), `</title><style>`, pictureCSS, `</style><rect width="100%" height="100%" fill="#fff"/>`)
	y := pad
	if title != "" {
		y += 18
		b.s(`<text class="title" x="`, num(pad), `" y="`, num(y), `" font-size="16">`, esc(title), `</text>`)
		y += 6
	}
	for _, l := range head {
		y += lineH
		b.s(`<text x="`, num(pad), `" y="`, num(y), `" font-size="13">`, esc(l), `</text>`)
	}
	y += 8
	b.s(strings.Replace(body.String(), "{Y}", num(y), -1))
	y += bodyH + 8
	for _, l := range text {
		y += lineH
		b.s(`<text class="muted" x="`, num(pad), `" y="`, num(y), `" font-size="12.5">`, esc(l), `</text>`)
	}
	b.s(`</svg>`, "\n")
	return []byte(b.String())
}

// svgSize reads the width and height attributes of an <svg> element.
func svgSize(svg string) (w, h float64) {
	attr := func(name string) float64 {
		i := strings.Index(svg, name+`="`)
		if i < 0 {
			return 0
		}
		rest := svg[i+len(name)+2:]
		f, _ := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64)
		return f
	}
	return attr("width"), attr("height")
}

// findingBoxes draws an anomaly that is not a cycle: a box per
// transaction it names, left to right, each with its database timestamps
// (start_ts and commit_ts, which the explanations of the timestamp
// checkers' findings cite) and its operations at issue (the offending one
// in red), at vertical position {Y} (replaced by the caller). It returns
// the drawing's size.
func findingBoxes(b *svgBuf, h *history.History, a *anomaly.Anomaly, pad float64) (float64, float64) {
	const lineH, boxPad, gap = 17.0, 10.0, 28.0
	txns := involved(h, a)
	x, maxH := pad, 0.0
	type line struct{ text, class string }
	type box struct {
		x, w  float64
		lines []line
	}
	var boxes []box
	for _, t := range txns {
		bx := box{x: x, lines: []line{{txnLabel(h, t), "title"}}}
		if ts := timestamps(&h.Txns[t]); ts != "" {
			bx.lines = append(bx.lines, line{ts, "ts"})
		}
		for i, r := range a.Ops {
			if r.Txn != t || !validRef(h, r) {
				continue
			}
			l := line{history.OpString(h, h.Txns[t].Ops[r.Op]), ""}
			if i == 0 {
				l = line{"▶ " + l.text, "bad"}
			}
			bx.lines = append(bx.lines, l)
		}
		if h.Txns[t].Status != history.Committed {
			bx.lines = append(bx.lines, line{"(" + h.Txns[t].Status.String() + ")", ""})
		}
		for _, l := range bx.lines {
			bx.w = math.Max(bx.w, textWidth(l.text, 13)+2*boxPad)
		}
		bx.w = math.Max(bx.w, 90)
		boxes = append(boxes, bx)
		x += bx.w + gap
		maxH = math.Max(maxH, float64(len(bx.lines))*lineH+2*boxPad)
	}
	for i, bx := range boxes {
		b.s(`<g class="ops" transform="translate(0 {Y})"><rect class="box" x="`, num(bx.x), `" y="0" width="`, num(bx.w), `" height="`, num(maxH), `" rx="6"/>`)
		for j, l := range bx.lines {
			cls := ""
			if l.class != "" {
				cls = ` class="` + l.class + `"`
			}
			b.s(`<text`, cls, ` x="`, num(bx.x+boxPad), `" y="`, num(boxPad+float64(j+1)*lineH-4), `" font-size="13">`, esc(l.text), `</text>`)
		}
		if i > 0 {
			// An arrow from this transaction to the first, which the
			// anomaly is about.
			y := maxH / 2
			x0, x1 := bx.x, boxes[0].x+boxes[0].w
			if i > 1 {
				y = maxH/2 + float64(i-1)*6
			}
			b.s(`<path d="M`, num(x0), ` `, num(y), ` L`, num(x1+9), ` `, num(y), `" stroke="#cf222e" stroke-width="2" fill="none"/>`)
			b.s(`<path d="M`, num(x1), ` `, num(y), ` L`, num(x1+10), ` `, num(y-5), ` L`, num(x1+10), ` `, num(y+5), ` Z" fill="#cf222e"/>`)
		}
		b.s(`</g>`)
	}
	return x - gap - pad, maxH
}

// timestamps renders a transaction's database timestamps as the
// explanations name them: "start_ts 30 commit_ts 40", either alone when
// the other is unknown, "" without either.
func timestamps(tx *history.Txn) string {
	var parts []string
	if tx.HasStartTS {
		parts = append(parts, "start_ts "+strconv.FormatUint(tx.StartTS, 10))
	}
	if tx.HasCommitTS {
		parts = append(parts, "commit_ts "+strconv.FormatUint(tx.CommitTS, 10))
	}
	return strings.Join(parts, " ")
}

// writeAnomalyDOT writes anomaly a of h as a Graphviz digraph: a cycle's
// edges coloured and styled as on the page, each with its evidence as a
// comment and tooltip; for another anomaly, its transactions, with an
// edge from each to the one it is about.
func writeAnomalyDOT(w io.Writer, h *history.History, a *anomaly.Anomaly, title string, es []evidence.Edge) {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "// isoscope: %s\n// Render with: dot -Tsvg FILE -o picture.svg\n", title)
	fmt.Fprintf(bw, "digraph isoscope {\n  graph [fontname=\"Helvetica\", labelloc=t, labeljust=l, label=%s];\n  node [shape=ellipse, fontname=\"Helvetica\", style=filled, fillcolor=white];\n  edge [fontname=\"Helvetica\", fontsize=11];\n", dotString(title))
	if a.IsCycle() {
		dotCycle(bw, h, a, "", "  ", es)
	} else {
		txns := involved(h, a)
		for _, t := range txns {
			fmt.Fprintf(bw, "  %s [label=%s];\n", dotString("t"+strconv.Itoa(int(t))), dotString(txnLabel(h, t)))
		}
		for _, t := range txns[min(1, len(txns)):] {
			fmt.Fprintf(bw, "  %s -> %s [label=%s, color=\"#cf222e\", fontcolor=\"#cf222e\"];\n",
				dotString("t"+strconv.Itoa(int(t))), dotString("t"+strconv.Itoa(int(txns[0]))), dotString(a.Kind.String()))
		}
	}
	fmt.Fprintf(bw, "}\n")
	bw.Flush()
}

// dotCycle writes a cycle's nodes and edges, node names prefixed by p,
// lines indented by in; with es, each edge carries its evidence.
func dotCycle(bw *bufio.Writer, h *history.History, a *anomaly.Anomaly, p, in string, es []evidence.Edge) {
	// Nodes are named by position, labelled by id: a string id "T1" and
	// the integer id 1 must not merge.
	node := func(t history.TxnID) string {
		if t == history.Init {
			return dotString(p + "init")
		}
		return dotString(p + "t" + strconv.Itoa(int(t)))
	}
	seen := map[history.TxnID]bool{}
	for _, st := range a.Cycle {
		for _, t := range []history.TxnID{st.From, st.To} {
			if !seen[t] {
				seen[t] = true
				fmt.Fprintf(bw, "%s%s [label=%s];\n", in, node(t), dotString(txnLabel(h, t)))
			}
		}
	}
	for i, st := range a.Cycle {
		ds := styleOf(st.Dep)
		style := "solid"
		switch st.Dep {
		case anomaly.RW, anomaly.PRW:
			style = "dashed"
		case anomaly.SO, anomaly.RT:
			style = "dotted"
		}
		extra := ""
		if i < len(es) {
			text := report.EdgeText(h, &es[i])
			fmt.Fprintf(bw, "%s// %s\n", in, strings.ReplaceAll(text, "\n", " "))
			extra = ", tooltip=" + dotString(text)
		}
		fmt.Fprintf(bw, "%s%s -> %s [label=%s, color=%s, fontcolor=%s, style=%s, penwidth=2%s];\n",
			in, node(st.From), node(st.To), dotString(edgeLabel(h, st)),
			dotString(ds.Color), dotString(ds.Color), style, extra)
	}
}
