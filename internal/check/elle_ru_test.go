package check_test

import (
	"context"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// elleRU are the nine histories of Elle's list-append unit tests
// (jepsen-io/elle, test/elle/list_append_test.clj: checker-test and
// unobserved-write-test) that carry a verdict at read uncommitted — a G0
// check, the read-uncommitted model, or read-uncommitted among the
// models ruled out — in isoscope's notation, with that verdict and the
// anomaly Elle names for it. Elle's internal-consistency case is a
// violation for Elle by its G0 and for isoscope by the internal read
// (isoscope drops a read that is not internally consistent from the
// version order, so it finds no G0 there).
var elleRU = []struct {
	name, hist string
	holds      bool
	want       anomaly.Kind // an anomaly the violation must include
	phenomenon anomaly.Phenomenon
}{
	{"G0", "a x 1 a y 1 | a x 2 a y 2 | r x [1,2] r y [2,1]", false, 0, anomaly.G0},
	{"G1a", "aborted: a x 1 | r x [1]", true, 0, 0},
	{"G1b", "a x 1 a x 2 | r x [1]", true, 0, 0},
	{"G1c", "a x 1 r y [1] | a x 2 a y 1 | r x [1,2] r y [1]", true, 0, 0},
	{"G-single", "a x 1 a y 1 | a x 2 r y [] | r x [1,2]", true, 0, 0},
	{"G2", "a x 1 r y [] | a y 1 r x []", true, 0, 0},
	{"duplicated elements", "a x 1 r y [1] | a x 2 a y 1 | r x [1,2,1]", false, anomaly.DuplicateElements, 0},
	{"internal", "a x 1 a x 2 a x 4 | a x 3 r x [1,2,3,4]", false, anomaly.NotMyOwnWrite, 0},
	{"unobserved write", "a x 1 a y 1 | a x 2 a y 2 | a x 3 a y 3 | r x [1,2] | r y [2]", false, 0, anomaly.G0},
}

// TestElleListAppendRU: isoscope agrees with Elle's own list-append unit
// tests at read uncommitted, with the named checker and with auto, and
// finds the anomaly Elle names.
func TestElleListAppendRU(t *testing.T) {
	for _, tc := range elleRU {
		for _, name := range []string{"list-append", "auto"} {
			h := history.MustParse(tc.hist)
			res, err := check.Run(context.Background(), h, level.Get(level.ReadUncommitted), check.Options{Checker: name})
			if err != nil {
				t.Fatalf("%s (%s): %v", tc.name, name, err)
			}
			if got := res.Outcome == check.Satisfied; got != tc.holds {
				t.Errorf("%s (%s): holds=%v, Elle says %v; %s", tc.name, name, got, tc.holds, kinds(res))
				continue
			}
			if tc.holds {
				continue
			}
			if !slices.ContainsFunc(res.Anomalies, func(a anomaly.Anomaly) bool {
				return (tc.want != 0 && a.Kind == tc.want) || (tc.phenomenon != 0 && a.Phenomenon == tc.phenomenon)
			}) {
				t.Errorf("%s (%s): found %s, not the anomaly Elle names", tc.name, name, kinds(res))
			}
			cyclesConnect(t, res)
		}
	}
}
