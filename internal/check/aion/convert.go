package aion

import (
	"math"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// A transaction of the input made the checker's record: its keys and
// sessions interned, its operations encoded, the records cut from slabs.

// srcKey returns the checker's id of key k of history src, interning it.
func (c *Checker) srcKey(src *history.History, k history.KeyID) int32 {
	if src != c.srcH {
		c.srcH, c.srcKeys, c.srcSess = src, c.srcKeys[:0], c.srcSess[:0]
	}
	for len(c.srcKeys) < len(src.Keys) {
		c.srcKeys = append(c.srcKeys, 0)
	}
	id := &c.srcKeys[k]
	if *id == 0 {
		*id = c.key(src.Keys[k]) + 1
	}
	return *id - 1
}

// key interns k.
func (c *Checker) key(k history.Value) int32 {
	if k.Kind == history.Int {
		if id, ok := c.keyInt[k.N]; ok {
			return id
		}
	} else if id, ok := c.keyIdx[k]; ok {
		return id
	}
	id := int32(len(c.keys))
	c.keys = append(c.keys, k)
	init, ok := c.cfg.Initial[k]
	if !ok {
		init = history.NullValue
	}
	c.keyInit = append(c.keyInit, init)
	if k.Kind == history.Int {
		c.keyInt[k.N] = id
	} else {
		c.keyIdx[k] = id
	}
	c.ks = append(c.ks, keyState{})
	c.kinds = append(c.kinds, 0)
	c.batchKinds = append(c.batchKinds, 0)
	c.mem += 120
	return id
}

// session interns session label s.
func (c *Checker) session(s history.Value) int32 {
	if id, ok := c.sessIdx[s]; ok {
		return id
	}
	id := int32(len(c.sessLabel))
	c.sessLabel = append(c.sessLabel, s)
	c.sessLast = append(c.sessLast, party{sess: -1})
	c.sessIdx[s] = id
	c.mem += 120
	return id
}

// convert makes the checker's copy of t; its decoded operations are left
// in c.ops until the next call.
func (c *Checker) convert(src *history.History, t *history.Txn) *txn {
	if src != c.srcH {
		c.srcH, c.srcKeys, c.srcSess = src, c.srcKeys[:0], c.srcSess[:0]
	}
	for len(c.srcSess) < len(src.Sessions) {
		c.srcSess = append(c.srcSess, 0)
	}
	s := &c.srcSess[t.Session]
	if *s == 0 {
		*s = c.session(src.Sessions[t.Session]) + 1
	}
	line := int32(0)
	if t.Line <= math.MaxInt32 {
		line = int32(t.Line)
	}
	x := c.newTxn()
	*x = txn{id: t.ID, sess: *s - 1, sts: t.StartTS, cts: t.CommitTS, line: line}
	ops := t.Ops
	if c.cfg.Axioms == SessionAxioms {
		ops = nil
	}
	c.ops = slices.Grow(c.ops[:0], len(ops))[:len(ops)]
	for j, o := range ops {
		v := o.Value
		if o.Kind == history.Delete {
			v = history.NullValue
		}
		c.ops[j] = op{kind: o.Kind, key: c.srcKey(src, o.Key), val: v, list: o.List}
	}
	c.enc = encodeOps(c.enc[:0], c.ops)
	x.enc, x.nops = c.encBytes(c.enc), int32(len(c.ops))
	return x
}

// Slabs: the checker's records of transactions, and their operations'
// encodings, are cut from arrays of many at a time rather than allocated
// one by one — a key shard's checker holds a record of nearly every
// transaction, and the allocations and the collector's objects were a
// large part of what a piece cost besides its operations. A slab is freed
// when none of its records is held any more (spilling drops records about
// in the order they arrived, so a slab's go together).
const (
	txnSlab = 256
	encSlab = 64 << 10
)

// newTxn returns a record from the slab.
func (c *Checker) newTxn() *txn {
	if len(c.txns) == cap(c.txns) {
		c.txns = make([]txn, 0, txnSlab)
	}
	c.txns = c.txns[:len(c.txns)+1]
	return &c.txns[len(c.txns)-1]
}

// encBytes returns a copy of b cut from the slab of encodings.
func (c *Checker) encBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if cap(c.encs)-len(c.encs) < len(b) {
		c.encs = make([]byte, 0, max(encSlab, len(b)))
	}
	n := len(c.encs)
	c.encs = append(c.encs, b...)
	return c.encs[n:len(c.encs):len(c.encs)]
}
