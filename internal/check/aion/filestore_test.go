package aion_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check/aion"
	"github.com/isoscope/isoscope/internal/history"
)

// TestFileStoreRoundTrip: a segment comes back as it went, every kind of
// value included; a damaged file is an error naming it, not a panic.
func TestFileStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := aion.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	seg := &aion.Segment{Watermark: 77,
		Txns: []aion.SpilledTxn{{ID: history.StringValue("a"), Session: 2, StartTS: 5, CommitTS: 9, Line: 4,
			Ops: []aion.SpilledOp{{Kind: history.Read, Key: 1, Value: history.NullValue}, {Kind: history.Write, Key: 0, Value: history.IntValue(-3)}}}},
		Versions: []aion.SpilledVersion{{Key: 0, ID: history.IntValue(12), Session: 1, StartTS: 1, CommitTS: 2, Value: history.Tombstone},
			{Key: 3, ID: history.StringValue("b"), StartTS: 3, CommitTS: 3, Value: history.StringValue("héllo")}},
	}
	id, err := s.Put(seg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, seg) {
		t.Fatalf("got %+v\nwant %+v", back, seg)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	data, _ := os.ReadFile(files[0])
	if err := os.WriteFile(files[0], data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(id); err == nil || !strings.Contains(err.Error(), files[0]) {
		t.Fatalf("truncated file: %v", err)
	}
	if err := s.Delete(id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(id); err == nil {
		t.Fatal("deleted segment read back")
	}
}
