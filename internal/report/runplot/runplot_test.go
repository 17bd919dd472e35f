package runplot

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/txnend"
)

// reasons are the runner's abort classes, as the CLI passes them.
var reasons = []string{"serialization failure", "deadlock", "lock timeout", "connection lost", "interrupted", "other"}

// handBuilt is a two-second run: 20 transactions every 10 ms, 2 ms each
// but 30 ms from 1.0 s to 1.2 s (a stall); every 10th aborted by a
// serialization failure, every 37th by a deadlock, and two whose commit
// was cut off by a lost connection.
func handBuilt() *Run {
	r := &Run{Label: "mt on PostgreSQL 15 at serializable, 8 sessions", Elapsed: 2 * time.Second, Reasons: reasons}
	for i := range 4000 {
		begin := time.Duration(i) * 500 * time.Microsecond
		lat := 2*time.Millisecond + time.Duration(i%50)*100*time.Microsecond
		if begin >= time.Second && begin < 1200*time.Millisecond {
			lat = 30 * time.Millisecond
		}
		t := Txn{Begin: begin, End: begin + lat, Status: history.Committed}
		switch {
		case i%37 == 0:
			t.Status, t.Reason = history.Aborted, "deadlock"
		case i%10 == 0:
			t.Status, t.Reason = history.Aborted, "serialization failure"
		}
		r.Txns = append(r.Txns, t)
	}
	r.Txns = append(r.Txns, Txn{Begin: 1900 * time.Millisecond, End: 1990 * time.Millisecond, Status: history.Unknown, Reason: "connection lost"},
		Txn{Begin: 1910 * time.Millisecond, End: 1995 * time.Millisecond, Status: history.Unknown, Reason: "connection lost"})
	return r
}

// svgDoc is what the structure test looks at in an SVG document: that it
// parses, its size, its texts, and the colours its paths are stroked and
// filled with.
type svgDoc struct {
	width, height string
	texts         []string
	strokes       map[string]int
	fills         map[string]int
}

func parseSVG(t *testing.T, b []byte) svgDoc {
	t.Helper()
	d := svgDoc{strokes: map[string]int{}, fills: map[string]int{}}
	dec := xml.NewDecoder(bytes.NewReader(b))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := func(name string) string {
				for _, a := range e.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			switch e.Name.Local {
			case "svg":
				d.width, d.height = attr("width"), attr("height")
			case "text":
				inText = true
			case "path":
				for _, decl := range strings.Split(attr("style"), ";") {
					k, v, _ := strings.Cut(decl, ":")
					switch strings.TrimSpace(k) {
					case "stroke":
						d.strokes[strings.ToLower(v)]++
					case "fill":
						d.fills[strings.ToLower(v)]++
					}
				}
			}
		case xml.CharData:
			if inText {
				d.texts = append(d.texts, strings.TrimSpace(string(e)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	return d
}

// TestPlotStructure draws the hand-built run and checks each SVG for its
// title, axes, series and bars, not for bytes that change with the
// plotting library's version.
func TestPlotStructure(t *testing.T) {
	figs, err := Draw(handBuilt())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{Throughput, Latency, Aborts}) {
		t.Fatalf("figures %v", names)
	}
	for i, tc := range []struct {
		texts   []string
		strokes []string // colours of lines: one per series
		fills   []string // colours of bars
	}{
		{
			texts:   []string{"Transactions per second", "mt on PostgreSQL 15 at serializable, 8 sessions", "seconds since the start of the run", "transactions per second", "committed", "aborted", "unknown", "0.0", "1.0", "2.0", "0", "1,000", "3,000"},
			strokes: []string{"#1a7f37", "#cf222e", "#8c959f"},
		},
		{
			texts:   []string{"Latency of committed transactions", "latency, ms (log scale)", "seconds since the start of the run", "p50", "p95", "p99", "2", "5", "10", "100"},
			strokes: []string{"#0072b2", "#e69f00", "#d55e00"},
		},
		{
			texts: append([]string{"Why transactions did not commit", "transactions", "aborted", "unknown outcome",
				"389", "109", "2 (2 unknown)", "0"}, reasons...),
			fills: []string{"#cf222e", "#8c959f"},
		},
	} {
		f := figs[i]
		t.Run(f.Name, func(t *testing.T) {
			d := parseSVG(t, f.SVG)
			if d.width != "576pt" || d.height != "259.2pt" {
				t.Errorf("size %s × %s", d.width, d.height)
			}
			for _, want := range tc.texts {
				if !slices.Contains(d.texts, want) {
					t.Errorf("no text %q in %q", want, d.texts)
				}
			}
			for _, c := range tc.strokes {
				if d.strokes[c] == 0 {
					t.Errorf("no line stroked %s: %v", c, d.strokes)
				}
			}
			for _, c := range tc.fills {
				if d.fills[c] == 0 {
					t.Errorf("no bar filled %s: %v", c, d.fills)
				}
			}
			if f.Caption == "" {
				t.Error("no caption")
			}
		})
	}
	if !strings.Contains(figs[0].Caption, "50 ms buckets") || !strings.Contains(figs[0].Caption, "3,502 committed, 498 aborted, 2 unknown in 2.01 s") {
		t.Errorf("throughput caption %q", figs[0].Caption)
	}
}

// TestPNG checks that every figure's PNG decodes, at the size the SVG
// has at 120 dpi, and that files are written under the figures' names.
func TestPNG(t *testing.T) {
	figs, err := Draw(handBuilt())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("ISOSCOPE_ARTIFACTS"); d != "" {
		dir = filepath.Join(d, "runplot")
	}
	files, err := WriteFiles(dir, figs)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("files %v", files)
	}
	for _, f := range figs {
		b, err := os.ReadFile(filepath.Join(dir, f.Name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s.png: %v", f.Name, err)
		}
		if got := img.Bounds(); got != image.Rect(0, 0, 960, 432) {
			t.Errorf("%s.png is %v", f.Name, got)
		}
		if svg, err := os.ReadFile(filepath.Join(dir, f.Name+".svg")); err != nil || !bytes.Equal(svg, f.SVG) {
			t.Errorf("%s.svg: %v", f.Name, err)
		}
	}
}

// TestEdgeCases draws runs the plots must survive: nothing at all, only
// aborts, one transaction, and a run much longer than its transactions.
func TestEdgeCases(t *testing.T) {
	for name, r := range map[string]*Run{
		"empty":       {},
		"only aborts": {Txns: []Txn{{Begin: 0, End: time.Millisecond, Status: history.Aborted, Reason: "deadlock"}}},
		"one":         {Txns: []Txn{{Begin: 0, End: 3 * time.Millisecond, Status: history.Committed}}},
		"long idle":   {Elapsed: time.Hour, Txns: []Txn{{Begin: time.Minute, End: time.Minute + time.Microsecond, Status: history.Committed}}},
		"unreasoned":  {Txns: []Txn{{End: time.Second, Status: history.Unknown}}},
	} {
		figs, err := Draw(r)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, f := range figs {
			parseSVG(t, f.SVG)
			if _, err := png.Decode(bytes.NewReader(f.PNG)); err != nil {
				t.Errorf("%s: %s.png: %v", name, f.Name, err)
			}
		}
	}
}

func TestBuckets(t *testing.T) {
	for _, tc := range []struct {
		elapsed, width time.Duration
	}{
		{0, time.Millisecond}, {60 * time.Millisecond, time.Millisecond}, {61 * time.Millisecond, 2 * time.Millisecond},
		{2 * time.Second, 50 * time.Millisecond}, {10 * time.Second, 200 * time.Millisecond}, {time.Hour, 100 * time.Second},
	} {
		if got := bucketWidth(tc.elapsed); got != tc.width {
			t.Errorf("bucketWidth(%v) = %v, want %v", tc.elapsed, got, tc.width)
		}
	}
	r := handBuilt()
	bs := r.buckets()
	if len(bs) != 40 || bs[0].width != 50*time.Millisecond {
		t.Fatalf("%d buckets of %v", len(bs), bs[0].width)
	}
	n := 0
	for i := range bs {
		n += bs[i].committed + bs[i].aborted + bs[i].unknown
	}
	if n != len(r.Txns) {
		t.Errorf("%d transactions in buckets, %d in the run", n, len(r.Txns))
	}
	// The stall: bucket 21 (1.05 s to 1.1 s) holds only 30 ms transactions.
	if b := &bs[21]; b.percentile(0.5) != 30*time.Millisecond || b.percentile(0.99) != 30*time.Millisecond {
		t.Errorf("stall bucket p50 %v p99 %v", b.percentile(0.5), b.percentile(0.99))
	}
	if b := &bs[5]; b.percentile(0.5) >= b.percentile(0.95) || b.percentile(0.95) > b.percentile(0.99) || b.percentile(1) != 6900*time.Microsecond {
		t.Errorf("bucket 5: p50 %v p95 %v p99 %v max %v", b.percentile(0.5), b.percentile(0.95), b.percentile(0.99), b.percentile(1))
	}
	rs := r.reasons()
	if len(rs) != 6 || rs[0] != (reasonCount{"serialization failure", 389, 0}) || rs[1] != (reasonCount{"deadlock", 109, 0}) || rs[3] != (reasonCount{"connection lost", 0, 2}) {
		t.Errorf("reasons %+v", rs)
	}
}

func TestTicks(t *testing.T) {
	labels := func(ts []plot.Tick) (out []string) {
		for _, t := range ts {
			if t.Label != "" {
				out = append(out, t.Label)
			}
		}
		return out
	}
	for _, tc := range []struct {
		ticker plot.Ticker
		lo, hi float64
		want   []string
	}{
		{linearTicks{}, 0, 19.5, []string{"0", "5", "10", "15"}},
		{linearTicks{}, 0, 31000, []string{"0", "10,000", "20,000", "30,000"}},
		{linearTicks{}, 0, 0.06, []string{"0.00", "0.02", "0.04", "0.06"}},
		{linearTicks{}, 1, 1, []string{"1"}},
		{logTicks{}, 2, 100, []string{"2", "5", "10", "20", "50", "100"}},
		{logTicks{}, 0.05, 2000, []string{"0.1", "1", "10", "100", "1000"}},
	} {
		if got := labels(tc.ticker.Ticks(tc.lo, tc.hi)); !slices.Equal(got, tc.want) {
			t.Errorf("%T [%g, %g]: %q, want %q", tc.ticker, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestFromOutcomes checks that a run's recorded outcomes reach the plots
// relative to the start of the run, each transaction that did not commit
// with its abort class as its reason, and every class among the reasons
// in the reports' order.
func TestFromOutcomes(t *testing.T) {
	const start = int64(1_700_000_000_000_000_000)
	ms := int64(time.Millisecond)
	outs := []txnend.Record{
		{Begin: start + 1*ms, End: start + 3*ms, Status: history.Committed, Abort: txnend.NotAborted},
		{Begin: start + 2*ms, End: start + 5*ms, Status: history.Aborted, Abort: txnend.Deadlock},
		{Begin: start + 4*ms, End: start + 9*ms, Status: history.Unknown, Abort: txnend.ConnectionLost},
		{Begin: start + 6*ms, End: start + 9*ms, Status: history.Aborted, Abort: txnend.NoAnswer},
	}
	r := FromOutcomes("label", start, 10*time.Millisecond, outs)
	if r.Label != "label" || r.Elapsed != 10*time.Millisecond || len(r.Txns) != len(outs) {
		t.Fatalf("run %+v", r)
	}
	if want := []string{"serialization failure", "deadlock", "lock timeout", "connection lost", "no answer", "interrupted", "other"}; !slices.Equal(r.Reasons, want) {
		t.Errorf("reasons %q, want %q", r.Reasons, want)
	}
	want := []Txn{
		{Begin: 1 * time.Millisecond, End: 3 * time.Millisecond, Status: history.Committed},
		{Begin: 2 * time.Millisecond, End: 5 * time.Millisecond, Status: history.Aborted, Reason: "deadlock"},
		{Begin: 4 * time.Millisecond, End: 9 * time.Millisecond, Status: history.Unknown, Reason: "connection lost"},
		{Begin: 6 * time.Millisecond, End: 9 * time.Millisecond, Status: history.Aborted, Reason: "no answer"},
	}
	if !slices.Equal(r.Txns, want) {
		t.Errorf("transactions %+v, want %+v", r.Txns, want)
	}
	if r := FromOutcomes("", start, 0, nil); len(r.Txns) != 0 || len(r.Reasons) != len(txnend.AbortClasses) {
		t.Errorf("no outcomes: %+v", r)
	}
}

// TestFaultWindows: a run's faults are shaded on the throughput and
// latency plots, one legend entry for all, and not on the abort bars; a
// run without faults has no shading.
func TestFaultWindows(t *testing.T) {
	r := handBuilt()
	r.AddFaults(1000, []history.Fault{{Kind: "partition", Node: "n2", Begin: 1000 + 5e8, End: 1000 + 9e8}, {Kind: "cut", Node: "n1", Begin: 1000 + 15e8, End: 1000 + 15e8}})
	if len(r.Faults) != 2 || r.Faults[0].Start != 5e8 || r.Faults[0].Label != "partition n2" {
		t.Fatalf("windows %+v", r.Faults)
	}
	figs, err := Draw(r)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Draw(handBuilt())
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range figs {
		d, p := parseSVG(t, f.SVG), parseSVG(t, plain[i].SVG)
		shaded := d.fills["#874d9f"]
		switch f.Name {
		case Throughput, Latency:
			// Two bands and the legend's swatch.
			if shaded != 3 || !slices.Contains(d.texts, "fault") {
				t.Errorf("%s: %d shaded areas, legend %v; want 3 and a fault entry", f.Name, shaded, slices.Contains(d.texts, "fault"))
			}
		default:
			if shaded != 0 {
				t.Errorf("%s: %d shaded areas, want none", f.Name, shaded)
			}
		}
		if p.fills["#874d9f"] != 0 {
			t.Errorf("%s without faults is shaded", f.Name)
		}
	}
}
