package aion

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestSegmentRoundTrip: a segment comes back as it went, every kind of
// value included; damaged bytes are an error, not a panic.
func TestSegmentRoundTrip(t *testing.T) {
	ops := []op{{kind: history.Read, key: 1, val: history.NullValue}, {kind: history.Write, key: 0, val: history.IntValue(-3)},
		{kind: history.ReadList, key: 2, list: []history.Value{history.IntValue(1), history.StringValue("z")}}}
	seg := &segment{watermark: 77,
		txns: []spilledTxn{{id: history.StringValue("a"), session: 2, startTS: 5, commitTS: 9, line: 4,
			enc: encodeOps(nil, ops), nops: len(ops)}},
		versions: []spilledVersion{{key: 0, id: history.IntValue(12), session: 1, startTS: 1, commitTS: 2, value: history.Tombstone},
			{key: 3, id: history.StringValue("b"), startTS: 3, commitTS: 3, value: history.StringValue("héllo")}},
	}
	var buf bytes.Buffer
	if _, err := writeSegment(&buf, nil, seg); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	back, err := decodeSegment(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := *seg
	want.txns = []spilledTxn{seg.txns[0]}
	want.txns[0].enc, want.txns[0].nops, want.txns[0].ops = nil, 0, ops
	if !reflect.DeepEqual(back, &want) {
		t.Fatalf("got %+v\nwant %+v", back, &want)
	}
	for _, bad := range [][]byte{data[:len(data)-3], data[:5], append([]byte("aionseg1"), data[8:]...)} {
		if _, err := decodeSegment(bufio.NewReader(bytes.NewReader(bad))); err != errCorrupt {
			t.Fatalf("damaged segment %q: %v", bad, err)
		}
	}
}
