package aion

import (
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"sort"

	"github.com/isoscope/isoscope/internal/history"
)

// Store keeps spilled segments: what the checker moved out of memory. Put
// stores a segment and returns its id; Get returns it; Delete forgets it
// (after Get, when the checker reloaded it).
type Store interface {
	Put(seg *Segment) (int64, error)
	Get(id int64) (*Segment, error)
	Delete(id int64) error
}

// Segment is one spill: transactions whose Ext verdict was final and that
// committed below Watermark, and versions that no snapshot at or above
// Watermark sees (a later version of their key committed below it).
type Segment struct {
	Watermark uint64
	Txns      []SpilledTxn
	Versions  []SpilledVersion
}

// SpilledTxn is a transaction of a Segment. Keys and sessions are the
// checker's interned ids, which live as long as the checker.
type SpilledTxn struct {
	ID                history.Value
	Session           int32
	StartTS, CommitTS uint64
	Line              int
	Ops               []SpilledOp
	// enc and nops are the operations in the checker's encoding
	// (encodeOps), which is FileStore's: a spill to a FileStore sets them
	// instead of Ops, sparing the decoding.
	enc  []byte
	nops int
}

// SpilledOp is an operation of a SpilledTxn.
type SpilledOp struct {
	Kind  history.OpKind
	Key   int32
	Value history.Value
	// List is what a list read returned.
	List []history.Value
}

// SpilledVersion is a version of a Segment.
type SpilledVersion struct {
	Key               int32
	ID                history.Value
	Session           int32
	StartTS, CommitTS uint64
	Value             history.Value
}

// segMeta is what the checker keeps of a spilled segment.
type segMeta struct {
	id   int64
	w    uint64
	txns int
	// keys are the keys of its versions, sorted: a search for a version
	// of another key skips it.
	keys []int32
	// pairs is a Bloom filter of its versions' (key, value) pairs: a
	// search for a value it does not hold skips it without reading it.
	pairs bloom
}

// bloom is a Bloom filter over hashes: 10 bits and 4 probes per entry,
// about 1% false positives.
type bloom []uint64

func newBloom(n int) bloom { return make(bloom, max(1, (10*n+63)/64)) }

func (b bloom) probe(h uint64, f func(word int, bit uint64) bool) bool {
	h1, h2 := h, h>>32|1
	m := uint64(len(b)) * 64
	for i := range uint64(4) {
		x := (h1 + i*h2) % m
		if !f(int(x/64), 1<<(x%64)) {
			return false
		}
	}
	return true
}

func (b bloom) add(h uint64) {
	b.probe(h, func(w int, bit uint64) bool { b[w] |= bit; return true })
}

func (b bloom) has(h uint64) bool {
	return b.probe(h, func(w int, bit uint64) bool { return b[w]&bit != 0 })
}

// pairHash hashes key k with value v, every null alike (a null read
// matches any absence).
func (c *Checker) pairHash(k int32, v history.Value) uint64 {
	if v.IsNull() {
		v = history.NullValue
	}
	h := uint64(uint32(k))<<32 ^ uint64(v.Kind)<<24 ^ uint64(v.N)*0x9E3779B97F4A7C15
	if v.Kind == history.String {
		h ^= maphash.String(c.seed, v.S)
	}
	// splitmix64's finalizer spreads every bit over the word.
	h ^= h >> 30
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 27
	h *= 0x94D049BB133111EB
	return h ^ h>>31
}

// maxSpill bounds the transactions of one spill, so that a spill is a
// short pause: the next batch spills again while the estimate is over.
const maxSpill = 1 << 16

// maybeGC spills when the estimate is over the bound: the transactions
// whose verdict is final, oldest verdict first, that committed below every
// pending snapshot, up to maxSpill of them or until the estimate is back
// to three quarters of the bound, and the versions no snapshot at or
// above the spill's watermark sees. When it can free little (everything
// is pending), it waits for the estimate to grow by an eighth of the
// bound before it tries again.
func (c *Checker) maybeGC() error {
	bound := c.cfg.MemoryBound
	if bound == 0 || c.mem <= bound || c.mem < c.nextGC {
		return nil
	}
	if c.readers-c.pendingReads > c.readers/4 {
		c.sweepReaders()
	}
	limit := uint64(math.MaxUint64)
	for _, t := range c.queue[c.qhead:] {
		limit = min(limit, t.snapTS(c.ser))
	}
	target := c.mem - bound*3/4
	seg := &Segment{Txns: make([]SpilledTxn, 0, min(maxSpill, len(c.finals)-c.fhead))}
	var slab []SpilledOp // the spilled transactions' operations, in one array
	_, raw := c.cfg.Store.(*FileStore)
	var freed int64
	var w uint64
	for c.fhead < len(c.finals) && freed < target && len(seg.Txns) < maxSpill {
		t := c.finals[c.fhead]
		if t.cts >= limit {
			break
		}
		c.finals[c.fhead] = nil
		c.fhead++
		if raw {
			seg.Txns = append(seg.Txns, SpilledTxn{ID: t.id, Session: t.sess, StartTS: t.sts, CommitTS: t.cts, Line: int(t.line), enc: t.enc, nops: int(t.nops)})
		} else {
			c.spillOps(seg, t, &slab)
		}
		c.byID.remove(t.id)
		c.mem -= t.bytes()
		freed += t.bytes()
		w = max(w, t.cts+1)
	}
	if c.fhead > 1024 && c.fhead > len(c.finals)/2 {
		n := copy(c.finals, c.finals[c.fhead:])
		clear(c.finals[n:])
		c.finals, c.fhead = c.finals[:n], 0
	}
	if len(seg.Txns) == 0 {
		w = limit
	}
	if w == math.MaxUint64 || w == 0 {
		c.nextGC = c.mem + bound/8
		return nil
	}
	seg.Watermark = w
	nv := 0
	for k := range c.ks {
		nv += c.droppable(int32(k), w)
	}
	seg.Versions = make([]SpilledVersion, 0, nv)
	for k := range c.ks {
		ks := &c.ks[k]
		drop := c.droppable(int32(k), w)
		if drop == 0 {
			continue
		}
		for _, v := range ks.vers[:drop] {
			seg.Versions = append(seg.Versions, SpilledVersion{Key: int32(k), ID: v.ID(), Session: v.sess, StartTS: v.sts, CommitTS: v.cts, Value: v.value()})
		}
		n := copy(ks.vers, ks.vers[drop:])
		clear(ks.vers[n:])
		ks.vers = ks.vers[:n]
		c.shrinkVersions(ks)
	}
	if len(seg.Txns) > 0 || len(seg.Versions) > 0 {
		id, err := c.cfg.Store.Put(seg)
		if err != nil {
			return fmt.Errorf("aion: spilling %d transactions: %w", len(seg.Txns), err)
		}
		var keys []int32
		for _, v := range seg.Versions {
			if n := len(keys); n == 0 || keys[n-1] != v.Key {
				keys = append(keys, v.Key)
			}
		}
		c.mem += int64(4*len(keys)) + 64
		pairs := newBloom(len(seg.Versions))
		for _, v := range seg.Versions {
			pairs.add(c.pairHash(v.Key, v.Value))
		}
		c.mem += int64(8 * len(pairs))
		c.segs = append(c.segs, segMeta{id: id, w: w, txns: len(seg.Txns), keys: keys, pairs: pairs})
		c.maxW = max(c.maxW, w)
		c.stats.Spills++
	}
	c.nextGC = bound
	if c.mem > bound*7/8 && len(seg.Txns) < maxSpill {
		c.nextGC = c.mem + bound/8
	}
	return nil
}

// reload brings back every segment spilled at a watermark above ts: all a
// transaction starting at ts can need (a version its snapshot sees, a
// writer overlapping it).
func (c *Checker) reload(ts uint64) error {
	touched := map[int32]bool{}
	keep := c.segs[:0]
	var back []segMeta
	for _, m := range c.segs {
		if m.w > ts {
			back = append(back, m)
		} else {
			keep = append(keep, m)
		}
	}
	c.segs = keep
	c.maxW = 0
	for _, m := range c.segs {
		c.maxW = max(c.maxW, m.w)
	}
	for _, m := range back {
		c.mem -= int64(4*len(m.keys)+8*len(m.pairs)) + 64
		seg, err := c.cfg.Store.Get(m.id)
		if err != nil {
			return fmt.Errorf("aion: reloading a spilled segment: %w", err)
		}
		for _, st := range seg.Txns {
			t := &txn{id: st.ID, sess: st.Session, sts: st.StartTS, cts: st.CommitTS, line: int32(st.Line), final: true}
			ops := make([]op, len(st.Ops))
			for j, o := range st.Ops {
				ops[j] = op{kind: o.Kind, key: o.Key, val: o.Value, list: o.List}
			}
			t.enc, t.nops = encodeOps(nil, ops), int32(len(ops))
			c.byID.put(t)
			c.finals = append(c.finals, t)
			c.mem += t.bytes()
		}
		for _, v := range seg.Versions {
			ks := &c.ks[v.Key]
			before := cap(ks.vers)
			ks.vers = append(ks.vers, newVersion(commitPos(c.ser, v.ID, v.StartTS, v.CommitTS), v.StartTS, v.Session, v.Value, nil))
			touched[v.Key] = true
			c.mem += int64(cap(ks.vers)-before) * versionBytes
		}
		if err := c.cfg.Store.Delete(m.id); err != nil {
			return fmt.Errorf("aion: dropping a reloaded segment: %w", err)
		}
		c.stats.Reloads++
	}
	for k := range touched {
		vs := c.ks[k].vers
		slices.SortFunc(vs, func(a, b version) int { return cmpPos(a.pos(), b.pos()) })
		c.ks[k].syncLast()
	}
	return nil
}

// searchSpilled looks through the spilled segments, newest first, for a
// version of k with value v (any null for a null), written by a
// transaction other than id, without reloading them; it reads only the
// segments whose filter may hold (k, v).
func (c *Checker) searchSpilled(id history.Value, k int32, v history.Value) (party, bool, error) {
	h := c.pairHash(k, v)
	for i := len(c.segs) - 1; i >= 0; i-- {
		if _, ok := slices.BinarySearch(c.segs[i].keys, k); !ok || !c.segs[i].pairs.has(h) {
			continue
		}
		seg, err := c.cfg.Store.Get(c.segs[i].id)
		if err != nil {
			return party{}, false, fmt.Errorf("aion: reading a spilled segment: %w", err)
		}
		for j := len(seg.Versions) - 1; j >= 0; j-- {
			if sv := &seg.Versions[j]; sv.Key == k && sv.ID != id && (sv.Value == v || v.IsNull() && sv.Value.IsNull()) {
				return party{id: sv.ID, sess: sv.Session, sts: sv.StartTS, cts: sv.CommitTS}, true, nil
			}
		}
	}
	return party{}, false, nil
}

// shrinkVersions gives ks's versions a smaller array when they fill less
// than a quarter of theirs, so that what was spilled leaves memory.
func (c *Checker) shrinkVersions(ks *keyState) {
	if cap(ks.vers) <= 16 || len(ks.vers) >= cap(ks.vers)/4 {
		return
	}
	before := cap(ks.vers)
	ks.vers = append(make([]version, 0, 2*len(ks.vers)), ks.vers...)
	c.mem += int64(cap(ks.vers)-before) * versionBytes
}

// droppable is how many of k's oldest versions a spill at watermark w
// moves out: those no snapshot at or above w sees (all below w but the
// last), and only when they are at least half of the key's versions, so
// that moving the rest down costs at most once what was dropped. A list's
// versions are its state: they stay.
func (c *Checker) droppable(k int32, w uint64) int {
	if c.kinds[k]&listKey != 0 {
		return 0
	}
	vs := c.ks[k].vers
	drop := sort.Search(len(vs), func(i int) bool { return vs[i].cts >= w }) - 1
	if drop < 1 || 2*drop < len(vs) {
		return 0
	}
	return drop
}

// spillOps adds t to seg with its operations decoded, in slab's array.
func (c *Checker) spillOps(seg *Segment, t *txn, slab *[]SpilledOp) {
	c.ops = decodeOps(c.ops[:0], t.enc)
	if cap(*slab)-len(*slab) < len(c.ops) {
		*slab = make([]SpilledOp, 0, max(4096, len(c.ops)))
	}
	n := len(*slab)
	for _, o := range c.ops {
		*slab = append(*slab, SpilledOp{Kind: o.kind, Key: o.key, Value: o.val, List: o.list})
	}
	seg.Txns = append(seg.Txns, SpilledTxn{ID: t.id, Session: t.sess, StartTS: t.sts, CommitTS: t.cts, Line: int(t.line), Ops: (*slab)[n:len(*slab):len(*slab)]})
}
