package reference

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

func TestTmpWorst(t *testing.T) {
	for _, nu := range []int{0, 3, 6} {
		var segs []string
		for i := 0; i < MaxTxns-1; i++ {
			st := ""
			if i >= 2 && i-2 < nu {
				st = "unknown: "
			}
			segs = append(segs, fmt.Sprintf("s%d: %s@%d-%d: w k%d %d", i, st, 3*i, 3*i+100, i, i))
		}
		segs = append(segs, "s1: @50-51: r k0 0 r k1 _")
		h := history.MustParse(strings.Join(segs, " | "))
		for _, id := range []level.ID{level.SnapshotIsolation, level.Serializable} {
			t0 := time.Now()
			ok, err := Check(h, id)
			t.Logf("unknown %d %v: %v %v in %v", nu, id, ok, err, time.Since(t0))
		}
	}
}
