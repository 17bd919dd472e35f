package gen

import "fmt"

// fencer says when each session runs its next fence transaction (Cobra's
// fences): a session's first transaction is a fence, and again once it has
// run every of its own workload transactions since its last committed
// fence; an aborted fence is run again. every 0 runs no fences.
type fencer struct {
	every  int
	fenced []bool
	since  []int
}

func newFencer(every, sessions int) fencer {
	if every <= 0 {
		return fencer{}
	}
	return fencer{every: every, fenced: make([]bool, sessions), since: make([]int, sessions)}
}

// on reports whether the simulation runs fences.
func (f *fencer) on() bool { return f.every > 0 }

// due reports whether session s's next transaction is a fence.
func (f *fencer) due(s int) bool {
	return f.every > 0 && (!f.fenced[s] || f.since[s] >= f.every)
}

// ended records the end of one of session s's transactions: a fence (that
// committed or not) or a workload transaction.
func (f *fencer) ended(s int, fence, committed bool) {
	switch {
	case f.every == 0:
	case fence && committed:
		f.fenced[s], f.since[s] = true, 0
	case !fence:
		f.since[s]++
	}
}

// validFenceEvery checks a FenceEvery option.
func validFenceEvery(n int) error {
	if n < 0 {
		return fmt.Errorf("gen: fence interval must be ≥ 0 (0: no fences), got %d", n)
	}
	return nil
}

// fenceSource is the generator's source text's note of its fences: empty
// without them, so that histories without fences stay as they were.
func fenceSource(every int) string {
	if every <= 0 {
		return ""
	}
	return fmt.Sprintf(" fence-every=%d", every)
}
