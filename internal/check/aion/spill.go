package aion

import (
	"bufio"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/isoscope/isoscope/internal/history"
)

// Store keeps spilled segments as bytes: what the checker moved out of
// memory, in its own encoding. Create starts segment id, an id the
// checker has not used before: the checker writes its bytes, in pieces,
// and closes it; it is whole once Close returned nil. Open reads back
// the bytes of segment id, which the checker then closes. Delete forgets
// id (after Open, when the checker reloaded the segment).
type Store interface {
	Create(id int64) (io.WriteCloser, error)
	Open(id int64) (io.ReadCloser, error)
	Delete(id int64) error
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
	seg := &segment{txns: make([]spilledTxn, 0, min(maxSpill, len(c.finals)-c.fhead))}
	var freed int64
	var w uint64
	for c.fhead < len(c.finals) && freed < target && len(seg.txns) < maxSpill {
		t := c.finals[c.fhead]
		if t.cts >= limit {
			break
		}
		c.finals[c.fhead] = nil
		c.fhead++
		seg.txns = append(seg.txns, spilledTxn{id: t.id, session: t.sess, startTS: t.sts, commitTS: t.cts, line: int(t.line), enc: t.enc, nops: int(t.nops)})
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
	if len(seg.txns) == 0 {
		w = limit
	}
	if w == math.MaxUint64 || w == 0 {
		c.nextGC = c.mem + bound/8
		return nil
	}
	seg.watermark = w
	nv := 0
	for k := range c.ks {
		nv += c.droppable(int32(k), w)
	}
	seg.versions = make([]spilledVersion, 0, nv)
	for k := range c.ks {
		ks := &c.ks[k]
		drop := c.droppable(int32(k), w)
		if drop == 0 {
			continue
		}
		for _, v := range ks.vers[:drop] {
			seg.versions = append(seg.versions, spilledVersion{key: int32(k), id: v.ID(), session: v.sess, startTS: v.sts, commitTS: v.cts, value: v.value()})
		}
		n := copy(ks.vers, ks.vers[drop:])
		clear(ks.vers[n:])
		ks.vers = ks.vers[:n]
		c.shrinkVersions(ks)
	}
	if len(seg.txns) > 0 || len(seg.versions) > 0 {
		id := c.nextSeg
		if err := c.putSegment(id, seg); err != nil {
			return fmt.Errorf("aion: spilling %d transactions: %w", len(seg.txns), err)
		}
		c.nextSeg++
		var keys []int32
		for _, v := range seg.versions {
			if n := len(keys); n == 0 || keys[n-1] != v.key {
				keys = append(keys, v.key)
			}
		}
		c.mem += int64(4*len(keys)) + 64
		pairs := newBloom(len(seg.versions))
		for _, v := range seg.versions {
			pairs.add(c.pairHash(v.key, v.value))
		}
		c.mem += int64(8 * len(pairs))
		c.segs = append(c.segs, segMeta{id: id, w: w, txns: len(seg.txns), keys: keys, pairs: pairs})
		c.maxW = max(c.maxW, w)
		c.stats.Spills++
	}
	c.nextGC = bound
	if c.mem > bound*7/8 && len(seg.txns) < maxSpill {
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
		seg, err := c.getSegment(m.id)
		if err != nil {
			return fmt.Errorf("aion: reloading a spilled segment: %w", err)
		}
		for _, st := range seg.txns {
			t := &txn{id: st.id, sess: st.session, sts: st.startTS, cts: st.commitTS, line: int32(st.line), final: true}
			t.enc, t.nops = encodeOps(nil, st.ops), int32(len(st.ops))
			c.byID.put(t)
			c.finals = append(c.finals, t)
			c.mem += t.bytes()
		}
		for _, v := range seg.versions {
			ks := &c.ks[v.key]
			before := cap(ks.vers)
			ks.vers = append(ks.vers, newVersion(commitPos(c.ser, v.id, v.startTS, v.commitTS), v.startTS, v.session, v.value, nil))
			touched[v.key] = true
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
		seg, err := c.getSegment(c.segs[i].id)
		if err != nil {
			return party{}, false, fmt.Errorf("aion: reading a spilled segment: %w", err)
		}
		for j := len(seg.versions) - 1; j >= 0; j-- {
			if sv := &seg.versions[j]; sv.key == k && sv.id != id && (sv.value == v || v.IsNull() && sv.value.IsNull()) {
				return party{id: sv.id, sess: sv.session, sts: sv.startTS, cts: sv.commitTS}, true, nil
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

// putSegment writes seg to the store as segment id.
func (c *Checker) putSegment(id int64, seg *segment) error {
	w, err := c.cfg.Store.Create(id)
	if err != nil {
		return err
	}
	c.segBuf, err = writeSegment(w, c.segBuf, seg)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// getSegment reads segment id back from the store and decodes it.
func (c *Checker) getSegment(id int64) (*segment, error) {
	r, err := c.cfg.Store.Open(id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if c.segReader == nil {
		c.segReader = bufio.NewReaderSize(r, 256<<10)
	} else {
		c.segReader.Reset(r)
	}
	seg, err := decodeSegment(c.segReader)
	c.segReader.Reset(nil)
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", id, err)
	}
	return seg, nil
}
