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
	"slices"
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

// Put writes data to segment id's file.
func (s *Store) Put(id int64, data []byte) error {
	f, err := os.Create(s.path(id))
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", s.path(id), err)
	}
	return nil
}

// Get appends segment id's file to buf and returns the extended slice.
func (s *Store) Get(id int64, buf []byte) ([]byte, error) {
	f, err := os.Open(s.path(id))
	if err != nil {
		return buf, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		buf = slices.Grow(buf, int(fi.Size()))
	}
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, fmt.Errorf("reading %s: %w", s.path(id), err)
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
	}
}

// Delete removes segment id's file.
func (s *Store) Delete(id int64) error {
	return os.Remove(s.path(id))
}
