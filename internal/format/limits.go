package format

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The default limits of a read (see Limits).
const (
	// DefaultMaxLine is the longest line a line-oriented reader takes:
	// 64 MiB. A transaction line of the native format is rarely over a
	// few kilobytes; a longer line is almost surely not a history (a
	// binary file, /dev/zero), and buffering it whole would cost memory
	// without bound.
	DefaultMaxLine = 64 << 20
	// DefaultMaxDocument is the largest input a whole-document reader
	// (timekiller JSON, dbcop bincode) holds in memory: 256 MiB (reading
	// one costs about twice that while it grows).
	DefaultMaxDocument = 256 << 20
	// DefaultMaxGzipRatio is how many times its compressed size a gzip
	// stream may expand to once it is past GzipFloor: 200. Histories
	// compress 5 to 30 times; a stream of one repeated byte, 1000 times.
	DefaultMaxGzipRatio = 200
	// GzipFloor is what any gzip stream may expand to whatever its ratio:
	// 64 MiB.
	GzipFloor = 64 << 20
)

// Limits bound what a reader takes in, so that an input that is not a
// history (or a gzip bomb) ends with a clear error instead of exhausting
// memory. A zero field means its default; a negative one, no limit.
type Limits struct {
	// MaxLine is the longest line, in bytes (without its line end), of
	// a line-oriented format (DefaultMaxLine).
	MaxLine int64
	// MaxDocument is the largest input, in bytes after decompression,
	// of a format read as one document (DefaultMaxDocument).
	MaxDocument int64
	// MaxGzipRatio is how many times its compressed size a gzip stream
	// may expand to once it has given GzipFloor bytes
	// (DefaultMaxGzipRatio).
	MaxGzipRatio int64
}

// Line returns the line limit, with its default; NoLimit for none.
func (l Limits) Line() int64 { return pick(l.MaxLine, DefaultMaxLine) }

// Document returns the document limit, with its default.
func (l Limits) Document() int64 { return pick(l.MaxDocument, DefaultMaxDocument) }

// GzipRatio returns the gzip expansion limit, with its default.
func (l Limits) GzipRatio() int64 { return pick(l.MaxGzipRatio, DefaultMaxGzipRatio) }

// NoLimit is what a limit without bound returns: larger than any input,
// and far enough below the largest int64 that a reader may add to it.
const NoLimit int64 = 1 << 62

func pick(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return NoLimit
	}
	return min(v, NoLimit)
}

// LimitError is bad input that broke a limit of the read: a line longer
// than Limits.MaxLine, a document larger than Limits.MaxDocument, a gzip
// stream that expands more than Limits.MaxGzipRatio. errors.As finds it
// under the *Error that names where.
type LimitError struct {
	// What names the limit: "line", "document", "gzip", or "token" and
	// "values" (of an EDN reader: a string, number or symbol, and the
	// values of one operation).
	What string
	// Limit is the limit's value.
	Limit int64
}

func (e *LimitError) Error() string {
	switch e.What {
	case "line":
		return "the line is longer than " + Size(e.Limit) + ", the limit (not a history, or the limit is too low for it)"
	case "token":
		return "a string, number or symbol longer than " + Size(e.Limit) + ", the limit (not a history)"
	case "values":
		return "a value that holds more than " + strconv.FormatInt(e.Limit, 10) + " values, the limit (not a history)"
	case "document":
		return "larger than " + Size(e.Limit) + " (the limit of a whole-document format); raise the limit to read it"
	case "gzip":
		return "gzip: the stream expands more than " + strconv.FormatInt(e.Limit, 10) +
			" times its compressed size (past " + Size(GzipFloor) + "): a likely gzip bomb; raise the limit to read it"
	}
	return e.What + " limit " + strconv.FormatInt(e.Limit, 10) + " exceeded"
}

// LimitErr returns bad input at line (0: none) of file that broke limit
// what; errors.As finds both the *Error and the *LimitError in it.
func LimitErr(file string, line int, what string, limit int64) error {
	le := &LimitError{What: what, Limit: limit}
	return &limitWrap{e: &Error{File: file, Line: line, Msg: le.Error()}, le: le}
}

// limitWrap is an *Error that also unwraps to its *LimitError.
type limitWrap struct {
	e  *Error
	le *LimitError
}

func (e *limitWrap) Error() string   { return e.e.Error() }
func (e *limitWrap) Unwrap() []error { return []error{e.e, e.le} }

// Size renders a byte count in binary units, e.g. "64 MiB".
func Size(n int64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && n%1024 == 0 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatInt(n, 10) + " " + units[i]
}

// Torn is a warning: the input's last line has no line end and does not
// parse, so the recorder likely died while writing it. The reader read
// the history up to it.
type Torn struct {
	// File is the input's name.
	File string
	// Line is the torn line's number.
	Line int
	// Err is why the line does not parse.
	Err error
}

func (t *Torn) Error() string {
	return fmt.Sprintf("%s: line %d is torn: the file ends inside it (%v); the history up to it was read", t.File, t.Line, t.Err)
}

// Unwrap returns why the line does not parse.
func (t *Torn) Unwrap() error { return t.Err }

// ContextReader returns r, made to fail with ctx's error (wrapped, so
// errors.Is finds context.DeadlineExceeded or context.Canceled) at the
// first Read after ctx is done: a reader reading from it stops within one
// buffer.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil || ctx.Done() == nil {
		return r
	}
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("reading stopped: %w", context.Cause(c.ctx))
	}
	return c.r.Read(p)
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// GzipReader returns a reader of the decompressed stream r (which starts
// with the gzip magic bytes) that fails with a LimitError naming file
// once the stream has given more than GzipFloor bytes and more than
// lim.GzipRatio() times the compressed bytes read. A bad gzip header is
// an *Error.
func GzipReader(r io.Reader, file string, lim Limits) (io.Reader, error) {
	cr := &countReader{r: r}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return nil, &Error{File: file, Msg: "gzip: " + err.Error()}
	}
	return &gzipGuard{zr: zr, in: cr, ratio: lim.GzipRatio(), file: file}, nil
}

type gzipGuard struct {
	zr    io.Reader
	in    *countReader
	out   int64
	ratio int64
	file  string
	err   error
}

func (g *gzipGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.zr.Read(p)
	g.out += int64(n)
	if g.out > GzipFloor && g.out/g.ratio > g.in.n {
		g.err = LimitErr(g.file, 0, "gzip", g.ratio)
		return n, g.err
	}
	return n, err
}

// LineReader returns r, made to fail with a LimitError naming file and
// the line once a line runs longer than max bytes. It passes the bytes
// through and counts lines as it goes, for readers that do not count
// them (or buffer whole lines) themselves.
func LineReader(r io.Reader, file string, max int64) io.Reader {
	return &lineGuard{r: r, file: file, max: max, line: 1}
}

type lineGuard struct {
	r    io.Reader
	file string
	max  int64
	cur  int64 // bytes of the current line so far
	line int
	err  error
}

func (g *lineGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	// A line wholly inside one read is shorter than the read: reads of
	// at most max bytes see every line longer than max cross a read.
	if int64(len(p)) > g.max && g.max > 0 {
		p = p[:g.max]
	}
	n, err := g.r.Read(p)
	b := p[:n]
	first := bytes.IndexByte(b, '\n')
	if first < 0 {
		g.cur += int64(n)
	} else {
		if g.cur+int64(first) > g.max {
			g.cur += int64(first)
		} else {
			g.line += bytes.Count(b, []byte{'\n'})
			g.cur = int64(n - bytes.LastIndexByte(b, '\n') - 1)
		}
	}
	if g.cur > g.max {
		g.err = LimitErr(g.file, g.line, "line", g.max)
		return 0, g.err
	}
	return n, err
}

// IsLimit reports whether err broke a limit of the read.
func IsLimit(err error) bool {
	var le *LimitError
	return errors.As(err, &le)
}

// DocumentReader returns r, made to fail with a LimitError naming file
// once it has given more than max bytes: for readers that hold their
// whole input in memory.
func DocumentReader(r io.Reader, file string, max int64) io.Reader {
	return &docGuard{r: r, file: file, left: max, max: max}
}

type docGuard struct {
	r         io.Reader
	file      string
	left, max int64
	err       error
}

func (g *docGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if int64(len(p)) > g.left+1 {
		p = p[:g.left+1]
	}
	n, err := g.r.Read(p)
	if g.left -= int64(n); g.left < 0 {
		g.err = LimitErr(g.file, 0, "document", g.max)
		return 0, g.err
	}
	return n, err
}

// LimitCause returns the limit error of the guards in rs that failed, or
// nil: a reader may wrap the error its input gave it in its own words, or
// name another place; the guard's error says what happened.
func LimitCause(rs ...io.Reader) error {
	for _, r := range rs {
		switch g := r.(type) {
		case *lineGuard:
			if g.err != nil {
				return g.err
			}
		case *docGuard:
			if g.err != nil {
				return g.err
			}
		case *gzipGuard:
			if g.err != nil {
				return g.err
			}
		}
	}
	return nil
}
