package awdit

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
)

// corpora is the shared corpora directory, relative to this package.
const corpora = formattest.Corpora

func render(h *history.History) string { return formattest.Render(h) }

func readFile(t *testing.T, path string) *history.History {
	t.Helper()
	return formattest.ReadFile(t, path, Read)
}

func TestGolden(t *testing.T) {
	for _, c := range []struct{ in, golden string }{
		// Blank lines, spaces, an empty session and an empty
		// transaction (skipped), no newline at the end, and a read of a
		// value nobody wrote (thin air).
		{filepath.Join("testdata", "small.txt"), "small.golden"},
		// Real AWDIT tests.
		{filepath.Join(corpora, "awdit", "histories", "tests", "causal", "long-fork.txt"), "long-fork.golden"},
		{filepath.Join(corpora, "awdit", "histories", "tests", "read-atomic", "generated", "l4e10sqrt.txt"), "l4e10sqrt.golden"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			if _, err := os.Stat(c.in); err != nil {
				t.Skipf("no input: %v", err)
			}
			h := readFile(t, c.in)
			if !h.Header.Present || h.Header.UniqueValues || h.Header.Initial.Values != nil || !strings.Contains(h.Header.Source, "AWDIT") {
				t.Errorf("header %+v", h.Header)
			}
			for i := range h.Txns {
				if h.Txns[i].Status != history.Committed {
					t.Errorf("transaction %v is %v", h.Txns[i].ID, h.Txns[i].Status)
				}
			}
			golden.Check(t, "testdata/"+c.golden, render(h))
		})
	}
}

func TestReadBad(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"unknown op", "w 1 1\n-----\nx 1 1\n", 3, `want "r key value", "w key value", "-----"`},
		{"missing value", "w 1 1\n\nr 1\n", 3, `"r" needs a key and a value, found 1 fields`},
		{"extra field", "r 1 1 1\n", 1, `"r" needs a key and a value, found 3 fields`},
		{"negative key", "r -1 1\n", 1, `the key "-1" is not a non-negative integer`},
		{"plus value", "r 1 +1\n", 1, `the value "+1" is not a non-negative integer`},
		{"word value", "w 1 one\n", 1, `the value "one" is not a non-negative integer`},
		{"out of range", "w 1 99999999999999999999\n", 1, "the value 99999999999999999999 is out of the 64-bit range"},
		{"mixed separator", "w 1 1\n-=-=-\n", 2, "want"},
		{"plume line", "w(1,1,1,1)\n", 1, "want"},
		{"long line", "w 1 1\nr 1 " + strings.Repeat("1", maxLine) + "\n", 2, "line is longer than 64 KiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in), "bad.txt")
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *format.Error", err)
			}
			if fe.File != "bad.txt" || fe.Line != c.line || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got %q (line %d), want line %d and message containing %q", err, fe.Line, c.line, c.msg)
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "=====\n-----\n"} {
		h, err := Read(strings.NewReader(in), "x")
		if err != nil || len(h.Txns) != 0 || len(h.Sessions) != 0 {
			t.Errorf("%q: %v, %d transactions, %d sessions", in, err, len(h.Txns), len(h.Sessions))
		}
	}
}

func TestSniff(t *testing.T) {
	formattest.Sniff(t, Sniff, map[string]bool{
		"w 0 0\nw 1 1\n=====\nw 0 2\n=====\nr 0 2\n-----\nr 1 1": true,
		"\nr 0 0\n-----\nw 0 1\nw 0 ":                            true, // last line cut short
		"=====\nw 0 1\n":                                         false,
		"":                                                       false,
		"w 0":                                                    false,
		`{"format":"isoscope-history","version":1}`:               false,
		`{"id":1,"session":0,"ops":[["r","x",1]]}`:                false,
		`{:index 0, :type :invoke, :f :txn, :value [[:r 1 nil]]}`: false,
		"w(1,0,0,0)\nr(1,0,1,1)\n":                                false,
		// The first line decides; Read reports a later bad line.
		"w 0 0\nhello\n": true,
		"w 0 0\nr 1\n":   true,
		"hello\nw 0 0\n": false,
		"r 1\nw 0 0\n":   false,
		"-----\nw 0 0\n": false,
		"INFO  jepsen.util - 1\t:invoke\t:read\tnil\n": false,
	})
}

// TestCorpus loads every AWDIT test history LABELS.tsv lists.
func TestCorpus(t *testing.T) {
	f, err := os.Open(filepath.Join(corpora, "LABELS.tsv"))
	if os.IsNotExist(err) {
		t.Skipf("no corpora at %s", corpora)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 || !strings.HasPrefix(cols[1], "awdit") {
			continue
		}
		n++
		p := filepath.Join(corpora, cols[0])
		fh, err := os.Open(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		h, err := Read(fh, p)
		fh.Close()
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		st := h.Stats()
		ix := history.NewIndex(h)
		// Reads of values nobody wrote (thin air): none in the corpus.
		thin := 0
		for i := range h.Txns {
			for _, op := range h.Txns[i].Ops {
				if op.Kind == history.Read {
					if _, ok := ix.FirstWrite(op.Key, op.Value); !ok {
						thin++
					}
				}
			}
		}
		t.Logf("%s: %d sessions, %d transactions, %d operations, %d keys, unique values per key: %v, thin-air reads: %d",
			cols[0], st.Sessions, st.Transactions, st.Operations, st.Keys, ix.Unique(), thin)
		if !ix.Unique() || thin > 0 {
			t.Errorf("%s: values not unique per key, or reads of values nobody wrote", p)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 22 {
		t.Errorf("LABELS.tsv lists %d AWDIT histories, want 22", n)
	}
}

// FuzzRead reads arbitrary text: a history or a *format.Error naming a
// line, never a panic.
func FuzzRead(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "small.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("w 0 0\n-----\nr 0 0\n=====\nr 0 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := Read(strings.NewReader(in), "fuzz")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) || fe.Line < 1 {
				t.Fatalf("error %v is not a *format.Error with a line", err)
			}
			return
		}
		ids := map[history.Value]bool{}
		for i := range h.Txns {
			tx := &h.Txns[i]
			if ids[tx.ID] || tx.Session < 0 || int(tx.Session) >= len(h.Sessions) || len(tx.Ops) == 0 {
				t.Fatalf("transaction %v: duplicate id, bad session or no operations", tx.ID)
			}
			ids[tx.ID] = true
		}
		_ = history.Notation(h)
		_ = history.NewIndex(h)
	})
}
