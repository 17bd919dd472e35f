package plume

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
		// Implicit initial state; interleaved transactions; aborted
		// writes (txn -1) of two sessions; a read with txn -1 (dropped);
		// a blank line and spaces around a line.
		{filepath.Join("testdata", "small.txt"), "small.golden"},
		// An explicit initial transaction writing 1 to every key.
		{filepath.Join("testdata", "init.txt"), "init.golden"},
		// The real PostgreSQL bug history, with an explicit initial
		// transaction writing 0.
		{filepath.Join(corpora, "isovista-bugs", "history", "bugs", "pg_ser_bug.txt"), "pg_ser_bug.golden"},
	} {
		t.Run(c.golden, func(t *testing.T) {
			if _, err := os.Stat(c.in); err != nil {
				t.Skipf("no input: %v", err)
			}
			h := readFile(t, c.in)
			if !h.Header.Present || h.Header.UniqueValues || !strings.Contains(h.Header.Source, "Plume") {
				t.Errorf("header %+v", h.Header)
			}
			golden.Check(t, "testdata/"+c.golden, render(h))
		})
	}
}

func TestExplicitInitial(t *testing.T) {
	for _, c := range []struct {
		in    string
		hoist bool
	}{
		{"w(1,0,0,0)\nw(2,0,0,0)\nr(1,0,1,1)\nr(2,0,1,1)\n", true},
		{"r(2,0,1,1)\nw(1,0,0,0)\nw(2,0,0,0)\n", true},              // not first, still before everything
		{"w(1,0,0,0)\nr(2,0,1,1)\n", false},                         // does not write key 2
		{"w(1,0,0,0)\nw(2,0,0,0)\nw(2,1,0,0)\nr(2,0,1,1)\n", false}, // writes key 2 twice
		{"w(1,0,0,0)\nr(2,0,0,0)\nw(2,0,0,0)\n", false},             // reads
		{"w(1,0,0,0)\nw(2,0,0,0)\nr(1,0,0,3)\n", false},             // session 0 has another transaction
		{"w(1,0,0,0)\nw(2,0,0,0)\nw(1,5,0,-1)\n", false},            // … an aborted one
		{"w(1,0,1,0)\nw(2,0,1,0)\nr(1,0,2,1)\n", false},             // transaction 0 of session 1
	} {
		h, err := Read(strings.NewReader(c.in), "x")
		if err != nil {
			t.Fatal(err)
		}
		hoisted := true
		for i := range h.Txns {
			if h.Txns[i].ID == history.IntValue(0) {
				hoisted = false
			}
		}
		if hoisted != c.hoist {
			t.Errorf("%q: hoisted %v, want %v: %s", c.in, hoisted, c.hoist, history.Notation(h))
		}
		if len(h.Header.Initial.Values) != len(h.Keys) {
			t.Errorf("%q: %d initial values for %d keys", c.in, len(h.Header.Initial.Values), len(h.Keys))
		}
		for i := range h.Txns {
			if int(h.Txns[i].Session) >= len(h.Sessions) {
				t.Fatalf("%q: bad session index", c.in)
			}
		}
	}
}

func TestReadBad(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"unknown op", "w(1,1,1,1)\nx(1,1,1,1)\n", 2, "want r(key,value,session,txn) or w(key,value,session,txn)"},
		{"no paren", "w 1 1 1 1\n", 1, "want r(key,value,session,txn)"},
		{"three numbers", "r(1,1,1)\n", 1, "want ',' after the session"},
		{"no close", "r(1,1,1,1\n", 1, "want ')' after the txn"},
		{"after close", "r(1,1,1,1);\n", 1, `unexpected ";" after ')'`},
		{"five numbers", "r(1,1,1,1,1)\n", 1, `the txn "1,1" is not an integer`},
		{"empty number", "r(,1,1,1)\n", 1, `the key "" is not an integer`},
		{"spaces inside", "r(1, 1,1,1)\n", 1, `the value " 1" is not an integer`},
		{"plus sign", "r(+1,1,1,1)\n", 1, `the key "+1" is not an integer`},
		{"negative key", "r(-1,1,1,1)\n", 1, "the key -1 is negative"},
		{"negative session", "r(1,1,-3,1)\n", 1, "the session -3 is negative"},
		{"txn below -1", "w(1,1,1,-2)\n", 1, "the txn -2 is negative (only -1, an aborted write, is allowed)"},
		{"out of range", "w(1,99999999999999999999,1,1)\n", 1, "the value 99999999999999999999 is out of the 64-bit range"},
		{"txn in two sessions", "w(1,1,1,5)\n\nw(2,1,2,5)\n", 3, "transaction 5 is in session 1 (line 1), not 2"},
		{"long line", "r(1,1,1,1)\nr(" + strings.Repeat("1", maxLine) + ",1,1,1)\n", 2, "line is longer than 64 KiB"},
		{"JSON", `{"id":1,"session":0,"ops":[]}`, 1, "want r(key"},
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

func TestSniff(t *testing.T) {
	formattest.Sniff(t, Sniff, map[string]bool{
		"w(1,0,0,0)\nw(2,0,0,0)\nr(1,0,1,1)\n":  true,
		"\n\nw(1,0,0,0)\nr(1,0,1,-1)\nw(2,5,1,": true, // last line cut short
		"w(1,0,0,0":                             false,
		"":                                      false,
		"\n \n":                                 false,
		`{"format":"isoscope-history","version":1}`:               false,
		`{"id":1,"session":0,"ops":[["r","x",1]]}`:                false,
		`{:index 0, :type :invoke, :f :txn, :value [[:r 1 nil]]}`: false,
		"r 0 0\nw 0 1\n-----\n":                                   false,
		// The first line decides; Read reports a later bad line.
		"w(1,0,0,0)\nhello\n":                          true,
		"w(1,0,0,0)\nr(1,1,1,1\n":                      true,
		"hello\nw(1,0,0,0)\n":                          false,
		"r(1,0,1,1\nw(1,0,0,0)\n":                      false,
		"INFO  jepsen.util - 1\t:invoke\t:read\tnil\n": false,
	})
}

// TestCorpus loads every PolySI/Plume text history LABELS.tsv lists.
func TestCorpus(t *testing.T) {
	f, err := os.Open(filepath.Join(corpora, "LABELS.tsv"))
	if os.IsNotExist(err) {
		t.Skipf("no corpora at %s", corpora)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Transactions after the explicit initial one is hoisted, and its
	// value.
	want := map[string]struct {
		txns int
		init int64
	}{
		"pg_ser_bug.txt": {20, 0}, "dgraph_si.txt": {480, 1}, "yugabyte_tcc.txt": {20, 0},
	}
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 || !strings.HasPrefix(cols[1], "polysi-text") && !strings.HasPrefix(cols[1], "plume") {
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
		t.Logf("%s: %d sessions, %d transactions (%d aborted), %d operations, %d keys, unique values per key: %v",
			filepath.Base(p), st.Sessions, st.Transactions, st.Aborted, st.Operations, st.Keys, ix.Unique())
		w, ok := want[filepath.Base(p)]
		if !ok {
			continue
		}
		if st.Transactions != w.txns {
			t.Errorf("%s: %d transactions, want %d (the explicit initial one hoisted)", p, st.Transactions, w.txns)
		}
		for k, v := range h.Header.Initial.Values {
			if v != history.IntValue(w.init) {
				t.Errorf("%s: initial %s=%s, want %d", p, h.KeyName(k), v, w.init)
				break
			}
		}
		if len(h.Header.Initial.Values) != st.Keys {
			t.Errorf("%s: %d initial values for %d keys", p, len(h.Header.Initial.Values), st.Keys)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("LABELS.tsv lists %d PolySI text histories, want %d", n, len(want))
	}
}

// FuzzRead reads arbitrary text: a history or a *format.Error naming a
// line, never a panic.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"small.txt", "init.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("w(1,0,0,0)\nw(2,0,0,0)\nr(1,0,0,-1)\nw(1,3,0,-1)\n")
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
			if ids[tx.ID] || int(tx.Session) >= len(h.Sessions) || tx.Session < 0 {
				t.Fatalf("transaction %v: duplicate id or bad session", tx.ID)
			}
			ids[tx.ID] = true
		}
		_ = history.Notation(h)
		_ = history.NewIndex(h)
	})
}
