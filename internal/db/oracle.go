package db

import (
	"sync"
)

// oracle is the timestamp oracle of a Badger database in managed mode,
// where the caller chooses every transaction's read and commit timestamp.
// It does what Badger's own oracle does in normal mode, so that managed
// mode keeps Badger's guarantees, and its timestamps are the truth about
// what each transaction saw:
//
//   - every timestamp it hands out is fresh (start and commit timestamps
//     are drawn from one counter, so no two are equal);
//   - a transaction starts only once every commit with a lower timestamp
//     has been applied or has failed (a watermark): its snapshot, the
//     versions below its start timestamp, is complete and never changes;
//   - commits take their timestamps and enter Badger's conflict check and
//     write queue in one step, in timestamp order: Badger checks a
//     transaction's reads against every transaction committed after its
//     start, in the order their versions are ordered;
//   - Badger may forget the writes of transactions committed at or below
//     the oldest start timestamp in use (SetDiscardTs), and no lower one.
//
// A transaction that starts after another committed (in real time) gets
// a higher start timestamp than the other's commit timestamp, and one
// session's timestamps increase: start < commit < next start (a
// transaction that wrote nothing commits at its start, start = commit).
type oracle struct {
	mu      sync.Mutex
	settles *sync.Cond
	// next is the next timestamp to hand out.
	next uint64
	// done is the watermark: every timestamp up to it is settled (a
	// start, or a commit that was applied or failed).
	done uint64
	// settled holds the settled timestamps above done.
	settled map[uint64]struct{}
	// active counts the open transactions by start timestamp.
	active map[uint64]int
	// discard tells Badger the timestamp at or below which it may
	// discard versions and forget committed transactions (nil: nothing).
	discard func(uint64)
	// discarded is the last value given to discard.
	discarded uint64
}

// newOracle returns an oracle whose first timestamp is after+1: after is
// the highest version the database already holds.
func newOracle(after uint64, discard func(uint64)) *oracle {
	o := &oracle{next: after + 1, done: after, settled: map[uint64]struct{}{}, active: map[uint64]int{}, discard: discard}
	o.settles = sync.NewCond(&o.mu)
	return o
}

// begin returns a fresh start timestamp s once every commit below s has
// settled. The caller calls end(s) when the transaction is over.
func (o *oracle) begin() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.next
	o.next++
	o.active[s]++
	// A start timestamp installs nothing: it is settled at once.
	o.settle(s)
	for o.done < s {
		o.settles.Wait()
	}
	return s
}

// commit takes a fresh commit timestamp c and calls submit(c) before any
// other transaction can take a timestamp, so that the database receives
// commits in timestamp order; it returns c. The caller calls finish(c)
// once the commit has been applied or has failed.
func (o *oracle) commit(submit func(c uint64)) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.next
	o.next++
	submit(c)
	return c
}

// finish settles commit timestamp c.
func (o *oracle) finish(c uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settle(c)
}

// settle marks t settled and advances the watermark; o.mu is held.
func (o *oracle) settle(t uint64) {
	o.settled[t] = struct{}{}
	moved := false
	for {
		if _, ok := o.settled[o.done+1]; !ok {
			break
		}
		delete(o.settled, o.done+1)
		o.done++
		moved = true
	}
	if moved {
		o.settles.Broadcast()
	}
}

// end closes the transaction that started at s, and lets the database
// discard what no open transaction can read any more.
func (o *oracle) end(s uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.active[s]--; o.active[s] <= 0 {
		delete(o.active, s)
	}
	// The oldest start in use, or the watermark when none is open: every
	// later commit takes a timestamp above it.
	low := o.done
	for a := range o.active {
		low = min(low, a)
	}
	if low > o.discarded && o.discard != nil {
		o.discarded = low
		o.discard(low)
	}
}

// watermark returns the highest timestamp up to which every timestamp has
// settled.
func (o *oracle) watermark() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done
}
