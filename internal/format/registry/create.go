package registry

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"strings"
)

// Output is a history file being written, made by Create: what is written
// to it is buffered, and gzip-compressed when its name ends in .gz. Close
// completes it; Abort gives it up.
type Output struct {
	path string
	f    *os.File // nil for standard output
	bw   *bufio.Writer
	zw   *gzip.Writer // nil unless compressed
	w    io.Writer    // bw or zw
}

// Create creates (or truncates) the file at path for a history to be
// written to it, or, for path "-", writes to stdout. A path ending in .gz
// is written gzip-compressed, whatever the format.
func Create(path string, stdout io.Writer) (*Output, error) {
	o := &Output{path: path}
	w := stdout
	if path != "-" {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		o.f, w = f, f
	}
	o.bw = bufio.NewWriterSize(w, 1<<20)
	o.w = o.bw
	if strings.HasSuffix(path, ".gz") {
		o.zw = gzip.NewWriter(o.bw)
		o.w = o.zw
	}
	return o, nil
}

// Write writes p to the history file.
func (o *Output) Write(p []byte) (int, error) { return o.w.Write(p) }

// Close completes the history file: it ends the gzip stream, flushes the
// buffer and closes the file. A file it cannot complete is removed.
func (o *Output) Close() error {
	var err error
	if o.zw != nil {
		err = o.zw.Close()
	}
	if err == nil {
		err = o.bw.Flush()
	}
	if o.f != nil {
		if cerr := o.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(o.path)
		}
	}
	return err
}

// Abort gives the history file up after a failed write: a file is closed
// and removed, and what is still buffered for standard output is dropped.
func (o *Output) Abort() {
	if o.f != nil {
		o.f.Close()
		os.Remove(o.path)
	}
}
