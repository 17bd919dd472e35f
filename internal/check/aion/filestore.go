package aion

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/isoscope/isoscope/internal/history"
)

// FileStore keeps spilled segments in a directory, one file per segment,
// in a compact binary encoding (varints; values as a kind byte and an
// integer or a length-prefixed string).
type FileStore struct {
	dir  string
	next int64
	buf  []byte
	ops  []op // scratch space for encoding a segment's operations
}

// NewFileStore returns a store over dir, creating it if needed.
func NewFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("aion: spill directory: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

func (s *FileStore) path(id int64) string {
	return filepath.Join(s.dir, "segment-"+strconv.FormatInt(id, 10)+".bin")
}

// segMagic starts every segment file.
const segMagic = "aionseg2"

// Put writes seg to a new file.
func (s *FileStore) Put(seg *Segment) (int64, error) {
	id := s.next
	s.next++
	f, err := os.Create(s.path(id))
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	b := append(s.buf[:0], segMagic...)
	b = binary.AppendUvarint(b, seg.Watermark)
	b = binary.AppendUvarint(b, uint64(len(seg.Txns)))
	flush := func() error {
		_, err := bw.Write(b)
		b = b[:0]
		return err
	}
	for i := range seg.Txns {
		t := &seg.Txns[i]
		b = appendValue(b, t.ID)
		b = binary.AppendVarint(b, int64(t.Session))
		b = binary.AppendUvarint(b, t.StartTS)
		b = binary.AppendUvarint(b, t.CommitTS)
		b = binary.AppendVarint(b, int64(t.Line))
		// The operations in the checker's encoding (encodeOps), which is
		// this file's: as the checker spilled them, or encoded here.
		if t.enc != nil {
			b = binary.AppendUvarint(b, uint64(t.nops))
			b = append(b, t.enc...)
		} else {
			s.ops = s.ops[:0]
			for _, o := range t.Ops {
				s.ops = append(s.ops, op{kind: o.Kind, key: o.Key, val: o.Value, list: o.List})
			}
			b = binary.AppendUvarint(b, uint64(len(s.ops)))
			b = encodeOps(b, s.ops)
		}
		if len(b) > 128<<10 {
			if err := flush(); err != nil {
				f.Close()
				return 0, err
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(seg.Versions)))
	for i := range seg.Versions {
		v := &seg.Versions[i]
		b = binary.AppendVarint(b, int64(v.Key))
		b = appendValue(b, v.ID)
		b = binary.AppendVarint(b, int64(v.Session))
		b = binary.AppendUvarint(b, v.StartTS)
		b = binary.AppendUvarint(b, v.CommitTS)
		b = appendValue(b, v.Value)
		if len(b) > 128<<10 {
			if err := flush(); err != nil {
				f.Close()
				return 0, err
			}
		}
	}
	err = flush()
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	s.buf = b[:0]
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", s.path(id), err)
	}
	return id, nil
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

// Get reads segment id back.
func (s *FileStore) Get(id int64) (*Segment, error) {
	f, err := os.Open(s.path(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seg, err := decodeSegment(bufio.NewReaderSize(f, 256<<10))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.path(id), err)
	}
	return seg, nil
}

// errCorrupt reports a segment file that does not decode.
var errCorrupt = errors.New("not a segment file, or a damaged one")

func decodeSegment(r *bufio.Reader) (*Segment, error) {
	magic := make([]byte, len(segMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != segMagic {
		return nil, errCorrupt
	}
	d := decoder{r: r}
	seg := &Segment{Watermark: d.uvarint()}
	n := d.count()
	seg.Txns = make([]SpilledTxn, 0, n)
	for range n {
		t := SpilledTxn{ID: d.value(), Session: int32(d.varint()), StartTS: d.uvarint(), CommitTS: d.uvarint(), Line: int(d.varint())}
		t.Ops = make([]SpilledOp, d.count())
		for j := range t.Ops {
			k, _ := r.ReadByte()
			t.Ops[j] = SpilledOp{Kind: history.OpKind(k), Key: int32(d.varint()), Value: d.value()}
			if t.Ops[j].Kind == history.ReadList {
				t.Ops[j].List = make([]history.Value, d.count())
				for i := range t.Ops[j].List {
					t.Ops[j].List[i] = d.value()
				}
			}
		}
		seg.Txns = append(seg.Txns, t)
	}
	n = d.count()
	seg.Versions = make([]SpilledVersion, 0, n)
	for range n {
		seg.Versions = append(seg.Versions, SpilledVersion{Key: int32(d.varint()), ID: d.value(), Session: int32(d.varint()),
			StartTS: d.uvarint(), CommitTS: d.uvarint(), Value: d.value()})
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

// Delete removes segment id's file.
func (s *FileStore) Delete(id int64) error {
	return os.Remove(s.path(id))
}
