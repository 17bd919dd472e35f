package htmlreport

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/workload"
)

// The report budget for a 1,000,000-transaction history with a handful of
// planted anomalies (its time, under 2 s, is a benchmark's).
const (
	largeTxns     = 1_000_000
	largeMaxBytes = 5 << 20
)

var large struct {
	once sync.Once
	c    *report.Checked
	err  error
}

// largeChecked generates and checks the large history once per test
// binary.
func largeChecked(t testing.TB) *report.Checked {
	t.Helper()
	large.once.Do(func() {
		h, _, err := gen.Generate(gen.Config{Txns: largeTxns, Sessions: 24, Keys: 10000, Dist: workload.Zipfian, Seed: 1, Plant: planted})
		if err != nil {
			large.err = err
			return
		}
		start := time.Now()
		res, err := check.Run(context.Background(), h, level.Get(level.StrictSerializable), check.Options{Holds: true})
		large.c, large.err = &report.Checked{File: "large.jsonl", History: h, Result: res, Elapsed: time.Since(start)}, err
	})
	if large.err != nil {
		t.Fatal(large.err)
	}
	return large.c
}

// renderAll does what check --report does besides writing files: the
// document, the page and the DOT file.
func renderAll(t testing.TB, c *report.Checked, page, dot *bytes.Buffer) {
	page.Reset()
	dot.Reset()
	secs := []Section{FromChecked(c)}
	if err := Write(page, secs, Options{ResultHref: "result.json", DotHref: "cycles.dot"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteDOT(dot, secs, Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestLargeReport: the report of a 1,000,000-transaction history with
// planted anomalies stays under 5 MB. Its time (target: under 2 s) is
// measured by BenchmarkLargeReport, not asserted here.
func TestLargeReport(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and checks 1,000,000 transactions")
	}
	c := largeChecked(t)
	var page, dot bytes.Buffer
	renderAll(t, c, &page, &dot)
	t.Logf("%d transactions, %d anomalies: page %d bytes, DOT %d bytes", len(c.History.Txns), len(c.Result.Anomalies), page.Len(), dot.Len())
	if page.Len() > largeMaxBytes {
		t.Errorf("page is %d bytes, over %d", page.Len(), largeMaxBytes)
	}
}

// BenchmarkLargeReport renders the report of a 1,000,000-transaction
// history with planted anomalies; it reports the page's size.
func BenchmarkLargeReport(b *testing.B) {
	c := largeChecked(b)
	var page, dot bytes.Buffer
	for b.Loop() {
		renderAll(b, c, &page, &dot)
	}
	b.ReportMetric(float64(page.Len()), "page-bytes")
	b.ReportMetric(float64(len(c.Result.Anomalies)), "anomalies")
}
