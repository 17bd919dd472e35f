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
}

// encodeOps appends the compact encoding of ops to b: for each operation
// its kind, its key as a varint and its value as appendValue writes it
// (a kind byte, then a varint or a length-prefixed string).
func encodeOps(b []byte, ops []op) []byte {
	for _, o := range ops {
		b = append(b, byte(o.kind))
		b = binary.AppendVarint(b, int64(o.key))
		b = appendValue(b, o.val)
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
		b = b[1+n:]
		kind := history.ValueKind(b[0])
		b = b[1:]
		switch kind {
		case history.String:
			l, n := binary.Uvarint(b)
			o.val = history.StringValue(string(b[n : n+int(l)]))
			b = b[n+int(l):]
		default:
			v, n := binary.Varint(b)
			o.val = history.Value{Kind: kind, N: v}
			b = b[n:]
		}
		out = append(out, o)
	}
	return out
}
