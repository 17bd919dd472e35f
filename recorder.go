package isoscope

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/history"
)

// RecorderOptions configure a Recorder. The zero value records in memory
// only, from an initial state where every key is absent.
type RecorderOptions struct {
	// Stream, when not nil, receives the history in isoscope's own format
	// (docs/history-format.md) as it is recorded: the header line when
	// the Recorder is made, then each transaction's line when it ends,
	// each line in one Write call. A program that dies loses at most the
	// line being written, which `isoscope check` leaves out as torn.
	Stream io.Writer
	// Initial is the state before the first transaction: these keys hold
	// these values, every other key is absent.
	Initial []KV
	// Source describes what produced the history (the database, its
	// isolation level, the program); it goes into the header.
	Source string
	// StreamOnly keeps no transaction in memory, for long runs that only
	// stream: History then fails.
	StreamOnly bool
}

// A Recorder records the history of a concurrent program's transactions
// as they run: Begin starts a transaction in a session and returns its
// handle, the handle records each operation with its result, and Commit,
// Abort or Unknown ends it. A Recorder is safe for use by many goroutines;
// each transaction handle belongs to the goroutine that runs it.
//
// Instants come from one monotonic clock: the wall clock read once when
// the Recorder is made, advanced by Go's monotonic clock. A transaction's
// begin instant is taken by Begin, before its first request, and its end
// instant by Commit, Abort or Unknown, after its last response; so a
// transaction that ended before another began precedes it in real time,
// as strict serializability asks.
//
// Transactions are numbered from 1 in the order they began; a session's
// transactions run one after another, in the order they began. A
// transaction that ends having recorded no operation is left out: it read
// and wrote nothing, so it constrains nothing.
type Recorder struct {
	mono   time.Time // the monotonic base
	wall   int64     // the wall clock at mono, in nanoseconds
	nextID atomic.Int64

	mu       sync.Mutex
	h        *history.History // keys, sessions and, unless StreamOnly, the transactions
	stream   *native.Writer
	keep     bool
	sessions map[history.Value]int32
	open     map[history.Value]int64 // session → id of its open transaction
	versions map[history.KeyID][]version
	keyKind  history.ValueKind
	hasKeys  bool
	err      error // the first failure: a stream write or a misuse
}

// version is a white-box hint: transaction txn installed version n of a key.
type version struct {
	n   uint64
	txn history.Value
}

// NewRecorder returns a Recorder. With a Stream, it writes the header line
// there at once; an error is that write's.
func NewRecorder(o RecorderOptions) (*Recorder, error) {
	r := &Recorder{mono: time.Now(), h: history.New(), keep: !o.StreamOnly,
		sessions: map[history.Value]int32{}, open: map[history.Value]int64{}}
	r.wall = r.mono.UnixNano()
	r.h.Header.Present = true
	r.h.Header.Version = 1
	r.h.Header.Source = o.Source
	if len(o.Initial) > 0 {
		r.h.Header.Initial.Values = make(map[history.KeyID]history.Value, len(o.Initial))
		for _, kv := range o.Initial {
			if err := r.checkKey(kv.Key.v); err != nil {
				return nil, fmt.Errorf("initial: %w", err)
			}
			r.h.Header.Initial.Values[r.h.Key(kv.Key.v)] = kv.Value.v
		}
	}
	if o.Stream != nil {
		w, err := native.NewWriter(o.Stream, r.h)
		if err != nil {
			return nil, err
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		r.stream = w
	}
	return r, nil
}

// Now returns the Recorder's clock: nanoseconds since the Unix epoch, read
// from the wall clock once and advanced monotonically since.
func (r *Recorder) Now() int64 { return r.wall + int64(time.Since(r.mono)) }

// Begin starts a transaction in session (which must not be null) and
// takes its begin instant. A session runs one transaction at a time:
// beginning a second one while the first is open is a misuse, which the
// returned transaction's end (and Err) reports.
func (r *Recorder) Begin(session Value) *Tx {
	t := &Tx{r: r, id: r.nextID.Add(1), session: session.v}
	t.ops, t.keys = t.opBuf[:0], t.keyBuf[:0]
	r.mu.Lock()
	switch prev, busy := r.open[session.v]; {
	case session.IsNull():
		t.misuse = errors.New("a transaction needs a session, not null")
	case busy:
		t.misuse = fmt.Errorf("session %v began transaction %d while its transaction %d was open", session, t.id, prev)
	default:
		r.open[session.v] = t.id
	}
	if t.misuse != nil {
		r.failLocked(t.misuse)
	}
	r.mu.Unlock()
	t.begin = r.Now()
	return t
}

// Err returns the first failure the Recorder met: a write to the stream
// that failed, or a misuse (a second transaction begun in a busy session,
// an operation recorded after its transaction ended, keys of two kinds).
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// History returns the history of the transactions ended so far, with the
// version order the hints (Tx.Version) give, validated as a history file
// is. It fails if a transaction is still open (end it first), if the
// Recorder met a failure (Err), or with StreamOnly.
func (r *Recorder) History() (*History, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	if !r.keep {
		return nil, errors.New("the recorder keeps no history (StreamOnly)")
	}
	if len(r.open) > 0 {
		ids := make([]int64, 0, len(r.open))
		for _, id := range r.open {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return nil, fmt.Errorf("%d transactions still open (the first: %d): end each with Commit, Abort or Unknown", len(ids), ids[0])
	}
	h := *r.h
	h.Txns = slices.Clone(r.h.Txns)
	h.Keys = slices.Clone(r.h.Keys)
	h.Sessions = slices.Clone(r.h.Sessions)
	if len(r.versions) > 0 {
		ids := make(map[history.Value]history.TxnID, len(h.Txns))
		for i := range h.Txns {
			ids[h.Txns[i].ID] = history.TxnID(i)
		}
		h.Header.VersionOrder = make(map[history.KeyID][]history.TxnID, len(r.versions))
		for k, vs := range r.versions {
			vs = slices.Clone(vs)
			slices.SortFunc(vs, func(a, b version) int { return cmpUint(a.n, b.n) })
			order := make([]history.TxnID, 0, len(vs))
			for i, v := range vs {
				if i > 0 && vs[i-1].n == v.n {
					return nil, fmt.Errorf("key %v: transactions %v and %v both installed version %d", h.Keys[k], vs[i-1].txn, v.txn, v.n)
				}
				if id, ok := ids[v.txn]; ok { // an empty transaction, left out, has no version
					order = append(order, id)
				}
			}
			h.Header.VersionOrder[k] = order
		}
	}
	return validated(&h, func(line int) string { return "transaction " + h.Txns[line].ID.String() })
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkKey refuses a key of the other kind than the keys before it: a
// history has integer keys or string keys. Callers hold r.mu (or own r).
func (r *Recorder) checkKey(k history.Value) error {
	if k.IsNull() {
		return errors.New("a key cannot be null")
	}
	if !r.hasKeys {
		r.keyKind, r.hasKeys = k.Kind, true
		return nil
	}
	if k.Kind != r.keyKind {
		return fmt.Errorf("key %v is of another kind than the keys before it: a history has integer keys or string keys, not both", Value{k})
	}
	return nil
}

// A Tx is one transaction being recorded: its operations in the order the
// program issued them, each with its result. A Tx belongs to the goroutine
// that runs the transaction; it records nothing after it ended.
type Tx struct {
	r       *Recorder
	id      int64
	session history.Value
	begin   int64
	ops     []history.Op
	// keys are the operations' keys, in order: one per keyed operation,
	// one per pair of a range's result.
	keys              []history.Value
	startTS, commitTS uint64
	hasStart, hasCmt  bool
	versions          []keyVersion
	ended             bool
	misuse            error
	// opBuf and keyBuf hold the first operations and keys, so that a
	// short transaction allocates only its Tx.
	opBuf  [4]history.Op
	keyBuf [4]history.Value
}

type keyVersion struct {
	key history.Value
	n   uint64
}

// ID returns the transaction's id in the history.
func (t *Tx) ID() Value { return Int(t.id) }

// add records op on key (Null for a range operation).
func (t *Tx) add(op history.Op, key Value) {
	if t.ended {
		if t.misuse == nil {
			t.misuse = fmt.Errorf("transaction %d: an operation recorded after the transaction ended", t.id)
			t.r.fail(t.misuse)
		}
		return
	}
	if op.Kind.IsRange() {
		op.Key = history.NoKey
	} else {
		t.keys = append(t.keys, key.v)
	}
	t.ops = append(t.ops, op)
}

// Read records a read of key that returned value (Null: the key was
// absent).
func (t *Tx) Read(key, value Value) { t.add(history.Op{Kind: history.Read, Value: value.v}, key) }

// ReadForUpdate records a locking read (SELECT … FOR UPDATE) of key that
// returned value.
func (t *Tx) ReadForUpdate(key, value Value) {
	t.add(history.Op{Kind: history.Read, Value: value.v, Lock: true}, key)
}

// Write records a write of value to key (an insert or an update).
func (t *Tx) Write(key, value Value) { t.add(history.Op{Kind: history.Write, Value: value.v}, key) }

// Delete records a delete of key.
func (t *Tx) Delete(key Value) { t.add(history.Op{Kind: history.Delete}, key) }

// Append records the append of elem to the list at key.
func (t *Tx) Append(key, elem Value) { t.add(history.Op{Kind: history.Append, Value: elem.v}, key) }

// ReadList records a read of the whole list at key that returned list
// (none: the list was empty or absent).
func (t *Tx) ReadList(key Value, list ...Value) {
	op := history.Op{Kind: history.ReadList}
	if len(list) > 0 {
		op.List = make([]history.Value, len(list))
		for i, e := range list {
			op.List[i] = e.v
		}
	}
	t.add(op, key)
}

// Scan records a range query over lo <= key < hi (hi Null: no upper
// bound) that returned exactly pairs, in ascending key order: every key
// of the range present in its snapshot.
func (t *Tx) Scan(lo, hi Value, pairs []KV) { t.addRange(history.Scan, lo, hi, pairs) }

// Iter records an iterator over lo <= key < hi (hi Null: no upper bound)
// advanced len(pairs) times: pairs are the first keys present in the
// range, in ascending order; nothing is claimed about the keys after the
// last.
func (t *Tx) Iter(lo, hi Value, pairs []KV) { t.addRange(history.Iter, lo, hi, pairs) }

func (t *Tx) addRange(kind history.OpKind, lo, hi Value, pairs []KV) {
	rg := &history.Range{Lo: lo.v, Hi: hi.v, HiOpen: hi.IsNull(), Pairs: make([]history.KV, len(pairs))}
	if !t.ended {
		for i, p := range pairs {
			rg.Pairs[i].Value = p.Value.v
			t.keys = append(t.keys, p.Key.v)
		}
	}
	t.add(history.Op{Kind: kind, Range: rg}, Null)
}

// StartTS records the database's timestamp of the transaction's snapshot
// (white-box: the timestamp checkers decide by it).
func (t *Tx) StartTS(ts uint64) { t.startTS, t.hasStart = ts, true }

// CommitTS records the database's commit timestamp of the transaction.
func (t *Tx) CommitTS(ts uint64) { t.commitTS, t.hasCmt = ts, true }

// Version records that the transaction's write of key installed version
// n of it (white-box: a row version, a revision). The writers of each key,
// ordered by their versions, are the version order of the History the
// Recorder hands back; the stream, whose header is written first, does
// not carry it. A second hint for the same key replaces the first.
func (t *Tx) Version(key Value, n uint64) {
	for i := range t.versions {
		if t.versions[i].key == key.v {
			t.versions[i].n = n
			return
		}
	}
	t.versions = append(t.versions, keyVersion{key.v, n})
}

// Commit ends the transaction as committed (the client saw the commit
// succeed) and takes its end instant.
func (t *Tx) Commit() error { return t.end(history.Committed) }

// Abort ends the transaction as aborted (the client saw it roll back; it
// took no effect).
func (t *Tx) Abort() error { return t.end(history.Aborted) }

// Unknown ends the transaction with its outcome unknown (the client lost
// the commit's answer: it may or may not have taken effect).
func (t *Tx) Unknown() error { return t.end(history.Unknown) }

// end records the transaction with status s: in memory and as a line of
// the stream. The error is a misuse of this transaction or the stream's
// write error.
func (t *Tx) end(s history.Status) error {
	endAt := t.r.Now()
	r := t.r
	if t.ended {
		err := fmt.Errorf("transaction %d ended twice", t.id)
		r.fail(err)
		return err
	}
	t.ended = true
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.misuse != nil {
		r.failLocked(t.misuse)
		return t.misuse
	}
	delete(r.open, t.session)
	if len(t.ops) == 0 {
		return nil
	}
	for _, k := range t.keys {
		if err := r.checkKey(k); err != nil {
			err = fmt.Errorf("transaction %d: %w", t.id, err)
			r.failLocked(err)
			return err
		}
	}
	si, ok := r.sessions[t.session]
	if !ok {
		si = int32(len(r.h.Sessions))
		r.sessions[t.session] = si
		r.h.Sessions = append(r.h.Sessions, t.session)
	}
	x := history.Txn{ID: history.IntValue(t.id), Session: si, Status: s, Begin: t.begin, End: endAt, HasTime: true,
		StartTS: t.startTS, CommitTS: t.commitTS, HasStartTS: t.hasStart, HasCommitTS: t.hasCmt, Ops: t.ops}
	ki := 0
	for i := range x.Ops {
		op := &x.Ops[i]
		if op.Range == nil {
			op.Key = r.h.Key(t.keys[ki])
			ki++
			continue
		}
		for j := range op.Range.Pairs {
			op.Range.Pairs[j].Key = r.h.Key(t.keys[ki])
			ki++
		}
	}
	for _, v := range t.versions {
		if err := r.checkKey(v.key); err != nil {
			err = fmt.Errorf("transaction %d: version hint: %w", t.id, err)
			r.failLocked(err)
			return err
		}
		if r.versions == nil {
			r.versions = map[history.KeyID][]version{}
		}
		k := r.h.Key(v.key)
		r.versions[k] = append(r.versions[k], version{v.n, x.ID})
	}
	if r.keep {
		kept := x
		kept.Ops = slices.Clone(x.Ops) // not the Tx's buffer: the Tx is not kept
		r.h.Txns = append(r.h.Txns, kept)
	}
	if r.stream != nil && r.err == nil {
		err := r.stream.WriteTxn(&x)
		if err == nil {
			err = r.stream.Flush()
		}
		if err != nil {
			r.err = fmt.Errorf("writing the history: %w", err)
			return r.err
		}
	}
	return nil
}

// fail records err as the Recorder's failure, unless it has one.
func (r *Recorder) fail(err error) {
	r.mu.Lock()
	r.failLocked(err)
	r.mu.Unlock()
}

func (r *Recorder) failLocked(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Bytes returns b as a string Value, for recording a client whose keys
// and values are bytes: b itself when it is valid UTF-8, otherwise
// "base64:" and b in standard base64 (a history's strings are Unicode).
// Only valid UTF-8 keys keep their byte order in the history.
func Bytes(b []byte) Value {
	if utf8.Valid(b) {
		return Str(string(b))
	}
	return Str("base64:" + base64.StdEncoding.EncodeToString(b))
}
