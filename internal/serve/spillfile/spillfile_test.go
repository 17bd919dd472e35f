package spillfile_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/isoscope/isoscope/internal/serve/spillfile"
)

// TestRoundTrip: a segment's bytes come back as they went, appended to
// the buffer given, from a file of their own; a deleted one does not.
func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	s, err := spillfile.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("aionseg2\x00\x01héllo")
	if err := s.Put(7, data); err != nil {
		t.Fatal(err)
	}
	data[0] = 'X' // the store keeps nothing of what it was given
	back, err := s.Get(7, []byte("buf:"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte("buf:aionseg2\x00\x01héllo"); !bytes.Equal(back, want) {
		t.Fatalf("got %q, want %q", back, want)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || filepath.Base(files[0]) != "segment-7.bin" {
		t.Fatalf("files %v", files)
	}
	if _, err := spillfile.New(filepath.Join(files[0], "x")); err == nil {
		t.Fatal("a spill directory under a file accepted")
	}
	if err := s.Delete(7); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(7, nil); err == nil {
		t.Fatal("deleted segment read back")
	}
}
