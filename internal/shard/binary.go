package shard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/isoscope/isoscope/internal/history"
)

// The binary form of a message of pieces: what a worker reads without
// parsing JSON. A message of JSON lines (the history format, one piece a
// line, its places in the message's header) is still read: a message in
// the binary form starts with a NUL byte, which no line of JSON does.
//
//	magic    "\x00ISP"
//	version  1 byte: Version
//	flags    1 byte: 0 (what a later version may set)
//	keys     uvarint K, then K values: the message's key table
//	sessions uvarint S, then S values: its session labels
//	pieces   uvarint N, then N pieces
//
// A piece is its transaction's id (a value), its session (uvarint, an
// index below S), a byte of flags (the status in bits 0-1, start_ts
// present in bit 2, commit_ts in bit 3, places in bit 4), the timestamps
// present (uvarints), the number of pieces of its transaction (uvarint),
// its operations (uvarint count, then each: a byte of kind, bit 7 set for
// a locking read; its key, a uvarint index below K; its value; for a list
// read, a uvarint length and the elements), and, when bit 4 is set, each
// operation's index in its transaction (uvarints). A value is a kind byte
// (0 null, 1 integer, 2 string), then a zig-zag varint or a uvarint length
// and the bytes.
const (
	// Magic starts every message in the binary form.
	Magic = "\x00ISP"
	// Version is the version of the binary form this code writes and
	// reads.
	Version = 1
	// Encoding is the binary form's name in a message's
	// Isoscope-Encoding header.
	Encoding = "isoscope-pieces/1"
)

// Piece flags.
const (
	flagStatus   = 0x03
	flagStartTS  = 0x04
	flagCommitTS = 0x08
	flagPlaces   = 0x10
	opLock       = 0x80
)

// IsBinary says whether a message's payload is in the binary form (it
// starts with the magic's NUL byte), whatever its version.
func IsBinary(b []byte) bool { return len(b) > 0 && b[0] == 0 }

// Encoder writes pieces in the binary form, one message at a time: Add
// each piece, then Append the message and Reset.
type Encoder struct {
	keys, sessions []history.Value
	keyIdx         map[history.Value]uint32
	sessIdx        map[history.Value]uint32
	body           []byte
	n              int
}

// Add appends the piece p of t (of h) to the message: t's id, session,
// status and timestamps (not the client's instants) with the piece's
// operations (a session piece: the transaction's first operation only).
func (e *Encoder) Add(h *history.History, t *history.Txn, p *Piece) error {
	if e.keyIdx == nil {
		e.keyIdx, e.sessIdx = map[history.Value]uint32{}, map[history.Value]uint32{}
	}
	nops := len(p.Ops)
	if p.ID.Kind == Sessions {
		nops = min(1, len(t.Ops))
	}
	if nops == 0 && t.Status == history.Committed {
		return fmt.Errorf("transaction %s (line %d) commits no operations: the history format holds none", t.ID, t.Line)
	}
	if t.Session < 0 || int(t.Session) >= len(h.Sessions) {
		return fmt.Errorf("transaction %s (line %d): session %d outside the history's session table", t.ID, t.Line, t.Session)
	}
	b := appendValue(e.body, t.ID)
	b = binary.AppendUvarint(b, uint64(intern(&e.sessions, e.sessIdx, h.Sessions[t.Session])))
	flags := byte(t.Status) & flagStatus
	if t.HasStartTS {
		flags |= flagStartTS
	}
	if t.HasCommitTS {
		flags |= flagCommitTS
	}
	placed := p.ID.Kind == Keys && !isPrefix(p.Ops)
	if placed {
		flags |= flagPlaces
	}
	b = append(b, flags)
	if t.HasStartTS {
		b = binary.AppendUvarint(b, t.StartTS)
	}
	if t.HasCommitTS {
		b = binary.AppendUvarint(b, t.CommitTS)
	}
	b = binary.AppendUvarint(b, uint64(p.Of))
	b = binary.AppendUvarint(b, uint64(nops))
	for i := range nops {
		j := i
		if p.ID.Kind == Keys {
			j = p.Ops[i]
		}
		o := &t.Ops[j]
		if o.Key < 0 || int(o.Key) >= len(h.Keys) {
			return fmt.Errorf("transaction %s (line %d): ops[%d] uses a key outside the history's key table", t.ID, t.Line, j)
		}
		kind := byte(o.Kind)
		if o.Lock {
			kind |= opLock
		}
		b = append(b, kind)
		b = binary.AppendUvarint(b, uint64(intern(&e.keys, e.keyIdx, h.Keys[o.Key])))
		b = appendValue(b, o.Value)
		if o.Kind == history.ReadList {
			b = binary.AppendUvarint(b, uint64(len(o.List)))
			for _, v := range o.List {
				b = appendValue(b, v)
			}
		}
	}
	if placed {
		for _, j := range p.Ops {
			b = binary.AppendUvarint(b, uint64(j))
		}
	}
	e.body = b
	e.n++
	return nil
}

// intern returns v's index in table, adding it.
func intern(table *[]history.Value, idx map[history.Value]uint32, v history.Value) uint32 {
	i, ok := idx[v]
	if !ok {
		i = uint32(len(*table))
		*table = append(*table, v)
		idx[v] = i
	}
	return i
}

// Pieces is the number of pieces added since the last Reset.
func (e *Encoder) Pieces() int { return e.n }

// Size is about the message's size in bytes so far.
func (e *Encoder) Size() int { return len(e.body) + 8*(len(e.keys)+len(e.sessions)) }

// Append appends the message of the pieces added to b.
func (e *Encoder) Append(b []byte) []byte {
	b = append(b, Magic...)
	b = append(b, Version, 0)
	for _, table := range [][]history.Value{e.keys, e.sessions} {
		b = binary.AppendUvarint(b, uint64(len(table)))
		for _, v := range table {
			b = appendValue(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(e.n))
	return append(b, e.body...)
}

// Reset empties the message.
func (e *Encoder) Reset() {
	e.keys, e.sessions, e.body, e.n = e.keys[:0], e.sessions[:0], e.body[:0], 0
	clear(e.keyIdx)
	clear(e.sessIdx)
}

// appendValue appends v's encoding.
func appendValue(b []byte, v history.Value) []byte {
	b = append(b, byte(v.Kind))
	switch v.Kind {
	case history.Int:
		b = binary.AppendVarint(b, v.N)
	case history.String:
		b = binary.AppendUvarint(b, uint64(len(v.S)))
		b = append(b, v.S...)
	}
	return b
}

// Batch is a message of pieces read back: a history holding the message's
// keys and sessions, and its pieces as transactions of it (their Line the
// piece's place in the message, from 1).
type Batch struct {
	History *history.History
	Txns    []history.Txn
	// Of is, for each piece, the number of pieces of its transaction.
	Of []int32
	// places holds each piece's operations' indexes in its transaction
	// (placeAt[i] to placeAt[i+1]), none for a piece whose operations
	// are its transaction's first.
	places  []int32
	placeAt []int32
	// ops is the array of the pieces' operations, kept for the next
	// Decode.
	ops []history.Op
}

// Places returns the indexes in its transaction of the operations of
// piece i, or nil when they are the transaction's first operations.
func (b *Batch) Places(i int) []int32 {
	p := b.places[b.placeAt[i]:b.placeAt[i+1]]
	if len(p) == 0 {
		return nil
	}
	return p
}

// errTruncated is a message that ends inside a piece or a table.
var errTruncated = errors.New("the message ends early")

// decoder reads a message in the binary form.
type decoder struct {
	b   []byte
	off int
}

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		if n == 0 {
			return 0, errTruncated
		}
		return 0, errors.New("a number overflows 64 bits")
	}
	d.off += n
	return v, nil
}

// count reads a uvarint that counts things of at least min bytes each,
// which the rest of the message must be able to hold.
func (d *decoder) count(what string, min int) (int, error) {
	v, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if v > uint64(len(d.b)-d.off)/uint64(min) {
		return 0, fmt.Errorf("%d %s cannot fit in the %d bytes left", v, what, len(d.b)-d.off)
	}
	return int(v), nil
}

func (d *decoder) byte() (byte, error) {
	if d.off >= len(d.b) {
		return 0, errTruncated
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

func (d *decoder) value() (history.Value, error) {
	k, err := d.byte()
	if err != nil {
		return history.Value{}, err
	}
	switch history.ValueKind(k) {
	case history.Null:
		return history.NullValue, nil
	case history.Int:
		v, n := binary.Varint(d.b[d.off:])
		if n <= 0 {
			if n == 0 {
				return history.Value{}, errTruncated
			}
			return history.Value{}, errors.New("an integer overflows 64 bits")
		}
		d.off += n
		return history.IntValue(v), nil
	case history.String:
		l, err := d.count("bytes of a string", 1)
		if err != nil {
			return history.Value{}, err
		}
		s := string(d.b[d.off : d.off+l])
		d.off += l
		return history.StringValue(s), nil
	}
	return history.Value{}, fmt.Errorf("value kind %d is none of null (0), integer (1) and string (2)", k)
}

// table reads a table of values into vs's array.
func (d *decoder) table(vs []history.Value, what string) ([]history.Value, error) {
	n, err := d.count(what, 1)
	if err != nil {
		return nil, fmt.Errorf("its %s table: %w", what, err)
	}
	vs = slices.Grow(vs[:0], n)[:n]
	for i := range vs {
		if vs[i], err = d.value(); err != nil {
			return nil, fmt.Errorf("its %s table, entry %d: %w", what, i, err)
		}
	}
	return vs, nil
}

// Decode reads a message in the binary form. Its errors say what is wrong
// and where (the piece and the byte offset); a message of another version
// is refused.
func Decode(b []byte) (*Batch, error) {
	out := &Batch{}
	if err := out.Decode(b); err != nil {
		return nil, err
	}
	return out, nil
}

// Decode is the package's Decode into out, reusing its arrays: once what
// out held last is no longer read (a checker has taken its transactions,
// which it copies), decoding the next message allocates nearly nothing
// (a fresh History, and the strings of its values) — where a new batch
// for each message was most of a worker's garbage, and so of its
// collector's cycles. On an error, out holds nothing to read.
func (out *Batch) Decode(b []byte) error {
	err := out.decode(b)
	if err != nil {
		out.History, out.Txns = nil, out.Txns[:0]
	}
	return err
}

func (out *Batch) decode(b []byte) error {
	if len(b) < len(Magic)+2 || string(b[:len(Magic)]) != Magic {
		return errors.New("not a message of pieces in the binary form (no magic)")
	}
	if v := b[len(Magic)]; v != Version {
		return fmt.Errorf("binary pieces of version %d: this isoscope reads version %d", v, Version)
	}
	if f := b[len(Magic)+1]; f != 0 {
		return fmt.Errorf("binary pieces with flags %#x: version %d has none", f, Version)
	}
	d := &decoder{b: b, off: len(Magic) + 2}
	var keys, sessions []history.Value
	if out.History != nil {
		keys, sessions = out.History.Keys, out.History.Sessions
	}
	keys, err := d.table(keys, "key")
	if err != nil {
		return err
	}
	sessions, err = d.table(sessions, "session")
	if err != nil {
		return err
	}
	// A piece takes at least 6 bytes: id, session, flags, of, no ops.
	n, err := d.count("pieces", 6)
	if err != nil {
		return fmt.Errorf("its number of pieces: %w", err)
	}
	// A History of its own each time: a checker knows a batch's key
	// table by its History.
	out.History = &history.History{Keys: keys, Sessions: sessions}
	out.Txns = slices.Grow(out.Txns[:0], n)[:n]
	clear(out.Txns)
	out.Of = slices.Grow(out.Of[:0], n)[:n]
	out.places, out.placeAt = out.places[:0], append(out.placeAt[:0], 0)
	// The operations of all pieces share one array: about one an 8 bytes.
	ops := slices.Grow(out.ops[:0], (len(b)-d.off)/8+1)
	for i := range out.Txns {
		start := d.off
		if ops, err = d.piece(out, i, ops, len(keys), len(sessions)); err != nil {
			return fmt.Errorf("piece %d (byte %d): %w", i+1, start, err)
		}
	}
	out.ops = ops
	if d.off != len(b) {
		return fmt.Errorf("%d bytes after the last piece", len(b)-d.off)
	}
	return nil
}

// piece reads piece i into out, its operations appended to ops.
func (d *decoder) piece(out *Batch, i int, ops []history.Op, nkeys, nsess int) ([]history.Op, error) {
	t := &out.Txns[i]
	t.Line = i + 1
	var err error
	if t.ID, err = d.value(); err != nil {
		return ops, fmt.Errorf("its id: %w", err)
	}
	s, err := d.uvarint()
	if err != nil {
		return ops, fmt.Errorf("its session: %w", err)
	}
	if s >= uint64(nsess) {
		return ops, fmt.Errorf("session %d outside the message's %d", s, nsess)
	}
	t.Session = int32(s)
	flags, err := d.byte()
	if err != nil {
		return ops, err
	}
	if flags&^(flagStatus|flagStartTS|flagCommitTS|flagPlaces) != 0 || history.Status(flags&flagStatus) > history.Unknown {
		return ops, fmt.Errorf("flags %#x: unknown bits or status", flags)
	}
	t.Status = history.Status(flags & flagStatus)
	if flags&flagStartTS != 0 {
		t.HasStartTS = true
		if t.StartTS, err = d.uvarint(); err != nil {
			return ops, fmt.Errorf("its start_ts: %w", err)
		}
	}
	if flags&flagCommitTS != 0 {
		t.HasCommitTS = true
		if t.CommitTS, err = d.uvarint(); err != nil {
			return ops, fmt.Errorf("its commit_ts: %w", err)
		}
	}
	of, err := d.uvarint()
	if err != nil || of < 1 || of > math.MaxInt32 {
		return ops, fmt.Errorf("its number of pieces (%d): %v", of, err)
	}
	out.Of[i] = int32(of)
	// An operation takes at least 3 bytes: kind, key, value's kind.
	nops, err := d.count("operations", 3)
	if err != nil {
		return ops, err
	}
	first := len(ops)
	for j := range nops {
		k, err := d.byte()
		if err != nil {
			return ops, err
		}
		o := history.Op{Kind: history.OpKind(k &^ opLock), Lock: k&opLock != 0}
		switch o.Kind {
		case history.Read, history.Write, history.Delete, history.Append, history.ReadList:
		default:
			return ops, fmt.Errorf("ops[%d]: operation kind %d: pieces hold reads, writes, deletes, appends and list reads", j, k&^opLock)
		}
		key, err := d.uvarint()
		if err != nil {
			return ops, fmt.Errorf("ops[%d]'s key: %w", j, err)
		}
		if key >= uint64(nkeys) {
			return ops, fmt.Errorf("ops[%d]: key %d outside the message's %d", j, key, nkeys)
		}
		o.Key = history.KeyID(key)
		if o.Value, err = d.value(); err != nil {
			return ops, fmt.Errorf("ops[%d]'s value: %w", j, err)
		}
		if o.Kind == history.ReadList {
			l, err := d.count("elements of a list", 2)
			if err != nil {
				return ops, fmt.Errorf("ops[%d]'s list: %w", j, err)
			}
			if l > 0 {
				o.List = make([]history.Value, l)
				for e := range o.List {
					if o.List[e], err = d.value(); err != nil {
						return ops, fmt.Errorf("ops[%d]'s list, element %d: %w", j, e, err)
					}
				}
			}
		}
		ops = append(ops, o)
	}
	t.Ops = ops[first:len(ops):len(ops)]
	if flags&flagPlaces != 0 {
		for j := range nops {
			p, err := d.uvarint()
			if err != nil {
				return ops, fmt.Errorf("the place of ops[%d]: %w", j, err)
			}
			if p > math.MaxInt32 {
				return ops, fmt.Errorf("the place of ops[%d]: %d is too large", j, p)
			}
			out.places = append(out.places, int32(p))
		}
	}
	out.placeAt = append(out.placeAt, int32(len(out.places)))
	return ops, nil
}
