package history

import (
	"context"
	"runtime"
	"sync"
)

// Resolving: which write each plain read observed (over parts of the
// transactions in parallel), and which transactions took effect: the
// committed ones, and those of unknown outcome an effective one observed.

// parallelReads is how many transactions make resolveReads split its work
// across the processors: each part only looks the writes up and fills its
// own transactions' entries.
const parallelReads = 1 << 16

// resolveReads finds, for every read not preceded by its transaction's own
// write of the key, the first write of the value it returned.
func (ix *Index) resolveReads() {
	n := len(ix.h.Txns)
	parts := min(runtime.GOMAXPROCS(0), 8)
	if n < parallelReads || parts < 2 {
		parts = 1
	}
	if ix.packed.partitions() == 1 {
		parallel(parts, func(p int) { ix.resolveReadsOf(n*p/parts, n*(p+1)/parts, nil) })
		return
	}
	// With a table too big for the caches, the reads of packed words are
	// collected, grouped by partition of the table and looked up a
	// partition at a time (see insertPartitioned).
	found := make([]readsFound, parts)
	parallel(parts, func(p int) {
		lo, hi := n*p/parts, n*(p+1)/parts
		// At most one read per operation: the part of the capacity not
		// used is never touched.
		found[p].reads = make([]packedSlot, 0, ix.opStart[hi]-ix.opStart[lo])
		found[p].counts = make([]int32, ix.packed.partitions())
		ix.resolveReadsOf(lo, hi, &found[p])
	})
	// at[p][q] is where part p's reads of partition q go in buf.
	at := make([][]int32, parts)
	total := int32(0)
	for q := range ix.packed.partitions() {
		for p := range found {
			if q == 0 {
				at[p] = make([]int32, ix.packed.partitions())
			}
			at[p][q] = total
			total += found[p].counts[q]
		}
	}
	buf := ix.scratch[:0]
	ix.scratch = nil
	if cap(buf) < int(total) {
		buf = make([]packedSlot, total)
	}
	buf = buf[:total]
	parallel(parts, func(p int) {
		for _, e := range found[p].reads {
			q := ix.packed.partition(e.w)
			buf[at[p][q]] = e
			at[p][q]++
		}
		found[p].reads = nil
	})
	parallel(parts, func(p int) {
		for _, e := range buf[len(buf)*p/parts : len(buf)*(p+1)/parts] {
			if w, ok := ix.packed.get(e.w); ok {
				ix.readFrom[e.id] = w
			} else {
				ix.readFrom[e.id] = FromNothing
			}
		}
	})
}

// readsFound collects the reads of packed words that resolveReadsOf leaves
// to a lookup by partition: each read's word and its position in
// readFrom, and how many fall in each partition of the table.
type readsFound struct {
	reads  []packedSlot
	counts []int32
}

// parallel runs f(0), …, f(parts-1), on as many goroutines when parts > 1.
func parallel(parts int, f func(p int)) {
	if parts == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { f(p) })
	}
	wg.Wait()
}

// resolveReadsOf is resolveReads for transactions lo to hi. With found, the
// reads of packed words are left to the caller, collected in found.
func (ix *Index) resolveReadsOf(lo, hi int, found *readsFound) {
	h := ix.h
	var written map[KeyID]bool
	for i := lo; i < hi; i++ {
		ops := h.Txns[i].Ops
		base := ix.opStart[i]
		big := len(ops) > 16
		if big {
			if written == nil {
				written = make(map[KeyID]bool)
			}
			clear(written)
		}
		for j, op := range ops {
			ix.readFrom[base+int32(j)] = NotExternal
			if op.Kind.IsWrite() {
				if big {
					written[op.Key] = true
				}
				continue
			}
			if op.Kind != Read {
				continue
			}
			if big && written[op.Key] || !big && ownWriteBefore(ops[:j], op.Key) {
				continue
			}
			if found != nil && op.Value.Kind == Int {
				if w, ok := pack(op.Key, op.Value.N); ok {
					found.reads = append(found.reads, packedSlot{w: w, id: base + int32(j)})
					found.counts[ix.packed.partition(w)]++
					continue
				}
			}
			if p, ok := ix.lookup(op.Key, op.Value); ok {
				ix.readFrom[base+int32(j)] = p
			} else {
				ix.readFrom[base+int32(j)] = FromNothing
			}
		}
	}
}

func ownWriteBefore(ops []Op, k KeyID) bool {
	for _, p := range ops {
		if p.Kind.IsWrite() && p.Key == k {
			return true
		}
	}
	return false
}

// resolveEffective marks committed transactions, then unknown ones that an
// effective transaction observed, to a fixpoint. It stops with ctx's
// error when ctx ends.
func (ix *Index) resolveEffective(ctx context.Context) error {
	h := ix.h
	unknown := false
	for i := range h.Txns {
		switch h.Txns[i].Status {
		case Committed:
			ix.effective[i] = true
		case Unknown:
			unknown = true
		}
	}
	if !unknown {
		return nil // only an unknown transaction can take effect by being observed
	}
	var work []TxnID
	for i := range h.Txns {
		if h.Txns[i].Status == Committed {
			work = append(work, TxnID(i))
		}
	}
	for n := 0; len(work) > 0; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		t := work[len(work)-1]
		work = work[:len(work)-1]
		ix.Observations(t, func(o Observation) {
			w, ok := ix.soleSource(t, o)
			if !ok || w.Txn == t || ix.effective[w.Txn] || h.Txns[w.Txn].Status != Unknown {
				return
			}
			ix.effective[w.Txn] = true
			work = append(work, w.Txn)
		})
	}
	return nil
}

// soleSource returns the write that external observation o of t saw when
// exactly one write (and not the initial state) can have served it.
func (ix *Index) soleSource(t TxnID, o Observation) (OpRef, bool) {
	if o.Own >= 0 || ix.InitiallySeen(o) {
		return OpRef{}, false
	}
	var sole OpRef
	n := 0
	ix.Sources(o, func(id int32) bool {
		n++
		sole = ix.refs[id]
		return n < 2
	})
	return sole, n == 1
}
