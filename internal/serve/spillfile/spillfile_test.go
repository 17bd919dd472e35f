package spillfile_test

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/isoscope/isoscope/internal/serve/spillfile"
)

// TestRoundTrip: a segment's bytes, written in pieces, come back as they
// went, from a file of their own; a deleted one does not.
func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	s, err := spillfile.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Create(7)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"aionseg2", "\x00\x01", "héllo"} {
		if _, err := io.WriteString(w, part); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(7)
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "aionseg2\x00\x01héllo"; string(back) != want {
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
	if _, err := s.Open(7); err == nil {
		t.Fatal("deleted segment read back")
	}
}
