package htmlreport

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/report"
	"github.com/isoscope/isoscope/internal/workload"
)

// generated checks a generated history with planted anomalies.
func generated(t testing.TB, txns int, plant ...anomaly.Kind) Section {
	t.Helper()
	h, _, err := gen.Generate(gen.Config{Txns: txns, Sessions: 24, Keys: 10000, Dist: workload.Zipfian, Seed: 3, Plant: plant})
	if err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(context.Background(), h, level.Get(level.StrictSerializable), check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Anomalies) < len(plant) {
		t.Fatalf("%d anomalies for %d planted", len(res.Anomalies), len(plant))
	}
	return FromChecked(&report.Checked{File: "gen.jsonl", History: h, Result: res})
}

var planted = []anomaly.Kind{anomaly.LostUpdate, anomaly.WriteSkew, anomaly.LongFork, anomaly.RealTimeViolation, anomaly.AbortedRead}

// TestTimelineNeighbourhood: a large history's timeline draws, around each
// anomaly, its sessions' neighbouring transactions and the transactions
// near it in file order, not the whole history.
func TestTimelineNeighbourhood(t *testing.T) {
	s := generated(t, 20000, planted...)
	h := s.History
	o := Options{}.withDefaults()
	shown := make([]int, len(s.Anomalies))
	for i := range shown {
		shown[i] = i
	}
	windows, left := planTimelines(h, s.Anomalies, shown, &o)
	if len(left) > 0 || len(windows) == 0 {
		t.Fatalf("%d windows, %d anomalies left out", len(windows), len(left))
	}
	seen := map[int]bool{}
	bars := 0
	order := h.SessionOrder()
	for _, w := range windows {
		bars += len(w.txns)
		if !slices.IsSorted(w.txns) || len(slices.Compact(slices.Clone(w.txns))) != len(w.txns) {
			t.Error("window transactions not sorted and distinct")
		}
		for _, i := range w.anomalies {
			if seen[i] {
				t.Errorf("anomaly %d in two windows", i)
			}
			seen[i] = true
			for _, u := range involved(h, &s.Anomalies[i]) {
				sess := order[h.Txns[u].Session]
				j := slices.Index(sess, u)
				for _, v := range sess[max(0, j-o.Neighbours):min(len(sess), j+o.Neighbours+1)] {
					if _, ok := slices.BinarySearch(w.txns, v); !ok {
						t.Fatalf("%s's session neighbour %s not drawn", txnLabel(h, u), txnLabel(h, v))
					}
				}
				for v := max(0, u-history.TxnID(o.Neighbours/2)); v <= u+history.TxnID(o.Neighbours/2) && int(v) < len(h.Txns); v++ {
					if _, ok := slices.BinarySearch(w.txns, v); !ok {
						t.Fatalf("%s's file neighbour %s not drawn", txnLabel(h, u), txnLabel(h, v))
					}
				}
			}
		}
	}
	if len(seen) != len(s.Anomalies) {
		t.Errorf("%d of %d anomalies in a window", len(seen), len(s.Anomalies))
	}
	if bars > 5*(len(s.Anomalies)*4*(2*o.Neighbours+1)) || bars > o.MaxBars {
		t.Errorf("%d bars drawn", bars)
	}
	p := page(t, Options{}, s)
	if got := strings.Count(p, `<rect class="bar `); got != bars {
		t.Errorf("page draws %d bars, planned %d", got, bars)
	}
	if got := strings.Count(p, `<svg class="timeline"`); got != len(windows) {
		t.Errorf("%d timelines for %d windows", got, len(windows))
	}
	if !strings.Contains(p, "begin and end instants in order") {
		t.Error("timed history drawn in file order")
	}
}

// TestTimelineBudget: past the bar budget, anomalies go without a
// timeline and the page says so.
func TestTimelineBudget(t *testing.T) {
	s := generated(t, 5000, planted...)
	p := page(t, Options{MaxBars: 150}, s)
	if !strings.Contains(p, "have no timeline") {
		t.Error("page does not say some anomalies have no timeline")
	}
	if got := strings.Count(p, `<rect class="bar `); got > 150 {
		t.Errorf("%d bars for a budget of 150", got)
	}
}

// TestTimelineFileOrder: without instants, bars go in file order, one
// column per transaction.
func TestTimelineFileOrder(t *testing.T) {
	s := checkedSection(t, "init: x=0 | s1: r x 0 w x 1 | s2: r x 0 w x 2 | s1: r x 2 | aborted: s3: r x 2 w x 5 | unknown: s3: w y 1", level.Serializable)
	p := page(t, Options{}, s)
	for _, want := range []string{"x: file order", `class="bar aborted"`, `class="bar unknown"`, `class="bar committed hl"`, ">session 1<"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestTimelineFaults: a fault recorded in the history is shaded across
// the lanes over the instants it covers, with its kind and node in the
// tooltip; one outside the instants drawn is left out.
func TestTimelineFaults(t *testing.T) {
	h := history.MustParse("t1: s0: @10-20: w x 1 | t2: s1: @30-40: r x 1 w x 2 | t3: s0: @50-60: r x 2")
	h.Faults = []history.Fault{{Kind: "partition", Node: "n2", Begin: 25, End: 45}, {Kind: "kill", Node: "n1", Begin: 100, End: 200}}
	svg, timed := timelineSVG(h, []history.TxnID{0, 1, 2}, timelineMarks{})
	if !timed {
		t.Fatal("the axis is not time")
	}
	if n := strings.Count(string(svg), `class="fault"`); n != 1 {
		t.Fatalf("%d fault bands, want 1:\n%s", n, svg)
	}
	if !strings.Contains(string(svg), "<title>partition n2</title>") {
		t.Errorf("no tooltip naming the fault:\n%s", svg)
	}
	h.Faults = nil
	if svg, _ := timelineSVG(h, []history.TxnID{0, 1, 2}, timelineMarks{}); strings.Contains(string(svg), `class="fault"`) {
		t.Error("a history without faults has a fault band")
	}
}
