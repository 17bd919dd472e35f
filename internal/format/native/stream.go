package native

import (
	"io"

	"github.com/isoscope/isoscope/internal/history"
)

// Writer writes a history one transaction at a time, for producers that
// record transactions as they finish (the workload runner): the header
// line first, then one line per WriteTxn, in the order of the calls. It
// buffers up to 64 KiB; Flush hands everything written so far to the
// underlying writer, so that a producer that flushes after each batch
// loses nothing when it is interrupted.
//
// A Writer is not safe for concurrent use: one goroutine owns it and the
// history it writes from.
type Writer struct {
	w   io.Writer
	h   *history.History
	buf []byte
}

// NewWriter writes h's header to a buffer and returns a Writer for h's
// transactions. The header is always written (with "initial", the unique
// values promise, the delete mode, the version order and the source as h
// says); it reaches w at the first Flush. Transactions passed to WriteTxn
// name their keys and session by h's KeyIDs and session indices, which
// may grow (h.Key, appending to h.Sessions) between calls.
func NewWriter(w io.Writer, h *history.History) (*Writer, error) {
	sw := &Writer{w: w, h: h, buf: make([]byte, 0, flushAt+4096)}
	var err error
	sw.buf, err = appendHeader(sw.buf, h)
	if err != nil {
		return nil, err
	}
	return sw, nil
}

// WriteTxn appends t as one line. It fails on a write error or on a
// transaction that breaks the model (see Write); then nothing of t is
// written.
func (sw *Writer) WriteTxn(t *history.Txn) error {
	n := len(sw.buf)
	var err error
	if sw.buf, err = appendTxn(sw.buf, sw.h, t); err != nil {
		sw.buf = sw.buf[:n]
		return err
	}
	if len(sw.buf) >= flushAt {
		return sw.Flush()
	}
	return nil
}

// Flush writes the buffered lines to the underlying writer.
func (sw *Writer) Flush() error {
	if len(sw.buf) == 0 {
		return nil
	}
	_, err := sw.w.Write(sw.buf)
	sw.buf = sw.buf[:0]
	return err
}
