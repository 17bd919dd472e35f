// Package jepsenstore finds the history in a Jepsen store directory and
// reads the verdict Jepsen's own checkers (Elle, Knossos, and
// jepsen.independent around either) left beside it in results.edn.
//
// A Jepsen test writes each run to store/<test name>/<timestamp>/, with
// history.edn (one operation map a line), history.txt (the same
// operations as tab-separated text) and results.edn (the checkers'
// results, one EDN map), and points store/<test name>/latest and
// store/latest at the newest run. Find accepts a run directory, a
// directory with a latest entry (a test's, or the store's), or a test
// directory holding exactly one run.
package jepsenstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/registry"
)

// Run is one run of a Jepsen test: where its history and results are.
type Run struct {
	// Dir is the run's directory.
	Dir string
	// History is the path of history.edn, or of history.txt when the run
	// has no history.edn (either may be compressed with gzip: .gz).
	History string
	// Text says History is history.txt, Jepsen's tab-separated
	// rendering (TextReader reads it).
	Text bool
	// Results is the path of results.edn, or "" when the run has none.
	Results string
	// Via says how Dir was reached from the directory given, when it is
	// not that directory ("latest", or the one run of a test
	// directory).
	Via string
}

// Find resolves dir to one run of a Jepsen store: dir itself when it
// holds history.edn or history.txt (or either with .gz); else the run its latest entry points
// to (a symbolic link, or a directory of that name); else, when dir holds
// exactly one subdirectory that is a run, that one. It reports false,
// with no error, when dir is none of these (another format's directory);
// and an error when dir holds several runs and no latest entry (which
// one is meant is not guessed) or cannot be read.
func Find(dir string) (Run, bool, error) {
	if r, ok := runIn(dir); ok {
		return r, true, nil
	}
	latest := filepath.Join(dir, "latest")
	if st, err := os.Stat(latest); err == nil && st.IsDir() {
		if r, ok := runIn(latest); ok {
			r.Via = "latest"
			if target, err := filepath.EvalSymlinks(latest); err == nil {
				r.Via = "latest → " + target
			}
			return r, true, nil
		}
		return Run{}, false, fmt.Errorf("%s: neither history.edn nor history.txt in it", latest)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Run{}, false, err
	}
	var runs []Run
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if st, err := os.Stat(sub); err != nil || !st.IsDir() {
			continue
		}
		if r, ok := runIn(sub); ok {
			runs = append(runs, r)
		}
	}
	switch len(runs) {
	case 0:
		return Run{}, false, nil
	case 1:
		runs[0].Via = "the one run in " + dir
		return runs[0], true, nil
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = filepath.Base(r.Dir)
	}
	slices.Sort(names)
	return Run{}, false, fmt.Errorf("%s: a Jepsen test directory with %d runs (%s) and no latest link: name the run's directory",
		dir, len(runs), strings.Join(names, ", "))
}

// historyNames are the names of a run's history, in order of preference:
// history.edn (it has the operations' instants, history.txt not), and
// either compressed with gzip, as stores kept in repositories often are.
var historyNames = []string{"history.edn", "history.edn.gz", "history.txt", "history.txt.gz"}

// runIn returns the run in dir when dir holds a history (historyNames).
func runIn(dir string) (Run, bool) {
	r := Run{Dir: dir}
	for _, name := range historyNames {
		if isFile(filepath.Join(dir, name)) {
			r.History, r.Text = filepath.Join(dir, name), strings.HasPrefix(name, "history.txt")
			break
		}
	}
	if r.History == "" {
		return Run{}, false
	}
	if isFile(filepath.Join(dir, "results.edn")) {
		r.Results = filepath.Join(dir, "results.edn")
	}
	return r, true
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// Open reads run's history with registry, in the format named by
// formatName or detected ("auto" or ""): history.edn as any file,
// history.txt through TextReader (after gzip, for history.txt.gz), its
// lines bounded by o.Limits.
func Open(run Run, formatName string, o registry.Options) (*registry.Opened, error) {
	if !run.Text {
		return registry.OpenWith(run.History, formatName, o)
	}
	f, err := os.Open(run.History)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if st, err := f.Stat(); err == nil && o.Wrap != nil {
		var done func()
		r, done = o.Wrap(f, st.Size())
		defer done()
	}
	if strings.HasSuffix(run.History, ".gz") {
		if r, err = format.GzipReader(r, run.History, o.Limits); err != nil {
			return nil, err
		}
	}
	// A line longer than the limit fails as it is read, before it is
	// held whole.
	r = format.LineReader(r, run.History, o.Limits.Line())
	return registry.Read(TextReader(r, run.History), run.History, formatName, o)
}

// TextReader reads history.txt, Jepsen's rendering of a history as text
// (jepsen.util/print-history: per line the process, the type, the
// function, the value and, for some, an error, separated by tabs), as
// the EDN operation maps of history.edn, line for line: line n of what it
// returns is line n of the text, so a reader's errors name the text's
// lines. An empty line stays empty; a line with fewer than four fields
// is an error naming it (name names the input).
func TextReader(r io.Reader, name string) io.Reader {
	return &textReader{r: bufio.NewReaderSize(r, 64<<10), name: name}
}

type textReader struct {
	r    *bufio.Reader
	name string
	line int
	// out holds converted text not yet read; err ends the input once out
	// is empty.
	out []byte
	err error
}

func (t *textReader) Read(p []byte) (int, error) {
	for len(t.out) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		text, err := t.r.ReadBytes('\n')
		if len(text) > 0 {
			t.line++
			if t.out, t.err = textLine(t.out[:0], bytes.TrimRight(text, "\r\n"), t.name, t.line); t.err != nil {
				return 0, t.err
			}
		}
		if err != nil {
			t.err = err
		}
	}
	n := copy(p, t.out)
	t.out = t.out[n:]
	return n, nil
}

// textLine appends one line of history.txt as an operation map to b.
func textLine(b, text []byte, name string, line int) ([]byte, error) {
	if len(bytes.TrimSpace(text)) == 0 {
		return append(b, '\n'), nil
	}
	f := bytes.SplitN(text, []byte{'\t'}, 5)
	if len(f) < 4 {
		return b, fmt.Errorf("%s:%d: a line of history.txt has process, type, function and value separated by tabs; this one has %d field(s)", name, line, len(f))
	}
	b = append(b, "{:process "...)
	b = append(b, f[0]...)
	b = append(b, ", :type "...)
	b = append(b, f[1]...)
	b = append(b, ", :f "...)
	b = append(b, f[2]...)
	b = append(b, ", :value "...)
	b = append(b, f[3]...)
	if len(f) == 5 {
		// The error is printed as it was thrown, not always as EDN: it is
		// kept as a string.
		b = append(b, ", :error "...)
		b = ednString(b, f[4])
	}
	return append(b, "}\n"...), nil
}

// ednString appends s as an EDN string literal.
func ednString(b, s []byte) []byte {
	b = append(b, '"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
