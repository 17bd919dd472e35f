package registry

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
)

// seedFiles are the format packages' test inputs: a seed of each format.
var seedFiles = []string{
	"../native/testdata/small.jsonl", "../dbcop/testdata/small.bincode", "../plume/testdata/small.txt",
	"../awdit/testdata/small.txt", "../knossos/testdata/small.log", "../porcupine/testdata/small.txt",
	"../timekiller/testdata/kv.json", "../jepsen/testdata/small.edn", "../jepsen/testdata/rw.json",
	"../viper/testdata/small/J12.log",
}

// gzipped returns data gzip-compressed.
func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// FuzzOpen opens arbitrary input as standard input with format
// detection, plain and gzip-compressed, under small limits: it must give
// a history or an error, never panic, and a stream that reads plain
// must read to the same history gzip-compressed (the gzip dispatch is
// invisible), or fail on a limit the compressed stream breaks.
func FuzzOpen(f *testing.F) {
	for _, p := range seedFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(gzipped(b), true)
	}
	f.Add([]byte("\x1f\x8b"), false)
	f.Add([]byte("{\"id\":1,\"session\":0,\"ops\":[]}\n{\"id\":2"), true)
	f.Fuzz(func(t *testing.T, in []byte, torn bool) {
		lim := format.Limits{MaxLine: 4096, MaxDocument: 1 << 20, MaxGzipRatio: 50}
		o := Options{Stdin: bytes.NewReader(in), Limits: lim, AllowTorn: torn}
		res, err := OpenWith("-", "auto", o)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if res.History == nil {
			t.Fatal("no history and no error")
		}
		plain := history.Notation(res.History)
		if len(in) >= 2 && in[0] == 0x1f && in[1] == 0x8b {
			return
		}
		o.Stdin = bytes.NewReader(gzipped(in))
		again, err := OpenWith("-", "auto", o)
		if err != nil {
			if format.IsLimit(err) {
				return
			}
			t.Fatalf("reads plain, but gzip-compressed: %v", err)
		}
		if got := history.Notation(again.History); got != plain || len(again.Warnings) != len(res.Warnings) {
			t.Fatalf("gzip-compressed reads differently:\n%s\nplain:\n%s", got, plain)
		}
	})
}

// FuzzOpenDir opens arbitrary Cobra or Viper logs as a directory (up to
// three files, named from T0.log to T9.log, J3.log or J12.log, or not a log's
// name) with detection: a history or an error, never a panic, and an
// error that is bad input names the directory.
func FuzzOpenDir(f *testing.F) {
	var logs [][]byte
	for _, name := range []string{"T0.log", "T1.log", "T2.log"} {
		b, err := os.ReadFile(filepath.Join("../cobra/testdata/small", name))
		if err != nil {
			f.Fatal(err)
		}
		logs = append(logs, b)
	}
	f.Add(logs[0], logs[1], logs[2], uint16(0x210))
	f.Add(logs[0], []byte{}, logs[2], uint16(0x3a0))
	f.Add(logs[1], logs[1], []byte("x"), uint16(0xfff))
	var vlogs [][]byte
	for _, name := range []string{"J3.log", "J12.log"} {
		b, err := os.ReadFile(filepath.Join("../viper/testdata/small", name))
		if err != nil {
			f.Fatal(err)
		}
		vlogs = append(vlogs, b)
	}
	f.Add(vlogs[0], vlogs[1], []byte{}, uint16(0x2ef))
	f.Fuzz(func(t *testing.T, a, b, c []byte, names uint16) {
		dir := t.TempDir()
		for i, data := range [][]byte{a, b, c} {
			n := int(names>>(4*i)) & 0xf
			name := "T" + string(rune('0'+n%10)) + ".log"
			if n >= 10 {
				name = []string{"T-1.log", "T01.log", "x.log", "T1.txt", "J12.log", "J3.log"}[n-10]
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res, err := OpenWith(dir, "auto", Options{})
		if err != nil {
			var fe *format.Error
			if errors.As(err, &fe) && !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q does not name the directory", err)
			}
			return
		}
		ids := map[history.Value]bool{}
		for i := range res.History.Txns {
			if ids[res.History.Txns[i].ID] {
				t.Fatalf("duplicate transaction id %v", res.History.Txns[i].ID)
			}
			ids[res.History.Txns[i].ID] = true
		}
		_ = history.NewIndex(res.History)
	})
}
