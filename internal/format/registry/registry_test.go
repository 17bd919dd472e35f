package registry

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// write puts data in a file of the test's directory and returns its path.
func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestOpenLaterBadLine: a file whose first line is good in a format and a
// later line is bad is taken as that format, and --format auto reports the
// format's own error at the bad line, as --format with the format's name
// does, not "cannot tell the history format".
func TestOpenLaterBadLine(t *testing.T) {
	dbcop, err := os.ReadFile("../dbcop/testdata/small.bincode")
	if err != nil {
		t.Fatal(err)
	}
	plume := []byte("w(1,5,1,10)\n\nr(1,5,2,20)\nr(1,1,1,1\nw(2,1,1,1)\n")
	cases := []struct {
		format string
		data   []byte
		line   int    // the line the error names (0: none, a binary format)
		msg    string // a part of the error
	}{
		{"isoscope", []byte(`{"id":1,"session":0,"ops":[["r","x",null]]}` + "\n" + `{"id":2,"session":0,"ops":[["r","x",1]]` + "\n"), 2, "malformed JSON"},
		{"isoscope", []byte(`{"format":"isoscope-history","version":1}` + "\n" + `{"id":2,"session":0,"ops":[["q","x",1]]}` + "\n"), 2, `unknown operation "q"`},
		{"dbcop", dbcop[:len(dbcop)-7], 0, ""},
		{"plume", plume, 4, "want ')' after the txn"},
		{"plume", gz(t, plume), 4, "want ')' after the txn"},
		{"plume", []byte("w(1,5,1,10)\nw(1,5,1)\n"), 2, "want ',' after the session"},
		{"awdit", []byte("w 0 0\nw 1 0\n-----\nr 1\n"), 4, `"r" needs a key and a value`},
		{"awdit", []byte("\nr 0 0\n=====\nw 0 x\n"), 4, `the value "x" is not a non-negative integer`},
		{"knossos", []byte("INFO  jepsen.util - 0\t:invoke\t:write\t1\nINFO  jepsen.util - 0\t:ok\n"), 2, ""},
		{"porcupine", []byte(`{:process 0, :type :invoke, :f :get, :key "a", :value nil}` + "\n" + `{:process 0, :type :ok, :f :get, :key 7, :value nil}` + "\n"), 2, "7 is not a string"},
		{"timekiller", []byte(`[{"tid":1,"sid":0,"sts":{"p":1,"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"w","k":1,"v":1}]},` + "\n" +
			`{"tid":2,"sid":0,"sts":{"p":3,"l":0},"cts":{"p":4,"l":0},"ops":[{"t":"x","k":1,"v":1}]}]` + "\n"), 2, `unknown operation type "x"`},
		{"viper", []byte(`{"value": [["r", 1, 0, false]]}` + "\n" + `{"value": [["q", 1]]}` + "\n"), 2, `unknown operation "q"`},
		{"jepsen", []byte("{:type :invoke, :process 0, :f :txn, :value [[:append 1 1]]}\n{:type :ok, :process 0, :f :txn, :value [[:append 1 1]]\n"), 3, "ends inside the map opened on line 2"},
		{"jepsen", []byte(`{"type":"invoke","process":0,"f":"txn","value":[["append",1,1]]}` + "\n" + `{"type":"ok","process":0,"f":"txn","value":[["cas",1,1]]}` + "\n"), 2, "unknown micro-operation"},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			path := write(t, "history", c.data)
			if got := detect(c.data[:min(len(c.data), 64<<10)]); got != c.format {
				t.Errorf("detect = %q, want %q", got, c.format)
			}
			_, named := Open(path, c.format, nil, nil)
			_, auto := Open(path, "auto", nil, nil)
			var fe *format.Error
			if !errors.As(named, &fe) {
				t.Fatalf("--format %s: got %v, want a *format.Error", c.format, named)
			}
			if fe.Line != c.line || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("--format %s: got %v, want line %d and %q", c.format, named, c.line, c.msg)
			}
			if auto == nil || auto.Error() != named.Error() {
				t.Errorf("--format auto: got %v, want what --format %s gives: %v", auto, c.format, named)
			}
		})
	}
}

// TestOpenGarbage: a file that no format's first line fits is still one
// whose format cannot be told, even when a later line would fit one.
func TestOpenGarbage(t *testing.T) {
	for _, in := range []string{
		"hello\nw(1,0,0,0)\n",
		"r(1,0,1,1\nw(1,0,0,0)\n",
		"r 1\nw 0 0\n",
		"-----\nw 0 0\n",
		"INFO  jepsen.util - oops\n",
		"\x00\x01\x02 binary",
	} {
		_, err := Open(write(t, "garbage", []byte(in)), "auto", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "cannot tell the history format") {
			t.Errorf("%q: got %v, want cannot tell the history format", in, err)
		}
	}
}

// TestOpenLoneSurrogates: keys (or sessions) "\ud800" and "\udbff" are not
// read as one U+FFFD key in any JSON format: each file is bad input that
// names the line.
func TestOpenLoneSurrogates(t *testing.T) {
	for _, c := range []struct {
		format, in string
		line       int
	}{
		{"isoscope", `{"id":1,"session":0,"ops":[["w","\ud800",1]]}` + "\n" + `{"id":2,"session":1,"ops":[["r","\udbff",1]]}` + "\n", 1},
		{"jepsen", `{"type":"invoke","process":0,"f":"txn","value":[["append","k",1]]}` + "\n" +
			`{"type":"ok","process":0,"f":"txn","value":[["append","\ud800",1]]}` + "\n", 2},
		{"jepsen", "{:type :ok, :process 0, :f :txn, :value [[:append 1 1]]}\n{:type :ok, :process 1, :f :txn, :value [[:r \"\\udbff\" nil]]}\n", 2},
		{"porcupine", `{:process 0, :type :invoke, :f :get, :key "\ud800", :value nil}` + "\n", 1},
		{"timekiller", `[{"tid":1,"sid":"\ud800","sts":{"p":1,"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"w","k":1,"v":1}]}]`, 1},
	} {
		_, err := Open(write(t, "h", []byte(c.in)), "auto", nil, nil)
		var fe *format.Error
		if !errors.As(err, &fe) || fe.Line != c.line || !strings.Contains(fe.Msg, "surrogate") {
			t.Errorf("%s: got %v, want bad input on line %d about a lone surrogate", c.format, err, c.line)
		}
	}
}

// TestOpenDirLaterBadRecord: a Cobra log directory whose first log starts
// with a good transaction and has a bad record later is read as Cobra, and
// --format auto reports Cobra's error, as --format cobra does.
func TestOpenDirLaterBadRecord(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "cobra", "testdata", "small")
	for _, name := range []string{"T0.log", "T1.log", "T2.log", "T10.log"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "T0.log" {
			b = append(b, 'Z') // an unknown record after the good ones
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, named := Open(dir, "cobra", nil, nil)
	var fe *format.Error
	if !errors.As(named, &fe) {
		t.Fatalf("--format cobra: got %v, want a *format.Error", named)
	}
	if _, auto := Open(dir, "auto", nil, nil); auto == nil || auto.Error() != named.Error() {
		t.Errorf("--format auto: got %v, want what --format cobra gives: %v", auto, named)
	}
}

// TestOpenViperDir: a Viper log directory (or the folder holding its
// json/) is detected and read as --format viper reads it; a bad line in a
// later log is Viper's error either way; the read limits reach its lines.
func TestOpenViperDir(t *testing.T) {
	src := filepath.Join("..", "viper", "testdata", "small")
	named, err := Open(src, "viper", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	auto, err := Open(src, "auto", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if history.Notation(auto) != history.Notation(named) || len(auto.Txns) != 5 {
		t.Errorf("--format auto read\n%s\nwant\n%s", history.Notation(auto), history.Notation(named))
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "json")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"J3.log", "J12.log"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "J12.log" {
			b = append(b, "{\"value\": [[\"w\", 1, 2]]}\n"...) // no success flag
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, namedErr := Open(parent, "viper", nil, nil)
	var fe *format.Error
	if !errors.As(namedErr, &fe) || fe.File != filepath.Join(dir, "J12.log") || fe.Line != 4 || fe.Field != "value[0]" {
		t.Fatalf("--format viper: got %v, want bad input at J12.log:4 value[0]", namedErr)
	}
	if _, autoErr := Open(parent, "auto", nil, nil); autoErr == nil || autoErr.Error() != namedErr.Error() {
		t.Errorf("--format auto: got %v, want what --format viper gives: %v", autoErr, namedErr)
	}
	_, err = OpenWith(src, "auto", Options{Limits: format.Limits{MaxLine: 100}})
	if !format.IsLimit(err) || !errors.As(err, &fe) || fe.Line != 1 || !strings.HasSuffix(fe.File, "J12.log") {
		t.Errorf("a line past --max-line: got %v", err)
	}
	if _, err := Open(t.TempDir(), "auto", nil, nil); err == nil || !strings.Contains(err.Error(), "not one of a directory format (cobra, viper)") {
		t.Errorf("an empty directory: %v", err)
	}
}

// TestDetectGzip: detection sniffs a gzip stream's decompressed prefix,
// even one cut short, and a stream that only starts like gzip is no
// format's.
func TestDetectGzip(t *testing.T) {
	header := `{"format":"isoscope-history","version":1,"initial":"absent"}` + "\n"
	txn := `{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}` + "\n"
	cut := gz(t, []byte(header+strings.Repeat(txn, 100)))
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"gzip", gz(t, []byte(header+txn)), "isoscope"},
		{"gzip cut short", cut[:len(cut)-8], "isoscope"},
		{"gzip plume", gz(t, []byte("w(1,5,1,10)\n")), "plume"},
		{"broken gzip", []byte("\x1f\x8bnot really"), ""},
	} {
		if got := detect(c.in); got != c.want {
			t.Errorf("%s: detect = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRead: Read reads every stream format from a reader as Open reads it
// from a file, plain and gzip-compressed, detected or named.
func TestRead(t *testing.T) {
	for _, p := range seedFiles {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Open(p, "auto", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{data, gz(t, data)} {
			got, err := Read(bytes.NewReader(in), p, "auto", Options{})
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if history.Notation(got.History) != history.Notation(want) {
				t.Errorf("%s: Read gives another history than Open", p)
			}
		}
	}
	if _, err := Read(strings.NewReader("hello"), "in", "", Options{}); err == nil || !strings.Contains(err.Error(), "in: cannot tell the history format") {
		t.Errorf("garbage: %v", err)
	}
	if _, err := Read(strings.NewReader("w(1,5,1,10)\n"), "in", "plume", Options{}); err != nil {
		t.Errorf("named format: %v", err)
	}
	if _, err := Read(strings.NewReader("x"), "in", "cobra", Options{}); err == nil || !strings.Contains(err.Error(), "a directory of files") {
		t.Errorf("a directory format: %v", err)
	}
}

// TestCreate: Create writes what it is given, gzip-compressed when the
// name ends in .gz, to standard output for "-"; an aborted file is gone.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	const text = `{"id":1,"session":0,"ops":[["w","x",1]]}` + "\n"
	for _, name := range []string{"h.jsonl", "h.jsonl.gz"} {
		path := filepath.Join(dir, name)
		w, err := Create(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, text); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") != isGzip(raw) {
			t.Errorf("%s: gzip-compressed %v", name, isGzip(raw))
		}
		res, err := Open(path, "auto", nil, nil)
		if err != nil || len(res.Txns) != 1 {
			t.Errorf("%s: reads back as %v, %v", name, res, err)
		}
	}
	var stdout bytes.Buffer
	w, err := Create("-", &stdout)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, text)
	if stdout.Len() != 0 {
		t.Error("written before Close")
	}
	if err := w.Close(); err != nil || stdout.String() != text {
		t.Errorf("standard output: %q, %v", stdout.String(), err)
	}
	path := filepath.Join(dir, "aborted.jsonl")
	if w, err = Create(path, nil); err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, text)
	w.Abort()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an aborted file is left: %v", err)
	}
	if _, err := Create(filepath.Join(dir, "no", "such", "dir"), nil); err == nil {
		t.Error("no error creating a file in a missing directory")
	}
}
