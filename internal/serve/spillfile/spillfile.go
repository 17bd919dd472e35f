// Package spillfile keeps what a checker spills in files: a Store puts
// each segment of bytes under its id in a file of its own in a directory.
// It is the service's edge to the file system for aion.Store; the bytes
// are the checker's, and the store neither reads nor changes them.
package spillfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// Store keeps segments in a directory, one file per segment.
type Store struct {
	dir string
}

// New returns a store over dir, creating it if needed.
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("aion: spill directory: %w", err)
	}
	return &Store{dir: dir}, nil
}

func (s *Store) path(id int64) string {
	return filepath.Join(s.dir, "segment-"+strconv.FormatInt(id, 10)+".bin")
}

// Create creates segment id's file: what is written to it goes to the
// file, which Close closes.
func (s *Store) Create(id int64) (io.WriteCloser, error) {
	f, err := os.Create(s.path(id))
	if err != nil {
		return nil, err
	}
	return &file{f: f}, nil
}

// file is a segment's file being written; its errors name it.
type file struct {
	f *os.File
}

func (w *file) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil {
		err = fmt.Errorf("writing %s: %w", w.f.Name(), err)
	}
	return n, err
}

func (w *file) Close() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", w.f.Name(), err)
	}
	return nil
}

// Open opens segment id's file for reading.
func (s *Store) Open(id int64) (io.ReadCloser, error) {
	return os.Open(s.path(id))
}

// Delete removes segment id's file.
func (s *Store) Delete(id int64) error {
	return os.Remove(s.path(id))
}
