package htmlreport

import (
	"html/template"
	"slices"
	"strconv"
	"time"

	"github.com/isoscope/isoscope/internal/history"
)

// Timeline geometry, in pixels.
const (
	laneLabelW = 128.0
	laneH      = 34.0
	barY       = 14.0 // the bar's offset in its lane; names of marked bars go above it
	barH       = 16.0
	tlTarget   = 960.0 // the drawing width aimed at
	slotMin    = 2.5
	slotMax    = 40.0
)

// timelineMarks says which bars to highlight: each marked transaction and
// the fragment its bar links to (its anomaly), and the id its bar carries;
// and which lanes to draw first.
type timelineMarks struct {
	first []int32
	href  map[history.TxnID]string
	barID func(history.TxnID) string
}

// timelineSVG draws transactions on lanes, one per session, as bars from
// begin to end. When every transaction drawn has instants, the x axis is
// the order of their instants (each distinct instant one step, so that
// "ended before began" reads off the picture whatever the durations);
// otherwise it is file order. Bars are coloured by status; marked ones are
// outlined, named and link to their anomaly. It reports whether the axis
// is time.
func timelineSVG(h *history.History, txns []history.TxnID, m timelineMarks) (template.HTML, bool) {
	timed := len(txns) > 0
	for _, t := range txns {
		timed = timed && h.Txns[t].HasTime
	}
	// Slots: distinct instants, or one per transaction in file order.
	type span struct{ lo, hi int }
	spans := make([]span, len(txns))
	var slots int
	var inst []int64
	if timed {
		for _, t := range txns {
			tx := &h.Txns[t]
			inst = append(inst, tx.Begin, tx.End)
		}
		slices.Sort(inst)
		inst = slices.Compact(inst)
		idx := func(v int64) int { i, _ := slices.BinarySearch(inst, v); return i }
		for i, t := range txns {
			tx := &h.Txns[t]
			lo, hi := idx(tx.Begin), idx(tx.End)
			if hi < lo {
				lo, hi = hi, lo
			}
			spans[i] = span{lo, hi}
		}
		slots = len(inst)
	} else {
		for i := range txns {
			spans[i] = span{i, i}
		}
		slots = len(txns)
	}
	slot := min(slotMax, max(slotMin, tlTarget/float64(max(slots, 1))))
	// Lanes: the sessions drawn, those of m.first first, the others in
	// order.
	var lanes []int32
	lane := map[int32]int{}
	for _, t := range txns {
		s := h.Txns[t].Session
		if _, ok := lane[s]; !ok {
			lane[s] = 0
			if !slices.Contains(m.first, s) {
				lanes = append(lanes, s)
			}
		}
	}
	slices.SortFunc(lanes, func(a, b int32) int { return history.Compare(h.Sessions[a], h.Sessions[b]) })
	var firsts []int32
	for _, s := range m.first {
		if _, ok := lane[s]; ok {
			firsts = append(firsts, s)
		}
	}
	lanes = append(firsts, lanes...)
	for i, s := range lanes {
		lane[s] = i
	}
	w := laneLabelW + float64(slots)*slot + 8
	ht := float64(len(lanes))*laneH + 4
	var b svgBuf
	b.s(`<svg class="timeline" role="img" aria-label="timeline of `, strconv.Itoa(len(txns)), ` transactions in `, strconv.Itoa(len(lanes)), ` sessions" xmlns="http://www.w3.org/2000/svg" width="`, num(w), `" height="`, num(ht), `" viewBox="0 0 `, num(w), ` `, num(ht), `">`)
	for i, s := range lanes {
		y := float64(i) * laneH
		if i%2 == 1 {
			b.s(`<rect class="lane-bg" x="0" y="`, num(y), `" width="`, num(w), `" height="`, num(laneH), `"/>`)
		}
		lbl := "session " + clip(sessionName(h, s), 14)
		b.s(`<text class="lane" x="6" y="`, num(y+barY+barH-4), `" font-size="12">`, esc(lbl), `</text>`)
	}
	if timed {
		faultBands(&b, h, inst, slot, ht)
	}
	var marked svgBuf
	for i, t := range txns {
		tx := &h.Txns[t]
		x0 := laneLabelW + float64(spans[i].lo)*slot + slot*0.12
		x1 := laneLabelW + float64(spans[i].hi)*slot + slot*0.88
		y := float64(lane[tx.Session])*laneH + barY
		name := txnLabel(h, t)
		tip := name + " · " + tx.Status.String() + " · " + sessionName(h, tx.Session)
		if tx.HasTime {
			tip += " · " + instants(tx)
		}
		href, hl := m.href[t]
		out := &b
		if hl {
			out = &marked
			out.s(`<a href="`, esc(href), `">`)
		}
		out.s(`<rect class="bar `, tx.Status.String())
		if hl {
			out.s(` hl" id="`, esc(m.barID(t)))
		}
		out.s(`" x="`, num(x0), `" y="`, num(y), `" width="`, num(x1-x0), `" height="`, num(barH), `" rx="3"><title>`, esc(tip), `</title></rect>`)
		switch {
		case hl:
			out.s(`<text class="bar-name hl" x="`, num(x0), `" y="`, num(y-3), `" font-size="11">`, esc(clip(name, 16)), `</text></a>`)
		case textWidth(name, 10)+6 <= x1-x0:
			out.s(`<text class="bar-name" x="`, num((x0+x1)/2), `" y="`, num(y+barH-4), `" text-anchor="middle" font-size="10">`, esc(name), `</text>`)
		}
	}
	b.s(marked.String(), `</svg>`)
	return template.HTML(b.String()), timed
}

func sessionName(h *history.History, s int32) string {
	if s < 0 || int(s) >= len(h.Sessions) {
		return "?"
	}
	return h.Sessions[s].String()
}

// instants renders a transaction's begin and end: as small numbers when
// they are (hand-written histories), as UTC times when they look like Unix
// nanoseconds.
func instants(tx *history.Txn) string {
	const epochish = int64(1e17) // 1973 in nanoseconds
	if tx.Begin >= epochish && tx.End >= epochish {
		b := time.Unix(0, tx.Begin).UTC()
		d := time.Duration(tx.End - tx.Begin)
		return b.Format("2006-01-02 15:04:05.000000000Z") + " + " + d.String()
	}
	return "@" + strconv.FormatInt(tx.Begin, 10) + "–" + strconv.FormatInt(tx.End, 10)
}

// faultBands shades, across every lane, the stretch of the axis that each
// fault recorded in h covers (the slots of the instants inst within it;
// a fault between two instants, or an instant one, as a thin band at its
// place), with the fault in its tooltip. Faults wholly outside the
// instants drawn are left out.
func faultBands(b *svgBuf, h *history.History, inst []int64, slot, height float64) {
	if len(inst) == 0 {
		return
	}
	for _, f := range h.Faults {
		if f.End < inst[0] || f.Begin > inst[len(inst)-1] {
			continue
		}
		lo, _ := slices.BinarySearch(inst, f.Begin) // first instant at or after the beginning
		hi, found := slices.BinarySearch(inst, f.End)
		if !found {
			hi-- // last instant before the end
		}
		x0, x1 := laneLabelW+float64(lo)*slot, laneLabelW+float64(hi+1)*slot
		if hi < lo { // no instant inside: a thin band where it falls
			x0, x1 = laneLabelW+float64(lo)*slot-1.5, laneLabelW+float64(lo)*slot+1.5
		}
		tip := f.Label()
		if f.Info != "" {
			tip += ": " + f.Info
		}
		b.s(`<rect class="fault" x="`, num(x0), `" y="0" width="`, num(x1-x0), `" height="`, num(height), `" fill="#884ea0" fill-opacity="0.16"><title>`, esc(tip), `</title></rect>`)
	}
}
