package viper

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
)

// TestGolden reads the hand-made directories of testdata:
//
// small (no initial transaction): J3.log reads 0 (null), writes, reads a
// value nobody writes (2=555, the initial value it implies), inserts over
// nothing, deletes what it wrote and fails an update (left out), then an
// empty transaction (left out); J12.log reads the tombstone (dead), scans 1..5 (live
// rows out of key order, a dead row), then, after a blank line, the final
// transaction: a scan of everything with the final flag, an insert with
// ready and the actual operation, a delete with ready; J100.log (no line
// end) reads a negative value nobody writes (initial too), a second value
// nobody writes from key 2 (not initial: J3.log read another first) and
// scans up to the largest key; J99.log is
// empty, notes.txt and the directory Jdir are not logs.
//
// init: J1.log is ViperBench's initial transaction (a scan of everything,
// live and dead rows), J20.log reads its values, writes 0 to key 4 (so a
// read of 0 from 4 is a read of that write, and a read of 0 from key 5 is
// null) and reads a value nobody writes (key 6: not initial this time).
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		dir      string
		sessions string
		initial  map[int64]int64
	}{
		{"small", "3,12,100", map[int64]int64{2: 555, 9: -3}},
		{"init", "20", map[int64]int64{1: 11, 2: 12, 3: 13}},
	} {
		t.Run(c.dir, func(t *testing.T) {
			h, err := ReadDir(filepath.Join("testdata", c.dir))
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "testdata/"+c.dir+".golden", formattest.Render(h))
			if !h.Header.Present || h.Header.UniqueValues || !strings.Contains(h.Header.Source, "Viper") {
				t.Errorf("header %+v", h.Header)
			}
			var labels []string
			for _, s := range h.Sessions {
				labels = append(labels, s.String())
			}
			if got := strings.Join(labels, ","); got != c.sessions {
				t.Errorf("sessions %s, want %s", got, c.sessions)
			}
			if len(h.Header.Initial.Values) != len(c.initial) {
				t.Errorf("initial values %v, want %v", h.Header.Initial.Values, c.initial)
			}
			for k, v := range c.initial {
				id, _ := h.LookupKey(history.IntValue(k))
				if got := h.InitialValue(id); got != history.IntValue(v) {
					t.Errorf("initial value of %d: %v, want %d", k, got, v)
				}
			}
		})
	}
}

// TestReadBad reads malformed logs: each error names the file, the line
// and the field, and says what is wrong.
func TestReadBad(t *testing.T) {
	const init = `{"value": [["range", "nil", "nil", [{"id": 1, "sk": 1, "val": 11}], []]], "isInitial": true, "isFinal": false}` + "\n"
	cases := []struct {
		name  string
		logs  []string
		file  string
		line  int
		field string
		want  string
	}{
		{"not json", []string{"hello\n"}, "J0.log", 1, "", "a transaction must be a JSON object"},
		{"malformed", []string{`{"value": [["r", 1, 2, false]]` + "\n"}, "J0.log", 1, "", "malformed: unexpected EOF"},
		{"trailing", []string{`{"value": []} {"value": []}` + "\n"}, "J0.log", 1, "", "more than one JSON value"},
		{"no value", []string{`{"ops": []}` + "\n"}, "J0.log", 1, "value", "missing"},
		{"value not a list", []string{`{"value": 3}` + "\n"}, "J0.log", 1, "value", "a JSON number where the format wants an array"},
		{"initial flag", []string{`{"value": [], "isInitial": 1}` + "\n"}, "J0.log", 1, "isInitial", "a JSON number where the format wants true or false"},
		{"op not a list", []string{`{"value": [3]}` + "\n"}, "J0.log", 1, "value[0]", "an operation must be a non-empty array"},
		{"empty op", []string{`{"value": [[]]}` + "\n"}, "J0.log", 1, "value[0]", "non-empty array"},
		{"name", []string{`{"value": [[1, 2, 3]]}` + "\n"}, "J0.log", 1, "value[0][0]", "the operation's name must be a string"},
		{"unknown", []string{`{"value": [["r", 1, 0, false], ["append", 1, 5]]}` + "\n"}, "J0.log", 1, "value[1][0]", `unknown operation "append"`},
		{"short read", []string{`{"value": [["r", 1]]}` + "\n"}, "J0.log", 1, "value[0]", `"r" has 2 elements, want 3 to 4: ["r", key, value, isDead]`},
		{"write without succ", []string{`{"value": [["w", 1, 5]]}` + "\n"}, "J0.log", 1, "value[0]", `"w" has 3 elements, want 4`},
		{"long insert", []string{`{"value": [["i", 1, 5, 0, false, true, true, "i", 9]]}` + "\n"}, "J0.log", 1, "value[0]", `"i" has 9 elements, want 6 to 8`},
		{"short delete", []string{`{"value": [["d", 1, 5, 0, false]]}` + "\n"}, "J0.log", 1, "value[0]", `"d" has 5 elements`},
		{"short range", []string{`{"value": [["range", 1, 2, []]]}` + "\n"}, "J0.log", 1, "value[0]", `"range" has 4 elements, want 5 to 6`},
		{"null key", []string{`{"value": [["r", null, 0, false]]}` + "\n"}, "J0.log", 1, "value[0][1]", "the key must be a 64-bit integer or a string, not null"},
		{"float key", []string{`{"value": [["r", 1.5, 0, false]]}` + "\n"}, "J0.log", 1, "value[0][1]", "not 1.5"},
		{"big key", []string{`{"value": [["r", 9223372036854775808, 0, false]]}` + "\n"}, "J0.log", 1, "value[0][1]", "64-bit"},
		{"mixed keys", []string{`{"value": [["r", 1, 0, false]]}` + "\n", `{"value": [["r", "x", 0, false]]}` + "\n"}, "J1.log", 1, "value[0][1]", "the key x is a string, and the history's keys before it are ints"},
		{"null write", []string{`{"value": [["w", 1, null, true]]}` + "\n"}, "J0.log", 1, "value[0][2]", "the value must be a 64-bit integer or a string, not null"},
		{"float value", []string{`{"value": [["r", 1, 2e3, false]]}` + "\n"}, "J0.log", 1, "value[0][2]", "not 2e3"},
		{"dead flag", []string{`{"value": [["r", 1, 2, "no"]]}` + "\n"}, "J0.log", 1, "value[0][3]", `the is-dead flag must be true or false, not "no"`},
		{"succ flag", []string{`{"value": [["w", 1, 2, 1]]}` + "\n"}, "J0.log", 1, "value[0][3]", "the success flag must be true or false, not 1"},
		{"insert read value", []string{`{"value": [["i", 1, 2, [], false, true]]}` + "\n"}, "J0.log", 1, "value[0][3]", "not []"},
		{"ready flag", []string{`{"value": [["i", 1, 2, 0, false, true, 7]]}` + "\n"}, "J0.log", 1, "value[0][6]", "the ready flag"},
		{"range bound", []string{`{"value": [["range", null, 5, [], []]]}` + "\n"}, "J0.log", 1, "value[0][1]", `a range bound must be a key or "nil"`},
		{"range rows", []string{`{"value": [["range", 1, 5, {}, []]]}` + "\n"}, "J0.log", 1, "value[0][3]", "the live rows must be an array"},
		{"dead rows", []string{`{"value": [["range", 1, 5, [], [1]]]}` + "\n"}, "J0.log", 1, "value[0][4]", "the dead rows must be an array"},
		{"row without val", []string{`{"value": [["range", 1, 5, [{"id": 2}], []]]}` + "\n"}, "J0.log", 1, "value[0][3][0]", `a row must have an "id" and a "val"`},
		{"row outside", []string{`{"value": [["range", 1, 5, [{"id": 2, "val": 3}], [{"id": 6, "val": 4}]]]}` + "\n"}, "J0.log", 1, "value[0][4][0].id", "the key 6 is outside the range [1, 5]"},
		{"row twice", []string{`{"value": [["range", "nil", 5, [{"id": 2, "val": 3}], [{"id": 2, "val": 4}]]]}` + "\n"}, "J0.log", 1, "value[0][4][0].id", "the key 2 is in the result twice"},
		{"row value", []string{`{"value": [["range", "nil", "nil", [{"id": 2, "val": null}], []]]}` + "\n"}, "J0.log", 1, "value[0][3][0].val", "not null"},
		{"final flag", []string{`{"value": [["range", "nil", "nil", [], [], "yes"]]}` + "\n"}, "J0.log", 1, "value[0][5]", "the final-query flag"},
		{"timestamps half", []string{`{"preBeginTS": 5, "value": []}` + "\n"}, "J0.log", 1, "postCommitTS", "missing"},
		{"timestamps order", []string{`{"preBeginTS": 5, "postCommitTS": 4, "value": []}` + "\n"}, "J0.log", 1, "postCommitTS", "4 is before preBeginTS 5"},
		{"timestamp kind", []string{`{"preBeginTS": -5, "postCommitTS": 4, "value": []}` + "\n"}, "J0.log", 1, "preBeginTS", "-5 is not a wall-clock instant"},
		{"initial not alone", []string{`{"value": []}` + "\n" + init}, "J0.log", 2, "isInitial", "follows other transactions"},
		{"after initial", []string{init + `{"value": []}` + "\n"}, "J0.log", 2, "", "a transaction after the initial transaction"},
		{"two initials", []string{init, init}, "J1.log", 1, "isInitial", "a second initial transaction (the first is in J0.log)"},
		{"initial bounded", []string{`{"value": [["range", 1, "nil", [], []]], "isInitial": true}` + "\n"}, "J0.log", 1, "value[0]", `must have no bounds ("nil", "nil")`},
		{"initial read", []string{`{"value": [["r", 1, 2, false]], "isInitial": true}` + "\n"}, "J0.log", 1, "value[0]", "the initial transaction must be one range query over every key, or successful writes"},
		{"initial failed write", []string{`{"value": [["w", 1, 2, false]], "isInitial": true}` + "\n"}, "J0.log", 1, "value[0]", "successful writes"},
		{"same name", []string{`{"value": []}` + "\n", `{"value": []}` + "\n"}, "J0.log", 1, "", "appears twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			names := make([]string, len(c.logs))
			data := make([][]byte, len(c.logs))
			for i, l := range c.logs {
				names[i] = "J" + strconv.Itoa(i) + ".log"
				if c.name == "same name" {
					names[i] = "J0.log"
				}
				data[i] = []byte(l)
			}
			_, err := readFiles("dir", names, data)
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *format.Error", err)
			}
			if fe.File != c.file || fe.Line != c.line || fe.Field != c.field || !strings.Contains(fe.Msg, c.want) {
				t.Errorf("got %q (file %q line %d field %q), want file %q line %d field %q and a message containing %q",
					err, fe.File, fe.Line, fe.Field, c.file, c.line, c.field, c.want)
			}
		})
	}
}

// TestReadDirBad reads what is not a Viper directory, and a log line past
// the line limit.
func TestReadDirBad(t *testing.T) {
	var fe *format.Error
	if _, err := ReadDir(t.TempDir()); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "no Viper logs") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := ReadDir(filepath.Join("testdata", "small", "J3.log")); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "not a directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := ReadDir(filepath.Join("testdata", "missing")); err == nil {
		t.Error("missing directory: no error")
	}
	dir := t.TempDir()
	write(t, dir, "J1.log", `{"value": [["range", "nil", "nil", [], []]], "isInitial": true}`+"\n")
	if _, err := ReadDir(dir); !errors.As(err, &fe) || fe.Msg != "no transactions in the logs (only the initial transaction)" {
		t.Errorf("only the initial transaction: %v", err)
	}
	write(t, dir, "J2.log", `{"value": [["r", 1, 0, false]]}`+"\n"+`{"value": [["r", 1, 0, false], ["r", 2, 0, false], ["r", 3, 0, false], ["r", 4, 0, false]]}`+"\n")
	_, err := ReadDirWith(dir, format.Limits{MaxLine: 75})
	if !format.IsLimit(err) || !errors.As(err, &fe) || fe.File != filepath.Join(dir, "J2.log") || fe.Line != 2 {
		t.Errorf("a line past the limit: %v", err)
	}
	if _, err := ReadDirWith(dir, format.Limits{MaxLine: 100}); err != nil {
		t.Errorf("within the limit: %v", err)
	}
}

// TestJSONFolder reads ViperBench's output directory, whose json/ folder
// holds the logs, and a log file alone.
func TestJSONFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "json"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "json"), "J7.log", `{"value": [["w", 1, 5, true]]}`+"\n")
	write(t, dir, "benchmark.log", "throughput\n")
	if !SniffDir(dir) {
		t.Error("SniffDir of the folder holding json/ = false")
	}
	h, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := history.Notation(h); got != "tJ7.log:1: s7: w 1 5" {
		t.Errorf("got %q", got)
	}
	f, err := os.Open(filepath.Join(dir, "json", "J7.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err = Read(f, filepath.Join(dir, "json", "J7.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := history.Notation(h); got != "tJ7.log:1: s7: w 1 5" {
		t.Errorf("one file: got %q", got)
	}
	// Two names of one thread id: the second session is labelled by its
	// file's name.
	write(t, filepath.Join(dir, "json"), "J07.log", `{"value": [["r", 1, 5, false]]}`+"\n")
	h, err = ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := history.Notation(h); got != "tJ07.log:1: s7: r 1 5 | tJ7.log:1: sJ7.log: w 1 5" {
		t.Errorf("J07.log and J7.log: got %q", got)
	}
}

func write(t testing.TB, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSniff checks which first bytes Sniff claims, and SniffDir.
func TestSniff(t *testing.T) {
	formattest.Sniff(t, Sniff, map[string]bool{
		`{"value": [["r", 12, -806, false], ["w", 12, 77, true]]}`: true,
		`{"value": []}`: true,
		`{"value":[["range","nil","nil",[{"id":1,"sk":1,"val":3}],[]]],"isInitial":true}`:                                  true,
		`{"preBeginTS": 1, "postBeginTS": 2, "preCommitTS": 3, "postCommitTS": 4, "value": [["i", 1, 2, 0, false, true]]}`: true,
		"\n\n" + `{"value": [["d", 1, 2, 3, false, true]]}`:                                                                true,
		`{"value": [["ra`:                    true, // cut short by the prefix
		`{"value": [["x", 1]]}`:              false,
		`{"value": [3]}`:                     false,
		`{"value": 3}`:                       false,
		`{"ops": [["r", 1, null]]}`:          false,
		`{"id": 1, "session": 0, "ops": []}`: false,
		`{"type": "ok", "f": "txn", "value": [["r", 1, null]], "process": 0}`:                                   false,
		`{"value": [["r", 1, null]], "type": "ok"}`:                                                             false,
		`{"value": [["r", "a\"]", 0, false]], "isFinal": true}`:                                                 true,
		`{"value": [["range", 1, 2, [{"id": 1, "sk": 1, "val": 2}], []]], "isInitial": true, "isFinal": false}`: true,
		`{"value": [["r", 1, 0, false]], "value": []}`:                                                          false,
		`{"value": [["r", 1, 0, false]], "isFinal": tr`:                                                         true, // cut short
		`{:type :ok :f :txn :value [[:r 1 nil]]}`:                                                               false,
		`[{"tid": 1, "sid": 1, "ops": []}]`:                                                                     false,
		`r(1,1,0,0)`:                                                                                            false,
		``:                                                                                                      false,
	})
	if !SniffDir(filepath.Join("testdata", "small")) || !SniffDir(filepath.Join("testdata", "init")) {
		t.Error("SniffDir(testdata/…) = false")
	}
	if SniffDir("testdata") || SniffDir(filepath.Join("testdata", "small", "J3.log")) || SniffDir(t.TempDir()) {
		t.Error("SniffDir accepts a directory without logs, or a file")
	}
	cobraLike := t.TempDir()
	write(t, cobraLike, "J1.log", "S\x00\x00\x00\x00\x00\x00\x00\x01")
	if SniffDir(cobraLike) {
		t.Error("SniffDir accepts binary logs")
	}
}

// FuzzViperRead reads arbitrary bytes as two logs: the reader returns a
// history or a *format.Error, never panics, and what it returns is a
// history every part of isoscope can index.
func FuzzViperRead(f *testing.F) {
	for _, dir := range []string{"small", "init"} {
		ents, err := os.ReadDir(filepath.Join("testdata", dir))
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join("testdata", dir, e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, uint16(len(b)/2))
			f.Add(b, uint16(len(b)))
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				f.Add(b, uint16(i+1)) // at a line's end
			}
		}
	}
	f.Add([]byte(`{"value": [["r", 1, 0, false], ["w", 1, 5, true], ["range", 0, 9, [{"id": 1, "sk": 1, "val": 5}], []]], "isInitial": false, "isFinal": true}`+"\n"+
		`{"value": [["i", 2, 7, 0, false, true], ["d", 1, 6, 5, false, true], ["range", "nil", 3, [], [{"id": 1, "sk": 1, "val": 6}], false]]}`+"\n"), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		c := min(int(cut), len(data))
		h, err := readFiles("fuzz", []string{"J0.log", "J1.log"}, [][]byte{data[:c], data[c:]})
		// The fast path for ViperBench's own lines reads what the
		// decoding path reads.
		fastLines = false
		slow, slowErr := readFiles("fuzz", []string{"J0.log", "J1.log"}, [][]byte{data[:c], data[c:]})
		fastLines = true
		switch {
		case (err == nil) != (slowErr == nil):
			t.Fatalf("fast path: %v, decoding path: %v", err, slowErr)
		case err != nil && err.Error() != slowErr.Error():
			t.Fatalf("fast path: %v, decoding path: %v", err, slowErr)
		case err == nil && history.Notation(h) != history.Notation(slow):
			t.Fatalf("fast path read\n%s\ndecoding path\n%s", history.Notation(h), history.Notation(slow))
		}
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *format.Error", err)
			}
			return
		}
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				if op.Kind == history.Scan {
					if op.Range.Lo.IsNull() {
						t.Fatalf("a scan without a lower bound")
					}
					for j := 1; j < len(op.Range.Pairs); j++ {
						if history.Compare(h.Keys[op.Range.Pairs[j-1].Key], h.Keys[op.Range.Pairs[j].Key]) >= 0 {
							t.Fatalf("scan pairs out of order")
						}
					}
				}
			}
		}
		_ = history.Notation(h)
		_ = history.NewIndex(h)
		var b bytes.Buffer
		if err := native.Write(&b, h); err != nil {
			t.Fatalf("native.Write: %v", err)
		}
		back, err := native.Read(&b, "back")
		if err != nil {
			t.Fatalf("what convert writes does not read back: %v\n%s", err, b.String())
		}
		if got, want := history.Notation(back), history.Notation(h); got != want {
			t.Fatalf("read back:\n%s\nwant\n%s", got, want)
		}
	})
}
