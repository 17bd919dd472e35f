//go:build unix

package format

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// waitingFile is a file to read whose input comes only when the test
// writes to write, and ends when it closes it.
type waitingFile struct {
	name  string
	open  func(t *testing.T) (read *os.File, write io.WriteCloser)
	inner string // the reader Interruptible gives
}

// waitingFiles are the kinds of input a reader may wait on: a pipe Go
// polls (as one os.Open or os.Pipe gives), a pipe read with blocking calls
// (standard input), and a socket read with blocking calls (no /proc
// reopening: reads on a goroutine of their own).
var waitingFiles = []waitingFile{
	{"polled pipe", func(t *testing.T) (*os.File, io.WriteCloser) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return r, w
	}, "*format.deadlineReader"},
	{"blocking pipe", func(t *testing.T) (*os.File, io.WriteCloser) {
		var fds [2]int
		if err := syscall.Pipe(fds[:]); err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fds[0]), "pipe-r"), os.NewFile(uintptr(fds[1]), "pipe-w")
	}, "*format.deadlineReader"},
	{"blocking socket", func(t *testing.T) (*os.File, io.WriteCloser) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		w := os.NewFile(uintptr(fds[1]), "socket-w")
		return os.NewFile(uintptr(fds[0]), "socket-r"), w
	}, "*format.pumpReader"},
}

// TestInterruptible: a read of each kind of waiting input gives what is
// written, and once nothing more comes, returns within a second of its
// context's end with an error wrapping the cause.
func TestInterruptible(t *testing.T) {
	for _, wf := range waitingFiles {
		t.Run(wf.name, func(t *testing.T) {
			f, w := wf.open(t)
			defer f.Close()
			defer w.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, release := Interruptible(ctx, f)
			defer release()
			if got := typeName(r); got != wf.inner {
				t.Fatalf("reader %s, want %s", got, wf.inner)
			}
			if _, err := w.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 5)
			if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "hello" {
				t.Fatalf("read %q, %v", buf, err)
			}
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			n, err := r.Read(buf)
			if n != 0 || !errors.Is(err, context.Canceled) {
				t.Fatalf("read %d bytes, error %v; want a stop wrapping context.Canceled", n, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("the read returned %v after it began, cancelled at 200ms", d)
			}
		})
	}
}

// TestInterruptibleEnd: input that ends (its writer closes) reads to the
// end as it is, through each kind of reader.
func TestInterruptibleEnd(t *testing.T) {
	for _, wf := range waitingFiles {
		t.Run(wf.name, func(t *testing.T) {
			f, w := wf.open(t)
			defer f.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, release := Interruptible(ctx, f)
			defer release()
			go func() {
				for range 1000 {
					_, _ = w.Write([]byte("0123456789"))
				}
				w.Close()
			}()
			b, err := io.ReadAll(r)
			if err != nil || len(b) != 10000 {
				t.Fatalf("read %d bytes, %v; want 10000", len(b), err)
			}
		})
	}
}

// TestOpenContext: opening a named pipe no process writes to returns
// within a second of the context's end, with an error wrapping its cause;
// one a writer opens opens and reads what it writes.
func TestOpenContext(t *testing.T) {
	name := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(name, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	f, err := OpenContext(ctx, name)
	if f != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("opened %v, error %v; want a stop wrapping the deadline", f, err)
	}
	if d := time.Since(start); d > 1200*time.Millisecond {
		t.Errorf("the open returned %v after it began, deadline 200ms", d)
	}

	go func() {
		w, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err == nil {
			_, _ = w.Write([]byte("written"))
			w.Close()
		}
	}()
	live, stop := context.WithCancel(context.Background())
	defer stop()
	f, err = OpenContext(live, name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil || string(b) != "written" {
		t.Fatalf("read %q, %v", b, err)
	}
}

func typeName(r io.Reader) string {
	switch r.(type) {
	case *deadlineReader:
		return "*format.deadlineReader"
	case *pumpReader:
		return "*format.pumpReader"
	default:
		return "other"
	}
}
