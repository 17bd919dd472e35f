// Package registry lists every history format isoscope reads or writes,
// detects a history's format from its first bytes, and opens, reads and
// creates history files: the one place that knows all the format packages
// and gzip, so that the CLI and the public API stay format-agnostic.
//
// Open and OpenWith read a file, a directory (Cobra, Viper) or standard input;
// Read reads any stream; Create makes a file to write a history to,
// gzip-compressed when its name ends in .gz. Detection tries each format's
// Sniff in Formats' order on the first 64 KiB (decompressed when they are
// gzip's), and takes JSON Lines no format claims for the native format, so
// that its reader says where they go wrong.
package registry

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/awdit"
	"github.com/isoscope/isoscope/internal/format/cobra"
	"github.com/isoscope/isoscope/internal/format/dbcop"
	"github.com/isoscope/isoscope/internal/format/jepsen"
	"github.com/isoscope/isoscope/internal/format/knossos"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/format/plume"
	"github.com/isoscope/isoscope/internal/format/porcupine"
	"github.com/isoscope/isoscope/internal/format/timekiller"
	"github.com/isoscope/isoscope/internal/format/viper"
	"github.com/isoscope/isoscope/internal/history"
)

// Format is one history format.
type Format struct {
	// Name is what --format selects it by.
	Name string
	// Describe says what the format is, for help texts.
	Describe string
	// Sniff reports whether the first bytes look like this format.
	Sniff func(prefix []byte) bool
	// Read reads a history from a stream (nil for directory formats).
	Read func(r io.Reader, name string) (*history.History, error)
	// ReadWith, when set, is Read within the read limits (a reader that
	// bounds its lines itself, which must bound them by the user's).
	ReadWith func(r io.Reader, name string, lim format.Limits) (*history.History, error)
	// ReadDir reads a history from a directory (nil for stream formats).
	ReadDir func(path string) (*history.History, error)
	// ReadDirWith, when set, is ReadDir within the read limits (the
	// length of a line of a directory of line-oriented logs).
	ReadDirWith func(path string, lim format.Limits) (*history.History, error)
	// SniffDir reports whether a directory holds this format.
	SniffDir func(path string) bool
	// Write writes a history in this format (nil when it cannot).
	Write func(w io.Writer, h *history.History) error
	// Whole marks a stream format whose reader holds the whole input in
	// memory: Open bounds its input by format.Limits.MaxDocument instead
	// of its lines by format.Limits.MaxLine.
	Whole bool
}

// Formats returns every format, in detection order: the most distinctive
// first.
func Formats() []Format {
	return []Format{
		{Name: "isoscope", Describe: "isoscope JSON Lines (the native format)",
			Sniff: native.Sniff, Read: native.Read, Write: native.Write},
		{Name: "cobra", Describe: "Cobra binary log directory (one T<n>.log per session)",
			ReadDir: cobra.ReadDir, SniffDir: cobra.SniffDir},
		{Name: "viper", Describe: "Viper (ViperBench) JSON logs: a directory of J<thread>.log files, one per session, or one such file",
			Sniff: viper.Sniff, Read: viper.Read, ReadWith: viper.ReadWith, ReadDir: viper.ReadDir, ReadDirWith: viper.ReadDirWith, SniffDir: viper.SniffDir},
		{Name: "dbcop", Describe: "dbcop bincode history", Sniff: dbcop.Sniff, Read: dbcop.Read, Write: dbcop.Write, Whole: true},
		{Name: "plume", Describe: "PolySI/Plume text (r(k,v,s,t) lines)", Sniff: plume.Sniff, Read: plume.Read},
		{Name: "awdit", Describe: "AWDIT test text", Sniff: awdit.Sniff, Read: awdit.Read},
		{Name: "knossos", Describe: "Jepsen/knossos register log (porcupine's etcd logs) or knossos EDN or JSON history of a compare-and-set register, or of many (jepsen.independent [key value])", Sniff: knossos.Sniff, Read: knossos.Read},
		{Name: "porcupine", Describe: "porcupine key-value log (get/put/append EDN events)", Sniff: porcupine.Sniff, Read: porcupine.Read},
		{Name: "timekiller", Describe: "TimeKiller (Chronos, Aion) JSON: transactions with hybrid-logical-clock start and commit timestamps",
			Sniff: timekiller.Sniff, Read: timekiller.Read, Whole: true},
		{Name: "jepsen", Describe: "Jepsen list-append or rw-register history, EDN or elle-cli JSON (Elle's input), transactions under any :f, or many (jepsen.independent [key txn])",
			Sniff: jepsen.Sniff, Read: jepsen.Read, Write: jepsen.Write},
	}
}

// Names returns the names of every format.
func Names() []string {
	var out []string
	for _, f := range Formats() {
		out = append(out, f.Name)
	}
	return out
}

// Lookup returns the format named name.
func Lookup(name string) (Format, error) {
	for _, f := range Formats() {
		if f.Name == strings.ToLower(name) {
			return f, nil
		}
	}
	return Format{}, fmt.Errorf("unknown format %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Wrap lets a caller wrap a file's reader (e.g. in a progress bar); size is
// the file's size (0 for standard input, whose size is not known).
type Wrap func(r io.Reader, size int64) (io.Reader, func())

// Open reads the history at path ("-" with stdin for standard input) in
// the named format, or the detected one with "auto" or "". Gzip-compressed
// streams are decompressed for every stream format. It reads with the
// default limits, no deadline, and a torn last line as bad input; OpenWith
// has the options.
func Open(path, name string, stdin io.Reader, wrap Wrap) (*history.History, error) {
	o, err := OpenWith(path, name, Options{Stdin: stdin, Wrap: wrap})
	if err != nil {
		return nil, err
	}
	return o.History, nil
}

// Options tune OpenWith.
type Options struct {
	// Stdin is what path "-" reads.
	Stdin io.Reader
	// Wrap, when set, wraps a file's reader (e.g. in a progress bar).
	Wrap Wrap
	// Context, when set, stops the read within one buffer of the input
	// once it is done; the error then wraps context.Cause(Context)
	// (errors.Is finds context.DeadlineExceeded).
	Context context.Context
	// Limits bound the input: the length of a line of a line-oriented
	// format, the size of a whole-document format (Format.Whole), the
	// expansion of a gzip stream. The zero Limits are the defaults
	// (format.DefaultMaxLine, format.DefaultMaxDocument,
	// format.DefaultMaxGzipRatio). A broken limit is bad input, an error
	// naming the file (and the line), and format.IsLimit reports it.
	Limits format.Limits
	// AllowTorn reads a native history whose last line is torn (no line
	// end, and it does not parse: the recorder died while writing it) up
	// to that line, with a *format.Torn warning in Opened.Warnings, when
	// at least one whole transaction comes before it. Without it, such a
	// line is bad input.
	AllowTorn bool
}

// Opened is what OpenWith read.
type Opened struct {
	// History is the history read.
	History *history.History
	// Warnings are what the caller should tell the user about the input
	// without refusing it (a *format.Torn).
	Warnings []error
}

// OpenWith is Open with options: a deadline, limits, a torn last line.
func OpenWith(path, name string, o Options) (*Opened, error) {
	if o.Context != nil {
		if err := o.Context.Err(); err != nil {
			return nil, fmt.Errorf("%s: reading stopped: %w", path, context.Cause(o.Context))
		}
	}
	if path != "-" {
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			h, err := openDir(path, name, o.Limits)
			if err != nil {
				return nil, err
			}
			return &Opened{History: h}, nil
		}
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	var r io.Reader = o.Stdin
	if f, ok := o.Stdin.(*os.File); ok && path == "-" {
		var release func()
		r, release = format.Interruptible(ctx, f)
		defer release()
	}
	if path == "-" && o.Wrap != nil {
		var done func()
		r, done = o.Wrap(r, 0)
		defer done()
	}
	buf := maxBuffer
	if path != "-" {
		f, err := format.OpenContext(ctx, path)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return nil, err
		}
		defer f.Close()
		var release func()
		r, release = format.Interruptible(ctx, f)
		defer release()
		st, err := f.Stat()
		if err == nil && st.Mode().IsRegular() {
			// A small file needs no large buffer: clearing a megabyte
			// costs more than reading a register log.
			buf = int(min(max(st.Size()+1, minBuffer), maxBuffer))
		}
		if err == nil && o.Wrap != nil {
			var done func()
			r, done = o.Wrap(r, st.Size())
			defer done()
		}
	}
	return read(r, path, name, o, buf)
}

// The buffer a stream is read through: maxBuffer, or for a regular file
// its size when that is smaller, but at least minBuffer (what detection
// peeks at).
const (
	minBuffer = 64 << 10
	maxBuffer = 1 << 20
)

// Read reads a history of a stream format from r, in the format named
// formatName or, with "auto" or "", the one detected from its first bytes
// as Open detects a file's. Gzip-compressed input is decompressed for
// every format. name names r in error messages; the options are OpenWith's
// but for Stdin and Wrap, which Read does not use.
func Read(r io.Reader, name, formatName string, o Options) (*Opened, error) {
	return read(r, name, formatName, o, maxBuffer)
}

// read is Read through a buffer of buf bytes (at least minBuffer).
func read(r io.Reader, name, formatName string, o Options, buf int) (*Opened, error) {
	if o.Context != nil {
		if err := o.Context.Err(); err != nil {
			return nil, fmt.Errorf("%s: reading stopped: %w", name, context.Cause(o.Context))
		}
		r = format.ContextReader(o.Context, r)
	}
	br := bufio.NewReaderSize(r, buf)
	prefix, err := br.Peek(minBuffer)
	if len(prefix) == 0 {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty input: no transactions", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if formatName == "" || formatName == "auto" {
		if formatName = detect(prefix); formatName == "" {
			return nil, fmt.Errorf("%s: cannot tell the history format from its first bytes (known: %s); name it with --format",
				name, strings.Join(Names(), ", "))
		}
	}
	f, err := Lookup(formatName)
	if err != nil {
		return nil, err
	}
	if f.Read == nil {
		return nil, fmt.Errorf("%s: format %s is a directory of files, not a stream", name, f.Name)
	}
	stopped := func(err error) error {
		if o.Context != nil && o.Context.Err() != nil && !errors.Is(err, context.Cause(o.Context)) {
			return fmt.Errorf("%s: reading stopped: %w", name, context.Cause(o.Context))
		}
		return err
	}
	if f.Name == "isoscope" {
		res, err := native.ReadWith(br, name, native.Options{Limits: o.Limits, AllowTorn: o.AllowTorn})
		if err != nil {
			return nil, stopped(err)
		}
		out := &Opened{History: res.History}
		if res.Torn != nil {
			out.Warnings = append(out.Warnings, res.Torn)
		}
		return out, nil
	}
	var src, zr io.Reader = br, nil
	if isGzip(prefix) {
		if zr, err = format.GzipReader(br, name, o.Limits); err != nil {
			var fe *format.Error
			if errors.As(err, &fe) {
				fe.Msg = "bad gzip stream: " + strings.TrimPrefix(fe.Msg, "gzip: ")
			}
			return nil, err
		}
		src = zr
	}
	var guard io.Reader
	if f.Whole {
		guard = format.DocumentReader(src, name, o.Limits.Document())
	} else {
		guard = format.LineReader(src, name, o.Limits.Line())
	}
	var h *history.History
	if f.ReadWith != nil {
		h, err = f.ReadWith(guard, name, o.Limits)
	} else {
		h, err = f.Read(guard, name)
	}
	if err != nil {
		if cause := format.LimitCause(zr, guard); cause != nil {
			return nil, cause
		}
		return nil, stopped(err)
	}
	if err := someTxn(h, name, f.Name); err != nil {
		return nil, err
	}
	return &Opened{History: h}, nil
}

// someTxn refuses a history of a foreign format from which its reader
// made no transaction: the input held something (it was not empty), and
// a check of nothing would claim what no operation showed. A native
// history may be empty: its format says what it holds.
func someTxn(h *history.History, name, formatName string) error {
	if len(h.Txns) > 0 || len(h.Header.Initial.Values) > 0 {
		return nil
	}
	return fmt.Errorf("%s: no transactions: the %s reader found none to check", name, formatName)
}

// detect names the format of a stream from its first bytes.
func detect(prefix []byte) string {
	text := prefix
	if isGzip(prefix) {
		if zr, err := gzip.NewReader(bytes.NewReader(prefix)); err == nil {
			text, _ = io.ReadAll(io.LimitReader(zr, 1<<20))
		}
	}
	for _, f := range Formats() {
		if f.Sniff != nil && f.Sniff(prefix) || f.Sniff != nil && f.Sniff(text) {
			return f.Name
		}
	}
	// JSON Lines that do not parse yet: let the native reader say where.
	if t := bytes.TrimLeft(text, " \t\r\n"); len(t) > 0 && t[0] == '{' && (len(t) < 2 || t[1] != ':') {
		return "isoscope"
	}
	return ""
}

func isGzip(p []byte) bool { return len(p) >= 2 && p[0] == 0x1f && p[1] == 0x8b }

func openDir(path, name string, lim format.Limits) (*history.History, error) {
	var dirFormats []string
	for _, f := range Formats() {
		if f.ReadDir == nil {
			continue
		}
		dirFormats = append(dirFormats, f.Name)
		if (name == "" || name == "auto") && f.SniffDir(path) || name == f.Name {
			var h *history.History
			var err error
			if f.ReadDirWith != nil {
				h, err = f.ReadDirWith(path, lim)
			} else {
				h, err = f.ReadDir(path)
			}
			if err == nil {
				err = someTxn(h, path, f.Name)
			}
			if err != nil {
				return nil, err
			}
			return h, nil
		}
	}
	return nil, fmt.Errorf("%s: a directory, and not one of a directory format (%s)", path, strings.Join(dirFormats, ", "))
}
