package history

// OwnReadsEvidence counts what the reads that follow their transaction's
// own write or delete of the same key returned, in the transactions that
// took effect: Own agree with that last own write, External do not (they
// saw another transaction's write, or the state before the own write).
type OwnReadsEvidence struct {
	Own, External int
}

// Policy is the read-your-own-writes policy the evidence shows
// (Boomslang's Case 5): MustReadOwn when every such read saw its own
// write (or there was none), ReadsExternal when none did, ReadsEither
// when some did and some did not.
func (e OwnReadsEvidence) Policy() OwnReads {
	switch {
	case e.External == 0:
		return MustReadOwn
	case e.Own == 0:
		return ReadsExternal
	}
	return ReadsEither
}

// InferOwnReads counts, over the transactions of ix's history that took
// effect, the observations (reads, and the keys of scans and iterators)
// that follow the transaction's own write or delete of the key, by whether
// they agree with it, whatever ix's own policy. A read that agrees with
// its own write counts as own even where values repeat and another write
// could have served it.
func InferOwnReads(ix *Index) OwnReadsEvidence {
	var e OwnReadsEvidence
	h := ix.h
	for i := range h.Txns {
		t := TxnID(i)
		if !ix.Effective(t) {
			continue
		}
		ops := h.Txns[i].Ops
		ix.observe(t, MustReadOwn, func(o Observation) {
			switch {
			case o.Own < 0:
			case o.Agrees(h.Installed(ops[o.Own])):
				e.Own++
			default:
				e.External++
			}
		})
	}
	return e
}
