package htmlreport

import (
	"html/template"
	"math"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// txnLabel names a transaction as the text report does: "T17" for an
// integer id, the id itself otherwise, "init" for the initial state.
func txnLabel(h *history.History, t history.TxnID) string {
	if t == history.Init {
		return "init"
	}
	if int(t) < len(h.Txns) && t >= 0 && h.Txns[t].ID.Kind == history.Int {
		return "T" + h.TxnName(t)
	}
	return h.TxnName(t)
}

// edgeLabel is an edge's caption: its kind and, when it has one, its key.
func edgeLabel(h *history.History, s anomaly.Step) string {
	if s.Key == history.NoKey {
		return s.Dep.String()
	}
	return s.Dep.String() + "(" + clip(h.KeyName(s.Key), 16) + ")"
}

type point struct{ x, y float64 }

func (p point) add(q point) point   { return point{p.x + q.x, p.y + q.y} }
func (p point) sub(q point) point   { return point{p.x - q.x, p.y - q.y} }
func (p point) mul(f float64) point { return point{p.x * f, p.y * f} }
func (p point) len() float64        { return math.Hypot(p.x, p.y) }
func (p point) unit() point         { l := p.len(); return point{p.x / l, p.y / l} }

// bbox grows to hold points and labelled boxes.
type bbox struct{ x0, y0, x1, y1 float64 }

func (b *bbox) hold(x0, y0, x1, y1 float64) {
	b.x0, b.y0 = math.Min(b.x0, x0), math.Min(b.y0, y0)
	b.x1, b.y1 = math.Max(b.x1, x1), math.Max(b.y1, y1)
}

const (
	nodeFont  = 14.0
	labelFont = 12.0
	nodeH     = 30.0
)

// ringNode is one transaction of the ring: its centre and its ellipse's
// radii.
type ringNode struct {
	t      history.TxnID
	label  string
	c      point
	rx, ry float64
}

// boundary returns where the ray from the node's centre towards p leaves
// its ellipse.
func (n *ringNode) boundary(p point) point {
	d := p.sub(n.c)
	if d.len() == 0 {
		return n.c
	}
	k := 1 / math.Sqrt((d.x/n.rx)*(d.x/n.rx)+(d.y/n.ry)*(d.y/n.ry))
	return n.c.add(d.mul(k))
}

// CycleSVG draws a dependency cycle as a ring: one node per transaction,
// clockwise from the top in the cycle's order, and one curved arrow per
// edge, coloured and dashed by its kind and labelled with its kind and
// key. link returns the fragment a node links to ("" for none).
func CycleSVG(h *history.History, cycle []anomaly.Step, link func(history.TxnID) string) template.HTML {
	n := len(cycle)
	if n == 0 {
		return ""
	}
	nodes := make([]ringNode, n)
	maxW := 0.0
	for i, s := range cycle {
		l := clip(txnLabel(h, s.From), 14)
		w := math.Max(nodeH+8, textWidth(l, nodeFont)+22)
		nodes[i] = ringNode{t: s.From, label: l, rx: w / 2, ry: nodeH / 2}
		maxW = math.Max(maxW, w)
	}
	// The ring's radius: room for the nodes around it, and for n = 2 a
	// vertical gap that leaves the arcs and their labels space.
	r := math.Max(78, float64(n)*(maxW+40)/(2*math.Pi))
	for i := range nodes {
		a := -math.Pi/2 + 2*math.Pi*float64(i)/float64(n)
		nodes[i].c = point{r * math.Cos(a), r * math.Sin(a)}
	}
	box := bbox{-r, -r, r, r}
	var edges, labels svgBuf
	for i, s := range cycle {
		from, to := &nodes[i], &nodes[(i+1)%n]
		st := styleOf(s.Dep)
		lbl := edgeLabel(h, s)
		var path string
		var tip, dir, mid point
		if n == 1 {
			// A self-loop above the node.
			p0 := from.c.add(point{-from.rx * 0.5, -from.ry * 0.8})
			p1 := from.c.add(point{from.rx * 0.5, -from.ry * 0.8})
			c0, c1 := p0.add(point{-30, -60}), p1.add(point{30, -60})
			path = "M" + num(p0.x) + " " + num(p0.y) + " C" + num(c0.x) + " " + num(c0.y) + " " + num(c1.x) + " " + num(c1.y) + " " + num(p1.x) + " " + num(p1.y)
			tip, dir = p1, p1.sub(c1).unit()
			mid = point{from.c.x, from.c.y - from.ry - 52}
		} else {
			d := to.c.sub(from.c)
			normal := point{d.y, -d.x}.unit() // outward for a clockwise ring
			bulge := 0.2
			if n == 2 {
				bulge = 0.42
			}
			ctrl := from.c.add(d.mul(0.5)).add(normal.mul(bulge * d.len()))
			p0, p1 := from.boundary(ctrl), to.boundary(ctrl)
			tip, dir = p1, p1.sub(ctrl).unit()
			end := tip.sub(dir.mul(9)) // the line stops where the arrowhead starts
			path = "M" + num(p0.x) + " " + num(p0.y) + " Q" + num(ctrl.x) + " " + num(ctrl.y) + " " + num(end.x) + " " + num(end.y)
			mid = p0.mul(0.25).add(ctrl.mul(0.5)).add(tip.mul(0.25)).add(normal.mul(12))
		}
		edges.s(`<g class="edge dep-`, s.Dep.String(), `"><title>`, esc(txnLabel(h, s.From)+" --"+lbl+"--> "+txnLabel(h, s.To)), `</title>`)
		edges.s(`<path d="`, path, `" fill="none" stroke="`, st.Color, `" stroke-width="2.5"`)
		if st.Dash != "" {
			edges.s(` stroke-dasharray="`, st.Dash, `"`)
		}
		edges.s(`/>`)
		side := point{-dir.y, dir.x}
		b0, b1 := tip.sub(dir.mul(11)).add(side.mul(5.5)), tip.sub(dir.mul(11)).sub(side.mul(5.5))
		edges.s(`<path d="M`, num(tip.x), ` `, num(tip.y), ` L`, num(b0.x), ` `, num(b0.y), ` L`, num(b1.x), ` `, num(b1.y), ` Z" fill="`, st.Color, `"/></g>`)
		tw := textWidth(lbl, labelFont) + 8
		box.hold(mid.x-tw/2, mid.y-10, mid.x+tw/2, mid.y+10)
		labels.s(`<g class="edge-label dep-`, s.Dep.String(), `"><rect x="`, num(mid.x-tw/2), `" y="`, num(mid.y-9), `" width="`, num(tw), `" height="18" rx="4" fill="#fff" stroke="`, st.Color, `" stroke-width="1"/>`)
		labels.s(`<text x="`, num(mid.x), `" y="`, num(mid.y+4), `" text-anchor="middle" font-size="`, num(labelFont), `" fill="`, st.Color, `">`, esc(lbl), `</text></g>`)
	}
	var nb svgBuf
	for i := range nodes {
		nd := &nodes[i]
		box.hold(nd.c.x-nd.rx, nd.c.y-nd.ry, nd.c.x+nd.rx, nd.c.y+nd.ry)
		href := ""
		if link != nil {
			href = link(nd.t)
		}
		cls := "node"
		if nd.t == history.Init {
			cls = "node init"
		}
		if href != "" {
			nb.s(`<a href="`, esc(href), `">`)
		}
		nb.s(`<g class="`, cls, `"><title>`, esc(txnLabel(h, nd.t)), `</title><ellipse cx="`, num(nd.c.x), `" cy="`, num(nd.c.y), `" rx="`, num(nd.rx), `" ry="`, num(nd.ry), `"/>`)
		nb.s(`<text x="`, num(nd.c.x), `" y="`, num(nd.c.y+5), `" text-anchor="middle" font-size="`, num(nodeFont), `">`, esc(nd.label), `</text></g>`)
		if href != "" {
			nb.s(`</a>`)
		}
	}
	const pad = 8
	x0, y0 := box.x0-pad, box.y0-pad
	w, hgt := box.x1-box.x0+2*pad, box.y1-box.y0+2*pad
	var b svgBuf
	b.s(`<svg class="cycle" role="img" aria-label="`, esc(cycleAria(h, cycle)), `" xmlns="http://www.w3.org/2000/svg" width="`, num(w), `" height="`, num(hgt), `" viewBox="`, num(x0), ` `, num(y0), ` `, num(w), ` `, num(hgt), `">`)
	b.s(edges.String(), nb.String(), labels.String(), `</svg>`)
	return template.HTML(b.String())
}

func cycleAria(h *history.History, cycle []anomaly.Step) string {
	s := "cycle " + txnLabel(h, cycle[0].From)
	for _, st := range cycle {
		s += " " + edgeLabel(h, st) + " " + txnLabel(h, st.To)
	}
	return s
}
