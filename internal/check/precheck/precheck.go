// Package precheck runs the checks every level shares before any cycle
// search (MTC §III-B and §IV-B, footnote 1): thin-air reads, aborted reads
// (G1a), intermediate reads (G1b), and the intra-transaction anomalies
// future read, not-my-own-write, not-my-last-write and non-repeatable read.
// It finds all of them, not just the first.
package precheck

import (
	"context"
	"runtime"
	"sync"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/smalltab"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// Run returns every shared-check anomaly of ix's history that level l
// proscribes, in file order. Only transactions that took effect are
// examined: what an aborted transaction read does not matter.
func Run(ix *history.Index, l level.Level) []anomaly.Anomaly {
	found, _ := RunContext(context.Background(), ix, l)
	return found
}

// RunContext is Run, stopping when ctx ends: it then returns the
// anomalies found so far (each a real one) with ctx's error.
func RunContext(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	h := ix.History()
	n := len(h.Txns)
	parts := min(runtime.GOMAXPROCS(0), 8)
	if n < parallelTxns || parts < 2 {
		return run(ctx, ix, l, 0, n)
	}
	// The transactions are checked alone: parts of them on every
	// processor, their anomalies joined in file order.
	found := make([][]anomaly.Anomaly, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { found[p], errs[p] = run(ctx, ix, l, n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
	var all []anomaly.Anomaly
	for _, f := range found {
		all = append(all, f...)
	}
	for _, err := range errs {
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// Alike reports whether the shared checks judge every history alike at
// levels a and b: they read of a level only whether it proscribes G1a and
// G1b, forbids non-repeatable reads, and allows phantoms.
func Alike(a, b level.Level) bool {
	return a.Proscribes.Has(anomaly.G1a) == b.Proscribes.Has(anomaly.G1a) &&
		a.Proscribes.Has(anomaly.G1b) == b.Proscribes.Has(anomaly.G1b) &&
		a.NoNonRepeatableReads == b.NoNonRepeatableReads && a.Phantoms == b.Phantoms
}

// parallelTxns is how many transactions make Run split its work across the
// processors.
const parallelTxns = 1 << 16

// checkEvery is how many transactions run checks between two looks at
// its context.
const checkEvery = 256

// run is RunContext for transactions lo to hi.
func run(ctx context.Context, ix *history.Index, l level.Level, lo, hi int) ([]anomaly.Anomaly, error) {
	h := ix.History()
	c := checker{ix: ix, h: h, l: l}
	// A level that allows reading uncommitted data (G1a) lets every
	// unknown transaction count as aborted, whoever read it.
	dirty := !l.Proscribes.Has(anomaly.G1a)
	for i := lo; i < hi; i++ {
		if (i-lo)%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return c.found, err
			}
		}
		t := history.TxnID(i)
		if ix.Effective(t) && !(dirty && h.Txns[i].Status != history.Committed) {
			c.txn(t)
		}
	}
	return c.found, nil
}

// Txn returns the shared-check anomalies of transaction t alone, whatever
// its status: whether it could have committed without an anomaly the level
// proscribes.
func Txn(ix *history.Index, l level.Level, t history.TxnID) []anomaly.Anomaly {
	h := ix.History()
	c := checker{ix: ix, h: h, l: l}
	c.txn(t)
	return c.found
}

type checker struct {
	ix    *history.Index
	h     *history.History
	l     level.Level
	found []anomaly.Anomaly
	// first and at are txn's scratch, kept from one transaction to the
	// next so that checking a history allocates nothing per transaction.
	first []firstObservation
	at    smalltab.Table
	// warm keeps what history.Index.Warm returns, so that its loads stay.
	warm uint32
}

// firstObservation is a key's first external observation in a
// transaction, and whether a non-repeatable read of it was reported.
type firstObservation struct {
	k   history.KeyID
	o   history.Observation
	nrr bool
}

func (c *checker) txn(t history.TxnID) {
	// first holds each key's first external observation.
	first := c.first[:0]
	// A large transaction finds a key's first observation in a hash
	// table: the scan is quadratic in its size (Cobra's fauna-page has
	// transactions of 860 operations).
	var at *smalltab.Table
	if ops := len(c.h.Txns[t].Ops); ops > largeTxn {
		at = &c.at
		at.Reset(ops)
	}
	defer func() { c.first = first[:0] }()
	c.warm += c.ix.Warm(t)
	c.ix.Observations(t, func(o history.Observation) {
		ref := history.OpRef{Txn: t, Op: o.Op}
		if o.Own >= 0 {
			c.ownRead(t, ref, o)
			return
		}
		i := -1
		if at != nil {
			if j, ok := at.Get(int32(o.Key)); ok {
				i = int(j)
			}
		} else {
			for j := range first {
				if first[j].k == o.Key {
					i = j
					break
				}
			}
		}
		if i >= 0 {
			f := &first[i]
			if same(f.o, o) {
				return
			}
			// Where phantoms are allowed, a scan that sees a key change
			// is one unless an item read is behind the cycle: the solver
			// decides those.
			phantom := c.l.Phantoms && (f.o.Pred || o.Pred)
			if !f.nrr && c.l.NoNonRepeatableReads && !phantom {
				f.nrr = true
				c.add(anomaly.NonRepeatableRead, anomaly.None, o, []history.TxnID{t},
					history.OpRef{Txn: t, Op: f.o.Op}, ref)
			}
			c.externalRead(t, ref, o)
			return
		}
		first = append(first, firstObservation{k: o.Key, o: o})
		if at != nil {
			at.Put(int32(o.Key), int32(len(first)-1))
		}
		c.externalRead(t, ref, o)
	})
}

// largeTxn is the number of operations past which a transaction's
// observations look their key's first observation up instead of scanning.
const largeTxn = 32

// same reports whether two observations of a key agree: the same value, or
// both a null (a read of null agrees with absence and with a tombstone).
func same(a, b history.Observation) bool {
	if a.Seen == history.SawValue || b.Seen == history.SawValue {
		return a.Seen == b.Seen && a.Value == b.Value
	}
	return a.Seen == b.Seen || a.Seen == history.SawNull || b.Seen == history.SawNull
}

// ownRead checks an observation that follows the transaction's own write
// or delete of the key: it must see what that last write left.
func (c *checker) ownRead(t history.TxnID, ref history.OpRef, o history.Observation) {
	ops := c.h.Txns[t].Ops
	last := ops[o.Own]
	if o.Agrees(c.h.Installed(last)) {
		return
	}
	for j := int32(0); j < o.Own; j++ {
		p := ops[j]
		if (p.Kind == history.Write || p.Kind == history.Delete) && p.Key == o.Key && o.Agrees(c.h.Installed(p)) {
			c.add(anomaly.NotMyLastWrite, anomaly.None, o, []history.TxnID{t},
				ref, history.OpRef{Txn: t, Op: j}, history.OpRef{Txn: t, Op: o.Own})
			return
		}
	}
	c.add(anomaly.NotMyOwnWrite, anomaly.None, o, []history.TxnID{t}, ref, history.OpRef{Txn: t, Op: o.Own})
}

// externalRead checks an observation of other transactions (or of the
// initial state): some write that took effect, or may have, must have
// left what it saw as its transaction's final state of the key.
func (c *checker) externalRead(t history.TxnID, ref history.OpRef, o history.Observation) {
	if c.ix.InitiallySeen(o) {
		return
	}
	// Counts and the first of each class: no allocation per read. A final
	// write that took effect (or may have) explains the read: the
	// enumeration stops there, at the first or second write of the value
	// in most histories (a value written thousands of times made every
	// read walk all its writes).
	var own, aborted, effective, finalEffective int
	var firstAborted, firstEffective history.OpRef
	c.ix.Sources(o, func(p int32) bool {
		w, final := c.ix.WriteRef(p), c.ix.WriteIsFinal(p)
		switch {
		case w.Txn == t:
			own++
		case c.ix.Effective(w.Txn) || c.h.Txns[w.Txn].Status == history.Unknown:
			// Took effect, or of unknown outcome and not observed: it may
			// have committed, so a read of its final write is explicable
			// (of an earlier one, it is an intermediate or aborted read).
			if effective == 0 {
				firstEffective = w
			}
			effective++
			if final {
				finalEffective++
				return false // explained
			}
		case c.h.Txns[w.Txn].Status == history.Aborted:
			if aborted == 0 {
				firstAborted = w
			}
			aborted++
		}
		return true
	})
	switch {
	case effective == 0 && aborted == 0 && own > 0:
		refs := []history.OpRef{ref}
		c.ix.Sources(o, func(p int32) bool {
			if w := c.ix.WriteRef(p); w.Txn == t {
				refs = append(refs, w)
			}
			return true
		})
		c.add(anomaly.FutureRead, anomaly.None, o, []history.TxnID{t}, refs...)
	case effective == 0 && aborted == 0:
		c.add(anomaly.ThinAirRead, anomaly.None, o, []history.TxnID{t}, ref)
	case effective == 0:
		if c.l.Proscribes.Has(anomaly.G1a) {
			c.add(anomaly.AbortedRead, anomaly.G1a, o, []history.TxnID{t, firstAborted.Txn}, ref, firstAborted)
		}
	case finalEffective == 0:
		if c.l.Proscribes.Has(anomaly.G1b) {
			last := lastWriteOf(c.h, firstEffective)
			c.add(anomaly.IntermediateRead, anomaly.G1b, o, []history.TxnID{t, firstEffective.Txn}, ref, firstEffective, last)
		}
	}
}

// lastWriteOf returns the last write of w's key in w's transaction.
func lastWriteOf(h *history.History, w history.OpRef) history.OpRef {
	ops := h.Txns[w.Txn].Ops
	k := ops[w.Op].Key
	last := w
	for j := w.Op + 1; j < int32(len(ops)); j++ {
		if ops[j].Kind.IsWrite() && ops[j].Key == k {
			last = history.OpRef{Txn: w.Txn, Op: j}
		}
	}
	return last
}

func (c *checker) add(k anomaly.Kind, p anomaly.Phenomenon, o history.Observation, txns []history.TxnID, refs ...history.OpRef) {
	c.found = append(c.found, anomaly.Anomaly{
		Kind: k, Phenomenon: p, Txns: txns, Key: o.Key, Value: o.Value, Ops: refs,
	})
}
