package runplot

import (
	"image/color"
	"math"
	"slices"
	"strconv"

	"golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/isoscope/isoscope/internal/textfmt"
)

// The colours: those of the HTML report for outcomes, Okabe and Ito's
// colour-blind-safe palette for percentiles.
var (
	colCommitted = color.RGBA{0x1a, 0x7f, 0x37, 0xff}
	colAborted   = color.RGBA{0xcf, 0x22, 0x2e, 0xff}
	colUnknown   = color.RGBA{0x8c, 0x95, 0x9f, 0xff}
	colP50       = color.RGBA{0x00, 0x72, 0xb2, 0xff}
	colP95       = color.RGBA{0xe6, 0x9f, 0x00, 0xff}
	colP99       = color.RGBA{0xd5, 0x5e, 0x00, 0xff}
	colGrid      = color.Gray{0xe4}
	// colFault shades a fault's window, translucent over the lines.
	colFault = color.NRGBA{0x88, 0x4e, 0xa0, 0x38}
)

// shadeFaults draws each fault of the run as a shaded band over the whole
// height of p (whose axes are set), at least a two-hundredth of the run
// wide so that an instant fault (a cut) shows, with one legend entry.
func shadeFaults(p *plot.Plot, r *Run) error {
	minWidth := p.X.Max / 200
	for i, w := range r.Faults {
		lo, hi := w.Start.Seconds(), w.End.Seconds()
		if hi-lo < minWidth {
			lo, hi = lo-minWidth/2, hi+minWidth/2
		}
		lo, hi = max(lo, p.X.Min), min(hi, p.X.Max)
		if hi <= lo {
			continue
		}
		poly, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: p.Y.Min}, {X: hi, Y: p.Y.Min}, {X: hi, Y: p.Y.Max}, {X: lo, Y: p.Y.Max}})
		if err != nil {
			return err
		}
		poly.Color = colFault
		poly.LineStyle.Width = 0
		p.Add(poly)
		if i == 0 {
			p.Legend.Add("fault", poly)
		}
	}
	return nil
}

// newPlot returns a plot with the report's look: sans-serif text, a bold
// title, a light grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xLabel, yLabel
	for _, s := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		s.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Weight = font.WeightBold
	p.Title.Padding = vg.Points(8)
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.Legend.TextStyle.Font.Size = vg.Points(11)
	p.Legend.Top = true
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	p.Add(g)
	return p
}

// series is one line of a plot over time, possibly broken where a bucket
// has no value.
type series struct {
	name  string
	color color.Color
	// value returns the bucket's value, and false where it has none.
	value func(*bucket) (float64, bool)
}

// addSeries draws each series as lines with a dot per bucket, broken at
// buckets without a value, with one legend entry per series. It returns
// the smallest and the largest value drawn (+Inf and 0 if none).
func addSeries(p *plot.Plot, bs []bucket, ss []series) (bottom, top float64, err error) {
	bottom = math.Inf(1)
	for _, s := range ss {
		var seg plotter.XYs
		named := false
		flush := func() error {
			if len(seg) == 0 {
				return nil
			}
			l, pts, err := plotter.NewLinePoints(seg)
			if err != nil {
				return err
			}
			l.Color, l.Width = s.color, vg.Points(1.5)
			pts.Color, pts.Shape, pts.Radius = s.color, draw.CircleGlyph{}, vg.Points(1.6)
			p.Add(l, pts)
			if !named {
				p.Legend.Add(s.name, l, pts)
				named = true
			}
			seg = nil
			return nil
		}
		for i := range bs {
			v, ok := s.value(&bs[i])
			if !ok {
				if err := flush(); err != nil {
					return 0, 0, err
				}
				continue
			}
			seg = append(seg, plotter.XY{X: bs[i].mid(), Y: v})
			bottom, top = min(bottom, v), max(top, v)
		}
		if err := flush(); err != nil {
			return 0, 0, err
		}
	}
	return bottom, top, nil
}

// timeAxis spans the run on the x axis.
func timeAxis(p *plot.Plot, r *Run) {
	p.X.Min, p.X.Max = 0, max(r.elapsed().Seconds(), 0.001)
	p.X.Tick.Marker = linearTicks{}
}

// throughputPlot draws committed, aborted and (when there are any)
// unknown transactions per second over time.
func throughputPlot(title string, r *Run, bs []bucket) (*plot.Plot, error) {
	p := newPlot(title, "seconds since the start of the run", "transactions per second")
	ss := []series{
		{"committed", colCommitted, func(b *bucket) (float64, bool) { return b.rate(b.committed), true }},
		{"aborted", colAborted, func(b *bucket) (float64, bool) { return b.rate(b.aborted), true }},
	}
	if slices.ContainsFunc(bs, func(b bucket) bool { return b.unknown > 0 }) {
		ss = append(ss, series{"unknown", colUnknown, func(b *bucket) (float64, bool) { return b.rate(b.unknown), true }})
	}
	_, top, err := addSeries(p, bs, ss)
	if err != nil {
		return nil, err
	}
	timeAxis(p, r)
	// Head room for the legend.
	p.Y.Min, p.Y.Max = 0, max(top*1.3, 1)
	p.Y.Tick.Marker = linearTicks{}
	return p, shadeFaults(p, r)
}

// latencyPlot draws the p50, p95 and p99 latencies of the committed
// transactions of each bucket, in milliseconds on a log scale.
func latencyPlot(title string, r *Run, bs []bucket) (*plot.Plot, error) {
	p := newPlot(title, "seconds since the start of the run", "latency, ms (log scale)")
	ms := func(q float64) func(*bucket) (float64, bool) {
		return func(b *bucket) (float64, bool) {
			if len(b.latencies) == 0 {
				return 0, false
			}
			return max(float64(b.percentile(q))/1e6, 1e-3), true
		}
	}
	bottom, top, err := addSeries(p, bs, []series{{"p99", colP99, ms(0.99)}, {"p95", colP95, ms(0.95)}, {"p50", colP50, ms(0.50)}})
	if err != nil {
		return nil, err
	}
	timeAxis(p, r)
	if top == 0 {
		p.Y.Label.Text = "latency, ms"
		p.Y.Min, p.Y.Max = 0, 1
		p.Title.Text += " (none committed)"
		return p, nil
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	// Head room for the legend: a factor of three above the slowest p99.
	p.Y.Min, p.Y.Max = niceFloor(bottom), niceCeil(top*3)
	return p, shadeFaults(p, r)
}

// abortPlot draws a horizontal bar per reason: the aborted transactions,
// and stacked on them those of unknown outcome, with the count at the
// end of each bar.
func abortPlot(title string, r *Run, rs []reasonCount) (*plot.Plot, error) {
	p := newPlot(title, "transactions", "")
	// The legend where the rarest reasons are.
	p.Legend.Top = false
	if len(rs) == 0 {
		rs = []reasonCount{{reason: "none"}}
	}
	// The first reason at the top: the y axis counts upwards.
	rs = slices.Clone(rs)
	slices.Reverse(rs)
	names := make([]string, len(rs))
	aborted, unknown := make(plotter.Values, len(rs)), make(plotter.Values, len(rs))
	labels := plotter.XYLabels{XYs: make(plotter.XYs, len(rs)), Labels: make([]string, len(rs))}
	top, anyUnknown := 0.0, false
	for i, c := range rs {
		names[i] = c.reason
		aborted[i], unknown[i] = float64(c.aborted), float64(c.unknown)
		total := c.aborted + c.unknown
		labels.XYs[i] = plotter.XY{X: float64(total), Y: float64(i)}
		labels.Labels[i] = textfmt.Thousands(total)
		if c.unknown > 0 {
			labels.Labels[i] += " (" + textfmt.Thousands(c.unknown) + " unknown)"
			anyUnknown = true
		}
		top = max(top, float64(total))
	}
	barWidth := vg.Points(min(22, 180/float64(len(rs))))
	ab, err := plotter.NewBarChart(aborted, barWidth)
	if err != nil {
		return nil, err
	}
	ab.Horizontal, ab.Color, ab.LineStyle.Width = true, colAborted, 0
	p.Add(ab)
	if anyUnknown {
		ub, err := plotter.NewBarChart(unknown, barWidth)
		if err != nil {
			return nil, err
		}
		ub.Horizontal, ub.Color, ub.LineStyle.Width = true, colUnknown, 0
		ub.StackOn(ab)
		p.Add(ub)
		p.Legend.Add("aborted", ab)
		p.Legend.Add("unknown outcome", ub)
	}
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Variant = "Sans"
		lb.TextStyle[i].YAlign = draw.YCenter
	}
	lb.Offset = vg.Point{X: vg.Points(4)}
	p.Add(lb)
	p.NominalY(names...)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	// Room for the counts at the end of the bars.
	p.X.Min, p.X.Max = 0, max(top*1.25, 1)
	p.X.Tick.Marker = linearTicks{}
	return p, nil
}

// niceFloor and niceCeil round a positive value down or up to 1, 2 or 5
// times a power of ten.
func niceFloor(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v {
			return m * e
		}
	}
	return e
}

func niceCeil(v float64) float64 {
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// logTicks labels 1, 2 and 5 times each power of ten on a log axis (only
// the powers of ten when it spans more than two of them), with minor
// ticks at the other multiples.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	dense := math.Log10(hi/lo) <= 2
	var ts []plot.Tick
	for k := int(math.Floor(math.Log10(lo))); math.Pow10(k) <= hi; k++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow10(k)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || dense && (m == 2 || m == 5) {
				t.Label = strconv.FormatFloat(v, 'f', max(0, -k), 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// linearTicks labels about five multiples of a 1-2-5 step, with a minor
// tick between each two; whole numbers get thousands separators.
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi <= lo {
		return []plot.Tick{{Value: lo, Label: tickLabel(lo, 0)}}
	}
	step := niceCeil((hi - lo) / 5)
	k := int(math.Floor(math.Log10(step)))
	var ts []plot.Tick
	for i := math.Ceil(lo / step * 2); i/2*step <= hi*(1+1e-9); i++ {
		t := plot.Tick{Value: i / 2 * step}
		if math.Mod(i, 2) == 0 {
			t.Label = tickLabel(t.Value, max(0, -k))
		}
		ts = append(ts, t)
	}
	return ts
}

// tickLabel renders v with decimals digits after the point, or with
// thousands separators when it is whole.
func tickLabel(v float64, decimals int) string {
	if decimals == 0 && math.Abs(v) < 1e15 {
		return textfmt.Thousands(int(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
