package pipeline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/serve"
)

// TestOnlineVerdictUnjudged: a drained online checker that could not
// judge every transaction makes the run's verdict undecided when it found
// nothing, and a violation that says others may be missing when it found
// some; with every transaction judged, holds and violated as before.
func TestOnlineVerdictUnjudged(t *testing.T) {
	why := `keyspace "k": 3 transactions touched keys whose settled state was dropped under the memory bound (9 keys dropped)`
	for _, c := range []struct {
		violations uint64
		unjudged   []string
		want       Status
		says       string
	}{
		{0, nil, Holds, "holds, checked online"},
		{0, []string{why}, Undecided, "undecided online: not every transaction could be judged (" + why + ")"},
		{2, nil, Violated, "violated, found online: 2 violations"},
		{2, []string{why}, Violated, "others may be missing: not every transaction could be judged (" + why + ")"},
	} {
		var out, errs bytes.Buffer
		r := &run{Config: Config{Online: &Online{Level: level.Get(level.Serializable)}}, io: IO{Stdout: &out, Stderr: &errs}}
		sum := serve.Summary{Checked: 10, Violations: c.violations, BlackBox: &serve.BlackBoxState{Keyspaces: 1, Unjudged: c.unjudged}}
		res, err := r.onlineVerdict(sum, nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != c.want || !strings.Contains(out.String(), c.says) {
			t.Errorf("%d violations, unjudged %v: status %v, said %q; want %v and %q", c.violations, c.unjudged, res.Status, out.String(), c.want, c.says)
		}
		if len(c.unjudged) > 0 && !strings.Contains(errs.String(), "not every transaction could be judged") {
			t.Errorf("unjudged %v: standard error %q does not say so", c.unjudged, errs.String())
		}
	}
}
