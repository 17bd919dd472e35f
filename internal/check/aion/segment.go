package aion

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"

	"github.com/isoscope/isoscope/internal/history"
)

// segment is one spill: transactions whose Ext verdict was final and that
// committed below watermark, and versions that no snapshot at or above
// watermark sees (a later version of their key committed below it). A
// Store keeps it as writeSegment writes it.
type segment struct {
	watermark uint64
	txns      []spilledTxn
	versions  []spilledVersion
}

// spilledTxn is a transaction of a segment. Keys and sessions are the
// checker's interned ids, which live as long as the checker.
type spilledTxn struct {
	id                history.Value
	session           int32
	startTS, commitTS uint64
	line              int
	// enc and nops are the operations in the checker's encoding
	// (encodeOps), as the checker spills them; ops are the operations of
	// a segment read back.
	enc  []byte
	nops int
	ops  []op
}

// spilledVersion is a version of a segment.
type spilledVersion struct {
	key               int32
	id                history.Value
	session           int32
	startTS, commitTS uint64
	value             history.Value
}

// segMagic starts every segment.
const segMagic = "aionseg2"

// writeSegment writes seg's encoding to w: the magic, the watermark, the
// transactions (their operations as the checker encoded them) and the
// versions, in varints, values as appendValue writes them. It encodes
// into b, a scratch buffer it returns, flushing it every 128 KiB, so that
// a segment is never whole in memory.
func writeSegment(w io.Writer, b []byte, seg *segment) ([]byte, error) {
	b = append(b[:0], segMagic...)
	b = binary.AppendUvarint(b, seg.watermark)
	b = binary.AppendUvarint(b, uint64(len(seg.txns)))
	flush := func() error {
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	for i := range seg.txns {
		t := &seg.txns[i]
		b = appendValue(b, t.id)
		b = binary.AppendVarint(b, int64(t.session))
		b = binary.AppendUvarint(b, t.startTS)
		b = binary.AppendUvarint(b, t.commitTS)
		b = binary.AppendVarint(b, int64(t.line))
		// The operations in the checker's encoding (encodeOps), as the
		// checker spilled them.
		b = binary.AppendUvarint(b, uint64(t.nops))
		b = append(b, t.enc...)
		if len(b) > 128<<10 {
			if err := flush(); err != nil {
				return b[:0], err
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(seg.versions)))
	for i := range seg.versions {
		v := &seg.versions[i]
		b = binary.AppendVarint(b, int64(v.key))
		b = appendValue(b, v.id)
		b = binary.AppendVarint(b, int64(v.session))
		b = binary.AppendUvarint(b, v.startTS)
		b = binary.AppendUvarint(b, v.commitTS)
		b = appendValue(b, v.value)
		if len(b) > 128<<10 {
			if err := flush(); err != nil {
				return b[:0], err
			}
		}
	}
	err := flush()
	return b[:0], err
}

func appendValue(b []byte, v history.Value) []byte {
	b = append(b, byte(v.Kind))
	switch v.Kind {
	case history.Int:
		return binary.AppendVarint(b, v.N)
	case history.String:
		b = binary.AppendUvarint(b, uint64(len(v.S)))
		return append(b, v.S...)
	}
	return binary.AppendVarint(b, v.N) // null: N tells a tombstone
}

// errCorrupt reports a segment that does not decode.
var errCorrupt = errors.New("not a segment file, or a damaged one")

// decodeSegment decodes what writeSegment wrote; anything else is
// errCorrupt.
func decodeSegment(r *bufio.Reader) (*segment, error) {
	magic := make([]byte, len(segMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != segMagic {
		return nil, errCorrupt
	}
	d := decoder{r: r}
	seg := &segment{watermark: d.uvarint()}
	n := d.count()
	seg.txns = make([]spilledTxn, 0, n)
	for range n {
		t := spilledTxn{id: d.value(), session: int32(d.varint()), startTS: d.uvarint(), commitTS: d.uvarint(), line: int(d.varint())}
		t.ops = make([]op, d.count())
		for j := range t.ops {
			k, _ := r.ReadByte()
			t.ops[j] = op{kind: history.OpKind(k), key: int32(d.varint()), val: d.value()}
			if t.ops[j].kind == history.ReadList {
				t.ops[j].list = make([]history.Value, d.count())
				for i := range t.ops[j].list {
					t.ops[j].list[i] = d.value()
				}
			}
		}
		seg.txns = append(seg.txns, t)
	}
	n = d.count()
	seg.versions = make([]spilledVersion, 0, n)
	for range n {
		seg.versions = append(seg.versions, spilledVersion{key: int32(d.varint()), id: d.value(), session: int32(d.varint()),
			startTS: d.uvarint(), commitTS: d.uvarint(), value: d.value()})
	}
	if d.err != nil {
		return nil, errCorrupt
	}
	return seg, nil
}

// decoder reads varints and values, keeping the first error.
type decoder struct {
	r   *bufio.Reader
	err error
}

func (d *decoder) uvarint() uint64 {
	v, err := binary.ReadUvarint(d.r)
	if err != nil && d.err == nil {
		d.err = err
	}
	return v
}

func (d *decoder) varint() int64 {
	v, err := binary.ReadVarint(d.r)
	if err != nil && d.err == nil {
		d.err = err
	}
	return v
}

// count reads a length, capped so that a damaged file cannot ask for
// absurd allocations.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > 1<<31 {
		if d.err == nil {
			d.err = errCorrupt
		}
		return 0
	}
	return int(n)
}

func (d *decoder) value() history.Value {
	k, err := d.r.ReadByte()
	if err != nil {
		if d.err == nil {
			d.err = err
		}
		return history.Value{}
	}
	switch history.ValueKind(k) {
	case history.Int:
		return history.IntValue(d.varint())
	case history.String:
		n := d.count()
		if n > 1<<30 {
			d.err = errCorrupt
			return history.Value{}
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(d.r, b); err != nil && d.err == nil {
			d.err = err
		}
		return history.StringValue(string(b))
	case history.Null:
		return history.Value{Kind: history.Null, N: d.varint()}
	}
	if d.err == nil {
		d.err = errCorrupt
	}
	return history.Value{}
}
