package native

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// Reader reads a history one transaction at a time. It owns the history
// being built (keys and sessions are interned into it as transactions
// arrive); Next hands out the transactions without keeping them in
// History().Txns, and Read keeps them all.
type Reader struct {
	h  *history.History
	s  scanner
	br *bufio.Reader
	gz bool
	// long collects a line longer than br's buffer.
	long []byte
	// pending is the first transaction line, read while looking for the
	// header.
	pending     []byte
	pendingLine int
	line        int
	err         error // sticky: the first error, or io.EOF

	headerLine  int
	initPending []headerKV
	initDone    bool
	voPending   []headerKV
	keyKind     history.ValueKind
	keyKindLine int

	// Integer keys are found in intKeys, string keys in strKeys; session
	// labels that are small non-negative integers in a dense table
	// (index+1, 0 for none), others in the maps.
	intKeys intTable
	// keysFree gives a worker the key arrays of merged chunks to reuse.
	keysFree chan []history.Value
	// warm keeps what intTable.warm returns, so that its loads stay.
	warm          uint64
	denseSessions []int32
	strKeys       map[string]history.KeyID
	// keyBound lets the dense table of keys grow to 2*keyBound+65536
	// integers when there are fewer keys: a sixteenth of the bytes of
	// the chunks merged, so that a history whose integer keys are spread
	// over a range a few times their count soon finds them all there.
	keyBound    int
	merged      int // bytes of the parsed chunks merged
	intSessions map[int64]int32
	strSessions map[string]int32

	// Transaction ids: dense[id] is TxnID+1 for small non-negative integer
	// ids; the maps hold the others. lines[t] is the line of TxnID t.
	dense  []int32
	intIDs map[int64]int32
	strIDs map[string]int32
	lines  []int32

	// slab is where the next transaction's operations are parsed (see
	// ops).
	slab []history.Op

	// lists is set at the first append or list read (see lists.go).
	lists bool
	// shared holds the lists read so far, which a list read's result
	// shares when it is a prefix of one; the list reads of the line being
	// parsed go to listArena first, listReads saying where (see
	// shareLists).
	shared    history.Lists
	listArena []history.Value
	listReads []listRead

	// opts are the options of the read, with their defaults filled in.
	opts Options
	// torn is set when the last line is torn (see Options.AllowTorn).
	torn *format.Torn
	// unterminated marks the line last returned by nextLine as the
	// input's last, without a line end.
	unterminated bool
}

// Options tune a read. The zero Options are the defaults.
type Options struct {
	// Context, when set, stops the read with its error (wrapped; errors.Is
	// finds context.DeadlineExceeded) within one buffer of the input
	// after it is done.
	Context context.Context
	// Limits bound the line length (format.DefaultMaxLine) and the
	// expansion of a gzip stream (format.DefaultMaxGzipRatio).
	Limits format.Limits
	// AllowTorn takes a torn last line for what it likely is: the
	// recorder died while writing it. A last line that has no line end
	// and does not parse is then left out, the history up to it is read,
	// and Result.Torn (Reader.Torn) says so. Without it, such a line is
	// bad input like any other. Only the last line qualifies, and only
	// after at least one good transaction: a bad line followed by a line
	// end, or an input with no whole transaction, is always bad input.
	AllowTorn bool
	// ChunkSize is how many bytes of lines Read gives a worker at a time
	// (1 MiB; an input shorter than one chunk is read sequentially).
	ChunkSize int
	// Workers is how many workers parse chunks (GOMAXPROCS); fewer than
	// two read sequentially.
	Workers int
}

// withDefaults fills in the defaults of o's zero fields.
func (o Options) withDefaults() Options {
	if o.ChunkSize <= 0 {
		o.ChunkSize = chunkSize
	}
	if o.Workers <= 0 {
		o.Workers = readWorkers()
	}
	return o
}

// Result is what ReadWith read.
type Result struct {
	// History is the history read.
	History *history.History
	// Torn, when set, is the warning that the last line was torn and
	// left out.
	Torn *format.Torn
}

// NewReader starts reading a history from r, gunzipping it when it starts
// with the gzip magic bytes, and reads the header if there is one. name is
// the input's name in error messages.
func NewReader(r io.Reader, name string) (*Reader, error) {
	return NewReaderWith(r, name, Options{})
}

// NewReaderWith is NewReader with options (Options.ChunkSize and
// Options.Workers aside, which only Read uses).
func NewReaderWith(r io.Reader, name string, opts Options) (*Reader, error) {
	opts = opts.withDefaults()
	if opts.Context != nil && opts.Context.Done() != nil {
		r = format.ContextReader(opts.Context, r)
	}
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	rd := &Reader{
		opts:        opts,
		h:           history.New(),
		br:          br,
		strKeys:     make(map[string]history.KeyID),
		intSessions: make(map[int64]int32),
		strSessions: make(map[string]int32),
	}
	rd.h.Name = name
	rd.s.file = name
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := format.GzipReader(br, name, opts.Limits)
		if err != nil {
			return nil, err
		}
		rd.br, rd.gz = bufio.NewReaderSize(zr, 64<<10), true
	}
	line, err := rd.nextLine()
	if err == io.EOF {
		rd.err = io.EOF
		return rd, nil
	}
	if err != nil {
		return nil, err
	}
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a byte order mark
	if isHeader(line) {
		rd.s.reset(line, rd.line)
		if err := rd.header(); err != nil {
			return nil, err
		}
		return rd, nil
	}
	rd.pending, rd.pendingLine = append([]byte(nil), line...), rd.line
	return rd, nil
}

// nextLine returns the next non-blank line (valid until the next call), or
// io.EOF.
func (r *Reader) nextLine() ([]byte, error) {
	for {
		r.skipBlank()
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			max := r.opts.Limits.Line()
			r.long = append(r.long[:0], line...)
			for err == bufio.ErrBufferFull {
				if int64(len(r.long)) > max+2 { // +2: the line end
					return nil, format.LimitErr(r.s.file, r.line+1, "line", max)
				}
				line, err = r.br.ReadSlice('\n')
				if len(r.long)+len(line) > cap(r.long) { // grow, up to the limit
					grown := make([]byte, len(r.long), min(2*int64(cap(r.long))+int64(len(line)), max+3))
					copy(grown, r.long)
					r.long = grown
				}
				r.long = append(r.long, line...)
			}
			line = r.long
		}
		if err != nil && err != io.EOF {
			return nil, r.readErr(err, r.line+1)
		}
		if len(line) == 0 && err == io.EOF {
			return nil, io.EOF
		}
		if int64(len(line)) > r.opts.Limits.Line()+2 {
			return nil, format.LimitErr(r.s.file, r.line+1, "line", r.opts.Limits.Line())
		}
		r.unterminated = err == io.EOF
		r.line++
		if !blank(line) {
			if n := len(line); line[n-1] == '\n' {
				if line = line[:n-1]; n > 1 && line[n-2] == '\r' {
					line = line[:n-2]
				}
			}
			return line, nil
		}
		if err == io.EOF {
			return nil, io.EOF
		}
	}
}

// skipBlank skips the empty lines at the start of the buffered input, a
// buffer at a time rather than a line at a time.
func (r *Reader) skipBlank() {
	for {
		b, _ := r.br.Peek(max(r.br.Buffered(), 1))
		n := 0
		for n < len(b) && b[n] == '\n' {
			n++
		}
		if n == 0 {
			return
		}
		r.br.Discard(n)
		r.line += n
	}
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// readErr reports a failure to read line: bad input when the gzip stream
// is broken, else the I/O error itself.
func (r *Reader) readErr(err error, line int) error {
	if format.IsLimit(err) {
		var fe *format.Error
		if errors.As(err, &fe) && fe.Line == 0 {
			return format.LimitErr(fe.File, line, "gzip", r.opts.Limits.GzipRatio())
		}
		return err
	}
	var corrupt flate.CorruptInputError
	if r.gz && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &corrupt)) {
		return &format.Error{File: r.s.file, Line: line, Msg: "gzip: " + err.Error()}
	}
	return fmt.Errorf("%s: line %d: %w", r.s.file, line, err)
}

// Header returns the header (the zero Header with Present false when the
// input has none). Initial values are resolved to keys once the first key
// has been read, and VersionOrder once Next has returned io.EOF: only then
// is the history's kind of key, and every transaction id, known.
func (r *Reader) Header() history.Header { return r.h.Header }

// History returns the history being built: its header, keys and sessions
// (Txn.Session and the KeyIDs of operations index them). Next does not add
// transactions to its Txns; Read does.
func (r *Reader) History() *history.History { return r.h }

// Next returns the next transaction, or io.EOF after the last one. At the
// end it checks the header's version order against the transactions read
// (their TxnIDs count them in the order Next returned them); it does not
// check the unique_values promise, which Read does, nor take a read of null
// for a read of the empty list, as Read does where the history has lists
// (it cannot see the key's later operations). After an error every call
// returns the same error.
func (r *Reader) Next() (*history.Txn, error) {
	t := new(history.Txn)
	if err := r.next(t); err != nil {
		return nil, err
	}
	return t, nil
}

// next reads the next transaction into t (a zero Txn).
func (r *Reader) next(t *history.Txn) error {
	if r.err != nil {
		return r.err
	}
	err := r.read(t)
	if err == io.EOF {
		if err = r.resolveInitial(); err == nil {
			err = r.resolveVersionOrder()
		}
		if err == nil {
			err = io.EOF
		}
	}
	if err != nil {
		r.err = err
	}
	return err
}

func (r *Reader) read(t *history.Txn) error {
	var line []byte
	for {
		if r.pending != nil {
			line = r.pending
			r.s.reset(line, r.pendingLine)
			r.pending = nil
		} else {
			var err error
			if line, err = r.nextLine(); err != nil {
				return err
			}
			r.s.reset(line, r.line)
		}
		if !isFault(line) {
			break
		}
		f, err := parseFault(line, r.s.file, r.s.line)
		if err != nil {
			if r.unterminated && r.opts.AllowTorn && len(r.lines) > 0 {
				r.torn = &format.Torn{File: r.s.file, Line: r.s.line, Err: err}
				return io.EOF
			}
			return err
		}
		r.h.Faults = append(r.h.Faults, f)
	}
	if err := r.txn(t); err != nil {
		if r.unterminated && r.opts.AllowTorn && len(r.lines) > 0 {
			r.torn = &format.Torn{File: r.s.file, Line: r.s.line, Err: err}
			return io.EOF
		}
		return err
	}
	return r.register(t)
}

// Torn returns the warning that the input's last line was torn (it has no
// line end and does not parse) and left out, once Next has returned
// io.EOF; nil when it was not, or without Options.AllowTorn.
func (r *Reader) Torn() *format.Torn { return r.torn }

// register records t's id, rejecting a duplicate, and gives it the next
// TxnID.
func (r *Reader) register(t *history.Txn) error {
	next := int32(len(r.lines))
	if prev, ok := r.lookupID(t.ID); ok {
		return &format.Error{File: r.s.file, Line: t.Line, Field: "id",
			Msg: "duplicate id " + t.ID.String() + " (first on line " + strconv.Itoa(int(r.lines[prev])) + ")"}
	}
	switch id := t.ID; {
	case id.Kind == history.String:
		if r.strIDs == nil {
			r.strIDs = make(map[string]int32)
		}
		r.strIDs[id.S] = next
	default:
		if slot := dense(&r.dense, id.N, len(r.lines)); slot != nil {
			*slot = next + 1
			break
		}
		if r.intIDs == nil {
			r.intIDs = make(map[int64]int32)
		}
		r.intIDs[id.N] = next
	}
	r.lines = append(r.lines, int32(t.Line))
	return nil
}

// lookupID finds the transaction with input id v.
func (r *Reader) lookupID(v history.Value) (history.TxnID, bool) {
	switch v.Kind {
	case history.String:
		t, ok := r.strIDs[v.S]
		return history.TxnID(t), ok
	case history.Int:
		if v.N >= 0 && v.N < int64(len(r.dense)) && r.dense[v.N] != 0 {
			return history.TxnID(r.dense[v.N] - 1), true
		}
		t, ok := r.intIDs[v.N]
		return history.TxnID(t), ok
	}
	return 0, false
}

// dense returns the slot of n in the table tab, growing it when n is small
// enough for a table of used entries (below 2*used+65536); nil when n
// belongs in a map instead.
func dense(tab *[]int32, n int64, used int) *int32 {
	if n < 0 {
		return nil
	}
	if n < int64(len(*tab)) {
		return &(*tab)[n]
	}
	if n >= 2*int64(used)+1<<16 {
		return nil
	}
	size := max(2*len(*tab), int(n)+1, 1024)
	*tab = append(*tab, make([]int32, size-len(*tab))...)
	return &(*tab)[n]
}

// Read reads a whole history from r (gzip or plain). It checks everything
// the format calls bad input, including the unique_values promise, and
// returns it as a *format.Error naming the line and the field. In a
// history with appends or list reads, a read of null of a key that nothing
// uses as a register is a read of the empty list (see lists.go). An input
// longer than a chunk (1 MiB) is parsed on every processor (see
// parallel.go), to the same history, or the same error, as one line at a
// time.
//
// A torn last line is bad input here; ReadWith has the options.
func Read(r io.Reader, name string) (*history.History, error) {
	res, err := ReadWith(r, name, Options{})
	if err != nil {
		return nil, err
	}
	return res.History, nil
}

// ReadWith reads a whole history, as Read does, with options: a context,
// limits, leniency towards a torn last line, and the size of the chunks.
func ReadWith(r io.Reader, name string, opts Options) (*Result, error) {
	h, torn, err := readWith(r, name, opts)
	if err != nil {
		return nil, err
	}
	return &Result{History: h, Torn: torn}, nil
}

func readWith(r io.Reader, name string, opts Options) (*history.History, *format.Torn, error) {
	rd, err := NewReaderWith(r, name, opts)
	if err != nil {
		return nil, nil, err
	}
	h := rd.h
	if rd.pending != nil {
		var t history.Txn
		switch err := rd.next(&t); err {
		case nil:
			h.Txns = append(h.Txns, t)
		case io.EOF: // the only line, torn
		default:
			return nil, nil, err
		}
	}
	if rd.err == nil {
		if err := rd.readChunks(); err != nil {
			return nil, nil, err
		}
		// The end of the input, as next sees it.
		if err := rd.resolveInitial(); err != nil {
			return nil, nil, err
		}
		if err := rd.resolveVersionOrder(); err != nil {
			return nil, nil, err
		}
		rd.err = io.EOF
	}
	resolveListNulls(h, rd.lists)
	if h.Header.UniqueValues {
		if err := checkUnique(h); err != nil {
			return nil, nil, err
		}
	}
	return h, rd.torn, nil
}
