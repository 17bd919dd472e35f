package aion

import (
	"encoding/binary"

	"github.com/isoscope/isoscope/internal/history"
)

// op is one operation of a transaction, on the checker's key table. A
// delete is a write of null.
type op struct {
	kind history.OpKind
	key  int32
	val  history.Value
	// list is what a list read returned.
	list []history.Value
}

// encodeOps appends the compact encoding of ops to b: for each operation
// its kind, its key as a varint and its value as appendValue writes it
// (a kind byte, then a varint or a length-prefixed string).
func encodeOps(b []byte, ops []op) []byte {
	for _, o := range ops {
		b = append(b, byte(o.kind))
		b = binary.AppendVarint(b, int64(o.key))
		b = appendValue(b, o.val)
		if o.kind == history.ReadList {
			b = binary.AppendUvarint(b, uint64(len(o.list)))
			for _, e := range o.list {
				b = appendValue(b, e)
			}
		}
	}
	return b
}

// decodeOps appends the operations encodeOps encoded in b to out. b is
// the checker's own encoding, never input.
func decodeOps(out []op, b []byte) []op {
	for len(b) > 0 {
		o := op{kind: history.OpKind(b[0])}
		k, n := binary.Varint(b[1:])
		o.key = int32(k)
		o.val, b = decodeValue(b[1+n:])
		if o.kind == history.ReadList {
			l, n := binary.Uvarint(b)
			b = b[n:]
			o.list = make([]history.Value, l)
			for i := range o.list {
				o.list[i], b = decodeValue(b)
			}
		}
		out = append(out, o)
	}
	return out
}

// decodeValue decodes the value appendValue wrote at the start of b and
// returns the rest.
func decodeValue(b []byte) (history.Value, []byte) {
	kind := history.ValueKind(b[0])
	b = b[1:]
	if kind == history.String {
		l, n := binary.Uvarint(b)
		return history.StringValue(string(b[n : n+int(l)])), b[n+int(l):]
	}
	v, n := binary.Varint(b)
	return history.Value{Kind: kind, N: v}, b[n:]
}
