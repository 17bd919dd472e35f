package aion

import (
	"sort"
	"strings"
	"unsafe"

	"github.com/isoscope/isoscope/internal/history"
)

// txn is a committed transaction in memory. Its operations are kept
// encoded (enc; see encodeOps), a fifth of their decoded size: the
// checks at its arrival work on the decoded operations, and afterwards
// only a finding that names it decodes them again.
type txn struct {
	id   history.Value
	sess int32
	// line is its input line (0 when unknown).
	line int32
	// sts and cts are its timestamps; under SI a start_ts above the
	// commit_ts is lowered to it (and reported).
	sts, cts uint64
	enc      []byte
	// nops is how many operations enc holds.
	nops int32
	// seq numbers the committed transactions in arrival order: verdicts
	// become final in that order, so a reader entry is final exactly when
	// its seq is below the checker's finalSeq.
	seq uint64
	// deadline is when its Ext verdict becomes final (Unix nanoseconds);
	// bad counts its external reads that disagree with their snapshot
	// now; final says the verdict is final.
	deadline int64
	bad      int32
	final    bool
	// readers counts its entries in the keys' reader lists.
	readers int32
}

// ops decodes t's operations.
func (t *txn) ops() []op { return decodeOps(nil, t.enc) }

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

// idLimit bounds the integer ids the packing takes (Add refuses others);
// strID marks a string id.
const (
	idLimit = 1 << 60
	strID   = 1 << 61
)

func mkPos(ts uint64, cls uint8, id history.Value) pos {
	p := pos{ts: ts, lo: uint64(cls) << 62}
	if id.Kind == history.String {
		p.lo |= strID
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

// commitPos is t's commit position (ser: under serializability).
func (t *txn) commitPos(ser bool) pos { return commitPos(ser, t.id, t.sts, t.cts) }

// snapPos is where t's snapshot is taken: its start under SI, its commit
// under SER.
func (t *txn) snapPos(ser bool) pos {
	if ser {
		return t.commitPos(true)
	}
	return startPos(t.id, t.sts, t.cts)
}

// snapTS is the timestamp of snapPos.
func (t *txn) snapTS(ser bool) uint64 {
	if ser {
		return t.cts
	}
	return t.sts
}

func (t *txn) party() party { return party{id: t.id, sess: t.sess, sts: t.sts, cts: t.cts} }

// version is one committed version of a key: the final write of its
// transaction, in 48 bytes. Its commit position is (cts, lo) and, for a
// string id, the id in strs; its value is kind and n, or the string in
// strs. strs is nil unless the id or the value is a string.
type version struct {
	cts, lo, sts uint64
	n            int64
	sess         int32
	kind         history.ValueKind
	strs         *versionStrings
}

// versionStrings holds what of a version is a string, and a list key's
// version's elements: what its transaction appended, in order.
type versionStrings struct {
	id, val string
	elems   []history.Value
}

// newVersion makes the version committed at cp, by a transaction of
// session sess that started at sts, with value val (a value key) or the
// elements elems appended (a list key).
func newVersion(cp pos, sts uint64, sess int32, val history.Value, elems []history.Value) version {
	v := version{cts: cp.ts, lo: cp.lo, sts: sts, n: val.N, sess: sess, kind: val.Kind}
	if cp.s != "" || val.S != "" || elems != nil {
		v.strs = &versionStrings{id: cp.s, val: val.S, elems: elems}
	}
	return v
}

// elems is what v's transaction appended to its list key.
func (v *version) elems() []history.Value {
	if v.strs == nil {
		return nil
	}
	return v.strs.elems
}

// pos is v's commit position.
func (v *version) pos() pos {
	p := pos{ts: v.cts, lo: v.lo}
	if v.strs != nil {
		p.s = v.strs.id
	}
	return p
}

// value is v's value.
func (v *version) value() history.Value {
	val := history.Value{Kind: v.kind, N: v.n}
	if v.strs != nil {
		val.S = v.strs.val
	}
	return val
}

// ID is the id of the version's writer, unpacked from its position.
func (v *version) ID() history.Value { return v.pos().id() }

// id unpacks the transaction id of a position.
func (p pos) id() history.Value {
	if p.lo&strID != 0 {
		return history.StringValue(p.s)
	}
	return history.IntValue(int64(p.lo&(1<<61-1)) - idLimit)
}

func (v *version) party() party { return party{id: v.ID(), sess: v.sess, sts: v.sts, cts: v.cts} }

// reader is an external read of a transaction t whose Ext verdict is
// pending: its operation op, which read a value of this kind and integer
// n (a string is found in t's operations), and whether that disagrees with
// its snapshot now. ts and lo are t's snapshot position but for the text
// of a string id, and seq is t's: a reader holds no pointer, so that the
// collector never scans the keys' reader arrays, and finds t, while it is
// pending, by seq (Checker.pending).
type reader struct {
	ts, lo uint64
	seq    uint64
	n      int64
	op     int32
	kind   history.ValueKind
	bad    bool
	// list marks a read of a list key: it must return the list, followed
	// by the n elements its transaction appended before it.
	list bool
}

// pending returns the transaction with arrival number seq when its
// verdict is pending, nil when it is final: the pending transactions are
// queue[qhead:], numbered from finalSeq on.
func (c *Checker) pending(seq uint64) *txn {
	if seq < c.finalSeq {
		return nil
	}
	return c.queue[c.qhead+int(seq-c.finalSeq)]
}

// value is the value r, a pending reader, read.
func (c *Checker) value(r *reader) history.Value {
	if r.kind == history.String {
		return c.pending(r.seq).ops()[r.op].val
	}
	return history.Value{Kind: r.kind, N: r.n}
}

// cmpReader orders reader r's snapshot against position p. Two string ids
// at one timestamp and class compare by their text, which a reader leaves
// to its transaction: when that is no longer pending, cmpReader answers 0
// and sets deadTie.
func (c *Checker) cmpReader(r *reader, p pos) int {
	switch {
	case r.ts < p.ts, r.ts == p.ts && r.lo < p.lo:
		return -1
	case r.ts > p.ts, r.lo > p.lo:
		return 1
	case r.lo&strID == 0:
		return 0
	}
	t := c.pending(r.seq)
	if t == nil {
		c.deadTie = true
		return 0
	}
	return strings.Compare(t.id.S, p.s)
}

// Key kinds, once an operation says: a key holds values (writes and
// deletes) or a list (appends and list reads), never both.
const (
	kvKey   uint8 = 1
	listKey uint8 = 2
)

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
	// lastTS and lastVal are the commit timestamp and value of the last
	// version in memory (when vers is not empty): most snapshots and
	// commits come after it, and are answered here without reaching vers.
	lastTS  uint64
	lastVal history.Value
	// maxReaderTS bounds the snapshot timestamps of readers from above: a
	// commit after it affects no reader.
	maxReaderTS uint64
}

// syncLast refreshes lastTS and lastVal after vers changed.
func (ks *keyState) syncLast() {
	if n := len(ks.vers); n > 0 {
		ks.lastTS, ks.lastVal = ks.vers[n-1].cts, ks.vers[n-1].value()
	}
}

// versionAt returns the index of the first version at or after p.
func (c *Checker) versionAt(k int32, p pos) int {
	ks := &c.ks[k]
	vs := ks.vers
	if len(vs) == 0 || ks.lastTS < p.ts {
		return len(vs)
	}
	return searchBack(len(vs), func(i int) bool { return cmpPos(vs[i].pos(), p) >= 0 })
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
	if ks := &c.ks[k]; len(ks.vers) > 0 && ks.lastTS < p.ts {
		return ks.lastVal
	}
	if v := c.frontier(k, p); v != nil {
		return v.value()
	}
	return c.keyInit[k]
}

// readerAfter returns the index of the first reader of k whose snapshot is
// after p.
func (c *Checker) readerAfter(k int32, p pos) int {
	ks := &c.ks[k]
	rs := ks.readers
	if len(rs) == 0 || ks.maxReaderTS < p.ts {
		return len(rs)
	}
	c.deadTie = false
	i := searchBack(len(rs), func(i int) bool { return c.cmpReader(&rs[i], p) > 0 })
	if c.deadTie {
		// A final reader the search could not place: drop the final
		// ones and search the pending ones alone.
		c.trimReaders(ks)
		rs = ks.readers
		i = searchBack(len(rs), func(i int) bool { return c.cmpReader(&rs[i], p) > 0 })
	}
	return i
}

// Memory estimates, in bytes: a transaction (with its entries in the
// id table, the queue and the finals), and an element of the keys'
// version and reader arrays, which are counted by capacity.
const (
	txnBytes     = 112 + 48 + 16
	versionBytes = int64(unsafe.Sizeof(version{}))
	readerBytes  = int64(unsafe.Sizeof(reader{}))
)

func (t *txn) bytes() int64 {
	return int64(txnBytes + cap(t.enc) + len(t.id.S))
}
