package format

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// abandonWait is how long OpenContext waits, once its context is done,
// for an open it has released to return before leaving it behind.
const abandonWait = time.Second

// stoppedError is the error of a read or an open stopped because ctx is
// done: it wraps context.Cause(ctx).
func stoppedError(ctx context.Context) error {
	return fmt.Errorf("reading stopped: %w", context.Cause(ctx))
}

// OpenContext opens the file at path for reading, giving up when ctx is
// done. Opening a named pipe waits, in the kernel, until a process opens
// it for writing, and a signal does not end that wait: OpenContext opens
// it on another goroutine and, when ctx is done first, releases that
// open (a writer that opens the pipe and leaves at once), closes what it
// opened and returns an error wrapping context.Cause(ctx). Other files
// open at once.
func OpenContext(ctx context.Context, path string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, stoppedError(ctx)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 || ctx.Done() == nil {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	res := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		res <- opened{f, err}
	}()
	select {
	case o := <-res:
		return o.f, o.err
	case <-ctx.Done():
	}
	// The open may not have reached the kernel yet: offer a writer until
	// it returns, for a while.
	deadline := time.Now().Add(abandonWait)
	for time.Now().Before(deadline) {
		releaseOpen(path)
		select {
		case o := <-res:
			if o.f != nil {
				o.f.Close()
			}
			return nil, stoppedError(ctx)
		case <-time.After(10 * time.Millisecond):
		}
	}
	go func() {
		if o := <-res; o.f != nil {
			o.f.Close()
		}
	}()
	return nil, stoppedError(ctx)
}

// Interruptible returns a reader of f whose Read, even one waiting for
// input that does not come (a pipe held open, a terminal), returns within
// moments of ctx being done, with an error wrapping context.Cause(ctx);
// release frees what it holds once reading is over (before f is closed).
//
// A pipe, a named pipe or a terminal is read with a deadline the context
// sets: f itself when Go polls it (a file it opened), else the same pipe
// or terminal opened again through /proc/self/fd in non-blocking mode
// (standard input, which Go reads with blocking calls; setting it
// non-blocking would change it for every process that shares it). Failing
// both, reads run on a goroutine the reader leaves behind, blocked, when
// ctx is done. A regular file never waits: it is read as it is, checking
// ctx between reads.
func Interruptible(ctx context.Context, f *os.File) (r io.Reader, release func()) {
	st, err := f.Stat()
	if ctx.Done() == nil || err != nil || st.Mode().IsRegular() || st.IsDir() {
		return ContextReader(ctx, f), func() {}
	}
	if f.SetReadDeadline(time.Time{}) == nil {
		return withDeadline(ctx, f, func() {})
	}
	if g := reopenPollable(f, st.Mode()); g != nil {
		return withDeadline(ctx, g, func() { g.Close() })
	}
	p := &pumpReader{ctx: ctx, chunks: make(chan chunk, 1), next: make(chan struct{}, 1)}
	go p.pump(f)
	return p, p.stop
}

// withDeadline reads f, which Go polls, setting its read deadline to now
// once ctx is done so that a waiting Read returns.
func withDeadline(ctx context.Context, f *os.File, closeFile func()) (io.Reader, func()) {
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	return &deadlineReader{ctx: ctx, f: f}, func() { stop(); closeFile() }
}

// deadlineReader is a reader of a polled file whose deadline ctx sets.
type deadlineReader struct {
	ctx context.Context
	f   *os.File
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if d.ctx.Err() != nil {
		return 0, stoppedError(d.ctx)
	}
	n, err := d.f.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && d.ctx.Err() != nil {
		return n, stoppedError(d.ctx)
	}
	return n, err
}

// chunk is what one read of a pumpReader's file gave.
type chunk struct {
	b   []byte
	err error
}

// pumpReader reads a file that cannot be interrupted on a goroutine of
// its own, one read at a time as Read asks, so that Read can return when
// ctx is done while the goroutine still waits.
type pumpReader struct {
	ctx    context.Context
	chunks chan chunk
	next   chan struct{} // asks the goroutine for a read; closed by stop
	rest   []byte
	err    error
	asked  bool
}

func (p *pumpReader) pump(f *os.File) {
	defer close(p.chunks)
	buf := make([]byte, 64<<10)
	for range p.next {
		n, err := f.Read(buf)
		p.chunks <- chunk{append([]byte(nil), buf[:n]...), err}
		if err != nil {
			return
		}
	}
}

func (p *pumpReader) Read(b []byte) (int, error) {
	if len(p.rest) == 0 && p.err == nil {
		if !p.asked {
			p.next <- struct{}{}
			p.asked = true
		}
		select {
		case c := <-p.chunks:
			p.asked = false
			p.rest, p.err = c.b, c.err
		case <-p.ctx.Done():
			return 0, stoppedError(p.ctx)
		}
	}
	n := copy(b, p.rest)
	p.rest = p.rest[n:]
	if len(p.rest) == 0 && p.err != nil {
		return n, p.err
	}
	return n, nil
}

// stop ends the goroutine once its current read, if any, returns.
func (p *pumpReader) stop() { close(p.next) }
