package aion

import (
	"sort"

	"github.com/isoscope/isoscope/internal/history"
)

// op is one operation of a transaction, on the checker's key table. A
// delete is a write of null.
type op struct {
	kind history.OpKind
	key  int32
	val  history.Value
}

// txn is a committed transaction in memory.
type txn struct {
	id   history.Value
	sess int32
	// sts and cts are its timestamps; under SI a start_ts above the
	// commit_ts is lowered to it (and reported).
	sts, cts uint64
	line     int
	ops      []op
	// deadline is when its Ext verdict becomes final (Unix nanoseconds);
	// bad counts its external reads that disagree with their snapshot
	// now; final says the verdict is final.
	deadline int64
	bad      int32
	final    bool
	// readers counts its entries in the keys' reader lists.
	readers int32
	// cp and sp are its commit and snapshot positions.
	cp, sp pos
}

// Event classes at one timestamp, Chronos's replay order: commits of
// transactions that started earlier, then transactions that start and
// commit at that very timestamp, then starts. Within a class, ids order
// the events (Chronos orders them by file position; a generated history's
// ids follow it).
const (
	classCommit uint8 = iota
	classInstant
	classStart
)

// pos is a position in the replay order: the timestamp, then the class
// and the id packed in lo (the class in the top two bits; an integer id
// offset by 2^60 below bit 61, a string id as bit 61 with the string in
// s), which orders ids as history.Compare does.
type pos struct {
	ts uint64
	lo uint64
	s  string
}

// idLimit bounds the integer ids the packing takes (Add refuses others).
const idLimit = 1 << 60

func mkPos(ts uint64, cls uint8, id history.Value) pos {
	p := pos{ts: ts, lo: uint64(cls) << 62}
	if id.Kind == history.String {
		p.lo |= 1 << 61
		p.s = id.S
		return p
	}
	p.lo |= uint64(id.N + idLimit)
	return p
}

// cmpPos orders positions.
func cmpPos(a, b pos) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	case a.s < b.s:
		return -1
	case a.s > b.s:
		return 1
	}
	return 0
}

// party is what the checker knows of a transaction a finding names when it
// may no longer hold the transaction itself.
type party struct {
	id       history.Value
	sess     int32
	sts, cts uint64
}

// instant reports whether a transaction with these timestamps starts and
// commits as one event.
func instant(sts, cts uint64) bool { return sts == cts }

// commitPos is the position of a commit (ser: Aion-SER, where every
// transaction is one event at its commit).
func commitPos(ser bool, id history.Value, sts, cts uint64) pos {
	switch {
	case ser:
		return mkPos(cts, classCommit, id)
	case instant(sts, cts):
		return mkPos(cts, classInstant, id)
	}
	return mkPos(cts, classCommit, id)
}

// startPos is the position of a start under SI.
func startPos(id history.Value, sts, cts uint64) pos {
	if instant(sts, cts) {
		return mkPos(sts, classInstant, id)
	}
	return mkPos(sts, classStart, id)
}

// place computes t's positions, once its timestamps are final.
func (t *txn) place(ser bool) {
	t.cp = commitPos(ser, t.id, t.sts, t.cts)
	if ser {
		t.sp = t.cp
	} else {
		t.sp = startPos(t.id, t.sts, t.cts)
	}
}

// commitPos is t's commit position (under the checker's level).
func (t *txn) commitPos(bool) pos { return t.cp }

// snapPos is where t's snapshot is taken: its start under SI, its commit
// under SER.
func (t *txn) snapPos(bool) pos { return t.sp }

// snapTS is the timestamp of snapPos.
func (t *txn) snapTS(ser bool) uint64 {
	if ser {
		return t.cts
	}
	return t.sts
}

func (t *txn) party() party { return party{id: t.id, sess: t.sess, sts: t.sts, cts: t.cts} }

// version is one committed version of a key: the final write of its
// transaction.
type version struct {
	sess     int32
	sts, cts uint64
	val      history.Value
	// cp is its commit position.
	cp pos
}

func (v *version) commitPos(bool) pos { return v.cp }

// ID is the id of the version's writer, unpacked from its position.
func (v *version) ID() history.Value { return v.cp.id() }

// id unpacks the transaction id of a position.
func (p pos) id() history.Value {
	if p.lo&(1<<61) != 0 {
		return history.StringValue(p.s)
	}
	return history.IntValue(int64(p.lo&(1<<61-1)) - idLimit)
}

func (v *version) party() party { return party{id: v.ID(), sess: v.sess, sts: v.sts, cts: v.cts} }

// reader is an external read of a transaction whose Ext verdict is
// pending: operation op of t, and whether it disagrees with its snapshot.
type reader struct {
	sp  pos
	t   *txn
	op  int32
	bad bool
}

// keyState is one key's versioned frontier and pending readers.
type keyState struct {
	// vers are the versions in memory, in commit order; spilled ones
	// precede them.
	vers []version
	// readers are the pending external reads of the key, by snapshot
	// position (entries of transactions whose verdict became final are
	// dropped lazily).
	readers []reader
	// maxDur bounds commit_ts - start_ts over the key's writers, so that
	// the overlap search stops.
	maxDur uint64
}

// versionAt returns the index of the first version at or after p.
func (c *Checker) versionAt(k int32, p pos) int {
	vs := c.ks[k].vers
	return searchBack(len(vs), func(i int) bool { return cmpPos(vs[i].cp, p) >= 0 })
}

// searchBack is sort.Search for the common case of an answer near the
// end: it gallops back from the end (1, 2, 4, … elements) to bracket the
// answer, then searches the bracket.
func searchBack(n int, f func(int) bool) int {
	hi, step := n, 1
	for {
		lo := hi - step
		if lo <= 0 {
			return sort.Search(hi, f)
		}
		if !f(lo) {
			return lo + 1 + sort.Search(hi-lo-1, func(i int) bool { return f(lo + 1 + i) })
		}
		hi, step = lo, 2*step
	}
}

// frontier returns the version of k a snapshot at p sees (nil: the
// initial state).
func (c *Checker) frontier(k int32, p pos) *version {
	i := c.versionAt(k, p)
	if i == 0 {
		return nil
	}
	return &c.ks[k].vers[i-1]
}

// frontierValue is the state of k a snapshot at p sees.
func (c *Checker) frontierValue(k int32, p pos) history.Value {
	if v := c.frontier(k, p); v != nil {
		return v.val
	}
	return c.keyInit[k]
}

// readerAfter returns the index of the first reader of k whose snapshot is
// after p.
func (c *Checker) readerAfter(k int32, p pos) int {
	rs := c.ks[k].readers
	return searchBack(len(rs), func(i int) bool { return cmpPos(rs[i].sp, p) > 0 })
}

// Memory estimates, in bytes.
const (
	txnBytes     = 240
	opBytes      = 56
	versionBytes = 128
	readerBytes  = 64
)

func (t *txn) bytes() int64 {
	n := int64(txnBytes + opBytes*len(t.ops) + len(t.id.S))
	for _, o := range t.ops {
		n += int64(len(o.val.S))
	}
	return n
}
