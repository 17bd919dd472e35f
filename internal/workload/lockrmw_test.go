package workload

import (
	"strings"
	"testing"
)

// TestLockRMW: with LockRMW every read of a key its transaction writes
// later is a locking read, and no other read is; the configuration says
// so in the history's source.
func TestLockRMW(t *testing.T) {
	for _, w := range []Workload{MiniTxn, RandomBench, RandomRMWRange} {
		c := PlanConfig{Workload: w, Sessions: 4, Txns: 200, Keys: 10, Dist: Uniform, ReadRatio: -1, LockRMW: true}
		p := plan(t, c, 1)
		locked := 0
		for _, txns := range p.Sessions {
			for _, tx := range txns {
				for i, op := range tx.Ops {
					writesLater := false
					for _, later := range tx.Ops[i+1:] {
						writesLater = writesLater || later.Kind == WriteOp && later.Key == op.Key
					}
					switch {
					case op.Kind == ReadOp && op.Lock != writesLater:
						t.Fatalf("%s: read of %d lock=%v, written later=%v", w, op.Key, op.Lock, writesLater)
					case op.Kind != ReadOp && op.Lock:
						t.Fatalf("%s: a %s is locking", w, op.Kind)
					case op.Lock:
						locked++
					}
				}
			}
		}
		if locked == 0 {
			t.Errorf("%s: no locking read", w)
		}
		if !strings.Contains(p.Config.String(), "lock-rmw") {
			t.Errorf("%s: %q does not say lock-rmw", w, p.Config.String())
		}
		c.LockRMW = false
		for _, txns := range plan(t, c, 1).Sessions {
			for _, tx := range txns {
				for _, op := range tx.Ops {
					if op.Lock {
						t.Fatalf("%s: a locking read without LockRMW", w)
					}
				}
			}
		}
	}
}
