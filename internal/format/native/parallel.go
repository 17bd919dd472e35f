package native

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"sync"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// Read parses a large input in chunks of whole lines on every processor.
// A worker parses a chunk on its own, interning keys and sessions into
// chunk-local tables; the merge then takes the chunks in file order and
// does what depends on the lines before: it interns the chunk's keys and
// sessions into the history (in the order of their first appearance, as a
// sequential read does), fixes the history's kind of key, and registers
// the transaction ids. A chunk that a worker could not parse alone (a bad
// line, or keys of another kind than the history's) is parsed again, in
// the merge, by the sequential reader: its error is then the one a
// sequential read gives, at the earliest bad line. Last, the chunks'
// transactions are renumbered to the history's keys and sessions and
// gathered into History.Txns, in parallel.

// chunkSize is how many bytes of lines a chunk holds (more when one line
// is longer), unless Options.ChunkSize says otherwise; a variable for the
// tests. A worker's chunk-local table of keys grows with its chunk: at
// 1 MiB it stays within a core's cache where 4 MiB did not, and interning
// an operation's key is a cache hit instead of a miss (a history of
// millions of keys read 12 % faster).
var chunkSize = 1 << 20

// readWorkers is how many workers parse chunks; fewer than two reads
// sequentially. A variable for the tests.
var readWorkers = func() int { return runtime.GOMAXPROCS(0) }

// chunk is a block of whole lines and what became of them.
type chunk struct {
	data []byte
	line int  // the number of lines before data's first
	last bool // nothing follows data
	// open is the number of data's last line when it has no line end
	// (the input's last), else 0.
	open int
	err  error // the read error after data, if any (never io.EOF)
	done chan struct{}

	// What a worker parsed, when parsed is set: the transactions with
	// chunk-local keys and sessions, in the order of their first
	// appearance, and the kind of key with the line that fixed it.
	parsed   bool
	txns     []history.Txn
	keys     []history.Value
	sessions []history.Value
	kind     history.ValueKind
	kindLine int
	lists    bool // an append or a list read
	// faults are the chunk's fault records, in order.
	faults []history.Fault

	// keyMap and sessionMap take the chunk-local ids of a parsed chunk
	// to the history's (set by the merge).
	keyMap     []history.KeyID
	sessionMap []int32
}

// splitter cuts the rest of the input into chunks.
type splitter struct {
	r     *Reader
	carry []byte // the start of a line cut by the last chunk
	line  int
	end   bool
	// free holds the buffers of merged chunks, for reuse: fresh memory
	// costs a page fault per page.
	free chan []byte
	// keys holds the chunk-local key arrays of merged chunks, cleared,
	// for the workers to reuse.
	keys chan []history.Value
}

// next reads the next chunk: whole lines, the last one unterminated only
// at the end of the input.
func (sp *splitter) next() *chunk {
	c := &chunk{line: sp.line, done: make(chan struct{})}
	var buf []byte
	select {
	case buf = <-sp.free:
	default:
	}
	size := sp.r.opts.ChunkSize
	if cap(buf) < max(size, 2*len(sp.carry)) {
		buf = make([]byte, 0, max(size, 2*len(sp.carry)))
	}
	buf = append(buf[:0], sp.carry...)
	sp.carry = nil
	var err error
	for !sp.end {
		for len(buf) < cap(buf) && err == nil {
			var n int
			n, err = sp.r.br.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
		}
		if err != nil {
			break
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			c.data, sp.carry = buf[:i+1], bytes.Clone(buf[i+1:])
			sp.line += bytes.Count(c.data, []byte{'\n'})
			return c
		}
		// A longer line: grow, up to the line limit.
		limit := sp.r.opts.Limits.Line()
		if int64(len(buf)) > limit+2 { // +2: the line end
			sp.end, c.last = true, true
			c.err = format.LimitErr(sp.r.s.file, sp.line+1, "line", limit)
			return c
		}
		grown := make([]byte, len(buf), int(min(2*int64(cap(buf))+1, limit+3)))
		copy(grown, buf)
		buf = grown
	}
	// The end: at io.EOF an unterminated last line is a line; after a
	// read error it is lost, and the error names its line.
	sp.end, c.last = true, true
	c.data = buf
	if err != nil && err != io.EOF {
		c.data = buf[:bytes.LastIndexByte(buf, '\n')+1]
	}
	sp.line += bytes.Count(c.data, []byte{'\n'})
	if err != nil && err != io.EOF {
		c.err = sp.r.readErr(err, sp.line+1)
	} else if n := len(c.data); n > 0 && c.data[n-1] != '\n' {
		sp.line++
		c.open = sp.line
	}
	return c
}

// eachLine calls f with every non-blank line of data (without its line
// end, as nextLine gives it) and its line number; line lines come before
// data.
func eachLine(data []byte, line int, f func(b []byte, line int) error) error {
	for len(data) > 0 {
		if data[0] == '\n' { // a blank line, cheaply
			data = data[1:]
			line++
			continue
		}
		var b []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			b, data = data[:i+1], data[i+1:]
		} else {
			b, data = data, nil
		}
		line++
		if blank(b) {
			continue
		}
		if n := len(b); b[n-1] == '\n' {
			if b = b[:n-1]; n > 1 && b[n-2] == '\r' {
				b = b[:n-2]
			}
		}
		if err := f(b, line); err != nil {
			return err
		}
	}
	return nil
}

// errLong is a worker's verdict on a line over the limit (the merge says
// where).
var errLong = errors.New("line over the limit")

// newWorker returns a reader for parsing chunks of r's input alone.
func (r *Reader) newWorker() *Reader {
	w := &Reader{
		strKeys:     make(map[string]history.KeyID),
		intSessions: make(map[int64]int32),
		strSessions: make(map[string]int32),
	}
	w.s.file, w.opts = r.s.file, r.opts
	return w
}

// parse parses chunk c with fresh keys and sessions; c.parsed stays false
// when a line is bad.
func (w *Reader) parse(c *chunk) {
	// As many keys and sessions as the last chunk's, without growing.
	var keys, sessions int
	if w.h != nil {
		keys, sessions = len(w.h.Keys), len(w.h.Sessions)
	}
	var local []history.Value
	select {
	case local = <-w.keysFree:
	default:
	}
	if cap(local) < keys {
		local = make([]history.Value, 0, keys)
	}
	w.h = &history.History{Keys: local[:0], Sessions: make([]history.Value, 0, sessions)}
	w.keyKind, w.keyKindLine, w.initDone, w.lists = history.Null, 0, true, false
	w.intKeys.reset()
	clear(w.denseSessions)
	clear(w.strKeys)
	clear(w.intSessions)
	clear(w.strSessions)
	// A slot per line, but not per blank line: a transaction line is
	// longer than 24 bytes.
	txns := make([]history.Txn, 0, min(bytes.Count(c.data, []byte{'\n'})+1, len(c.data)/24+1))
	limit := w.opts.Limits.Line()
	var faults []history.Fault
	err := eachLine(c.data, c.line, func(b []byte, line int) error {
		if int64(len(b)) > limit {
			return errLong
		}
		if isFault(b) {
			f, err := parseFault(b, w.s.file, line)
			faults = append(faults, f)
			return err
		}
		w.s.reset(b, line)
		txns = append(txns, history.Txn{})
		return w.txn(&txns[len(txns)-1])
	})
	if err != nil {
		return
	}
	if cap(txns) > 2*len(txns)+64 { // mostly blank lines: give back the slots
		txns = append([]history.Txn(nil), txns...)
	}
	// The chunk's list reads move to the arrays of their keys' longest
	// lists, so that the arrays those outgrew are freed: each list read
	// is then held once, not once per array it grew through.
	for i := range txns {
		ops := txns[i].Ops
		for j := range ops {
			if ops[j].Kind == history.ReadList && len(ops[j].List) > 0 {
				ops[j].List = w.shared.Rebase(w.h.Keys[ops[j].Key], ops[j].List)
			}
		}
	}
	w.shared.Forget()
	c.parsed, c.txns, c.keys, c.sessions, c.faults = true, txns, w.h.Keys, w.h.Sessions, faults
	c.kind, c.kindLine, c.lists = w.keyKind, w.keyKindLine, w.lists
}

// merge takes chunk c, the next in file order, into the history: the ids
// of a parsed chunk, or else all of it, parsed by r. It returns the first
// error of c's lines, or the read error that ends the input after them.
func (r *Reader) merge(c *chunk, sp *splitter) error {
	defer func() {
		select {
		case sp.free <- c.data:
		default:
		}
		c.data = nil
		if c.keys != nil {
			clear(c.keys[:cap(c.keys)])
			select {
			case sp.keys <- c.keys[:0]:
			default:
			}
			c.keys = nil
		}
	}()
	if !c.parsed || c.kind != history.Null && r.keyKind != history.Null && c.kind != r.keyKind {
		c.parsed, c.txns = false, nil
		limit := r.opts.Limits.Line()
		err := eachLine(c.data, c.line, func(b []byte, line int) error {
			if int64(len(b)) > limit {
				return format.LimitErr(r.s.file, line, "line", limit)
			}
			if isFault(b) {
				f, err := parseFault(b, r.s.file, line)
				if err != nil {
					if line == c.open && r.opts.AllowTorn && len(r.lines) > 0 {
						r.torn = &format.Torn{File: r.s.file, Line: line, Err: err}
						return nil
					}
					return err
				}
				r.h.Faults = append(r.h.Faults, f)
				return nil
			}
			r.s.reset(b, line)
			c.txns = append(c.txns, history.Txn{})
			t := &c.txns[len(c.txns)-1]
			if err := r.txn(t); err != nil {
				if line == c.open && r.opts.AllowTorn && len(r.lines) > 0 {
					c.txns = c.txns[:len(c.txns)-1]
					r.torn = &format.Torn{File: r.s.file, Line: line, Err: err}
					return nil
				}
				return err
			}
			return r.register(t)
		})
		if err != nil {
			return err
		}
		return c.err
	}
	r.lists = r.lists || c.lists
	r.h.Faults = append(r.h.Faults, c.faults...)
	r.merged += len(c.data)
	r.keyBound = r.merged / 16
	c.sessionMap = make([]int32, len(c.sessions))
	for i, v := range c.sessions {
		c.sessionMap[i] = r.internSession(v)
	}
	// The chunk's first key (or bound of a range) fixes the history's
	// kind of key when no chunk before has one, at its line; the header's
	// initial keys are interned then, before the chunk's keys.
	fixKind := c.kind != history.Null && r.keyKind == history.Null
	if !fixKind {
		c.internKeys(r)
	}
	for i := range c.txns {
		t := &c.txns[i]
		if fixKind && t.Line >= c.kindLine {
			fixKind = false
			r.keyKind, r.keyKindLine = c.kind, c.kindLine
			if err := r.resolveInitial(); err != nil {
				return err
			}
			c.internKeys(r)
		}
		if err := r.register(t); err != nil {
			return err
		}
	}
	return c.err
}

// internKeys interns the keys of parsed chunk c into the history, in the
// order of their first appearance, and sets c.keyMap.
func (c *chunk) internKeys(r *Reader) {
	c.keyMap = make([]history.KeyID, len(c.keys))
	r.warm += r.intKeys.warm(c.keys)
	for j, k := range c.keys {
		c.keyMap[j] = r.intern(k)
	}
}

// renumber gives the transactions of parsed chunk c the history's keys and
// sessions.
func (c *chunk) renumber() {
	if !c.parsed {
		return
	}
	for i := range c.txns {
		t := &c.txns[i]
		t.Session = c.sessionMap[t.Session]
		for j := range t.Ops {
			op := &t.Ops[j]
			if op.Key != history.NoKey {
				op.Key = c.keyMap[op.Key]
			}
			if op.Range != nil {
				for p := range op.Range.Pairs {
					op.Range.Pairs[p].Key = c.keyMap[op.Range.Pairs[p].Key]
				}
			}
		}
	}
}

// readChunks reads the rest of the input into r.h.Txns, in parallel when
// it is longer than a chunk.
func (r *Reader) readChunks() error {
	workers := r.opts.Workers
	sp := &splitter{r: r, line: r.line, free: make(chan []byte, 4*workers+2), keys: make(chan []history.Value, 2*workers)}
	c := sp.next()
	var all []*chunk
	var err error
	if c.last || workers < 2 {
		for {
			if err = r.merge(c, sp); err != nil {
				return err
			}
			all = append(all, c)
			if c.last {
				break
			}
			c = sp.next()
		}
	} else if all, err = r.readParallel(sp, c, workers); err != nil {
		return err
	}
	r.line = sp.line
	r.gather(all, workers)
	return nil
}

// readParallel reads the chunks from first on: the splitter reads ahead,
// workers parse, and the merge takes the chunks in file order.
func (r *Reader) readParallel(sp *splitter, first *chunk, workers int) ([]*chunk, error) {
	quit := make(chan struct{})
	work := make(chan *chunk, 2*workers)
	order := make(chan *chunk, 2*workers)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(order)
		defer close(work)
		for c := first; ; c = sp.next() {
			// Every chunk reaches the workers before the merge waits for
			// it.
			select {
			case work <- c:
			case <-quit:
				return
			}
			select {
			case order <- c:
			case <-quit:
				return
			}
			if c.last {
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			w := r.newWorker()
			w.keysFree = sp.keys
			for c := range work {
				select {
				case <-quit:
				default:
					w.parse(c)
				}
				close(c.done)
			}
		})
	}
	var all []*chunk
	var err error
	for c := range order {
		<-c.done
		if err = r.merge(c, sp); err != nil {
			break
		}
		all = append(all, c)
	}
	close(quit)
	wg.Wait()
	return all, err
}

// gather renumbers the chunks' transactions and moves them to r.h.Txns.
func (r *Reader) gather(all []*chunk, workers int) {
	n := len(r.h.Txns)
	start := make([]int, len(all)+1)
	for i, c := range all {
		start[i+1] = start[i] + len(c.txns)
	}
	txns := make([]history.Txn, n+start[len(all)])
	copy(txns, r.h.Txns)
	move := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			all[i].renumber()
			copy(txns[n+start[i]:], all[i].txns)
			all[i].txns = nil
		}
	}
	if workers < 2 || len(all) < 2 {
		move(0, len(all))
	} else {
		var wg sync.WaitGroup
		for p := range workers {
			wg.Go(func() { move(len(all)*p/workers, len(all)*(p+1)/workers) })
		}
		wg.Wait()
	}
	r.h.Txns = txns
}
