package dbcop

import (
	"bufio"
	"bytes"
	"encoding/binary"
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

// TestSmall reads testdata/small.bincode, written by hand (by an
// independent encoder):
//
//	session 1: [w 0 1, w 1 2] ok; [r 0 1, r 2 0, w 2 3 (failed event)] ok
//	session 2: [r 1 2, w 0 4] failed; [r 0 1, r 1 0 (failed event)] ok; [] ok
//	session 3: no transactions
func TestSmall(t *testing.T) {
	h := readFile(t, filepath.Join("testdata", "small.bincode"))
	golden.Check(t, "testdata/small.golden", render(h))
	if !h.Header.Present || h.Header.UniqueValues || !strings.Contains(h.Header.Source, "(fixture)") {
		t.Errorf("header %+v", h.Header)
	}
	if len(h.Sessions) != 3 {
		t.Errorf("%d sessions, want 3", len(h.Sessions))
	}
}

// sameHistory reports how a and b differ, in the notation plus the
// session labels.
func sameHistory(t *testing.T, a, b *history.History) {
	t.Helper()
	if na, nb := history.Notation(a), history.Notation(b); na != nb {
		t.Errorf("histories differ:\n %s\n %s", na, nb)
	}
	if len(a.Sessions) != len(b.Sessions) {
		t.Errorf("%d and %d sessions", len(a.Sessions), len(b.Sessions))
	}
}

func TestRoundTrip(t *testing.T) {
	h := readFile(t, filepath.Join("testdata", "small.bincode"))
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		t.Fatal(err)
	}
	again, err := Read(bytes.NewReader(buf.Bytes()), "again")
	if err != nil {
		t.Fatal(err)
	}
	sameHistory(t, h, again)
	if !Sniff(buf.Bytes()) {
		t.Error("Sniff rejects what Write writes")
	}

	// A history built elsewhere: its labels and ids are dbcop's after the
	// round trip, its operations and statuses the same.
	src := history.MustParse("init: 1=0 2=0 | t1: s7: r 1 0 w 1 5 | t2: s8: aborted: w 2 6 | t3: s7: r 2 6 r 1 5 w 2 9")
	buf.Reset()
	if err := Write(&buf, src); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf, "x")
	if err != nil {
		t.Fatal(err)
	}
	want := "init: 1=0 2=0 | t1:0: s1: r 1 0 w 1 5 | t1:1: s1: r 2 6 r 1 5 w 2 9 | t2:0: s2: aborted: w 2 6"
	if n := history.Notation(got); n != want {
		t.Errorf("got  %s\nwant %s", n, want)
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"t1: s1: unknown: w 1 5", "outcome is unknown"},
		{"t1: s1: r 1 _", "no null reads"},
		{"t1: s1: w x 5", "keys are integers"},
		{"t1: s1: w 1 five", "values are integers"},
		{"t1: s1: a 1 5", "reads and writes only"},
		{"t1: s1: d 1", "reads and writes only"},
		{"t1: s1: scan 1 _ []", "reads and writes only"},
		{"init: 1=0 | t1: s1: w 1 0", "a write of 0"},
		{"t1: s1: r 1 0", "a read of 0, which dbcop takes for the initial value, but the key's initial value is null"},
		{"init: 1=3 | t1: s1: r 1 3", "initial value 3"},
		{"t1: s1: w 1 5 | t2: s1: @3-4: r 1 5", "transaction 2 has begin and end instants (real time), which dbcop cannot record"},
		{"t1: s1: ts=3-4: w 1 5", "transaction 1 carries the database's timestamps (start_ts/commit_ts), which dbcop cannot record"},
	} {
		err := Write(&bytes.Buffer{}, history.MustParse(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
	h := history.MustParse("t1: s1: w 1 5 | t2: s2: r 1 5")
	h.Header.VersionOrder = map[history.KeyID][]history.TxnID{0: {0}}
	if err := Write(&bytes.Buffer{}, h); err == nil || !strings.Contains(err.Error(), "white-box version order (of key 1") {
		t.Errorf("version order: got %v", err)
	}
}

// le builds little-endian bincode for the bad cases.
type le struct{ b []byte }

func (e *le) u(xs ...uint64) *le {
	for _, x := range xs {
		e.b = binary.LittleEndian.AppendUint64(e.b, x)
	}
	return e
}
func (e *le) raw(b ...byte) *le { e.b = append(e.b, b...); return e }
func (e *le) s(s string) *le    { e.u(uint64(len(s))); e.b = append(e.b, s...); return e }
func header() *le               { return (&le{}).u(0, 1, 1, 1, 1).s("i").s("2024-01-01").s("2024-01-02") }

func TestReadBad(t *testing.T) {
	small, err := os.ReadFile(filepath.Join("testdata", "small.bincode"))
	if err != nil {
		t.Fatal(err)
	}
	// Every proper prefix of a good file is truncated.
	for n := 0; n < len(small); n++ {
		_, err := Read(bytes.NewReader(small[:n]), "cut")
		var fe *format.Error
		if !errors.As(err, &fe) || fe.File != "cut" || !strings.Contains(fe.Msg, "(at byte ") {
			t.Fatalf("cut at %d: got %v, want a *format.Error with the byte offset", n, err)
		}
	}
	cases := []struct {
		name  string
		in    []byte
		field string
		msg   string
	}{
		{"empty", nil, "header", "truncated: id needs 8 bytes, 0 are left (at byte 0)"},
		{"short header", (&le{}).u(1, 2, 3).b, "header", "truncated: n_transaction needs 8 bytes, 0 are left (at byte 24)"},
		{"huge info", (&le{}).u(0, 1, 1, 1, 1, 1<<60).b, "header", "info length is 1152921504606846976, more than the 0 bytes left can hold (at byte 40)"},
		{"info not UTF-8", (&le{}).u(0, 1, 1, 1, 1, 2).raw(0xff, 0xfe).b, "header", "info is not valid UTF-8 (at byte 48)"},
		{"huge session count", header().u(1 << 62).b, "sessions", "more than the 0 bytes left can hold"},
		{"bad write bool", header().u(1, 1, 1).raw(2).u(3, 4).raw(1, 1).b, "session 1, transaction 0, event 0", "write is 2, want a bool (0 or 1) (at byte 109)"},
		{"bad success bool", header().u(1, 1, 1).raw(1).u(3, 4).raw(7).raw(1).b, "session 1, transaction 0, event 0", "success is 7, want a bool"},
		{"bad txn bool", header().u(1, 1, 1).raw(1).u(3, 4).raw(1).raw(9).b, "session 1, transaction 0", "txn_success is 9"},
		{"event count too big", header().u(1, 1, 5).raw(1).u(3, 4).raw(1, 1).b, "session 1, transaction 0", "the number of events is 5, more than the 19 bytes left can hold"},
		{"trailing bytes", header().u(0).raw(0).b, "", "1 bytes after the history (at byte 93)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.in), "bad.bincode")
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *format.Error", err)
			}
			if fe.File != "bad.bincode" || fe.Field != c.field || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got %q (field %q), want field %q and message containing %q", err, fe.Field, c.field, c.msg)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	small, err := os.ReadFile(filepath.Join("testdata", "small.bincode"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   []byte
		want bool
	}{
		{small, true},
		{small[:90], true},
		{small[:50], false}, // cannot see the date yet
		{nil, false},
		{[]byte(`{"format":"isoscope-history","version":1}` + "\n" + `{"id":1,"session":0,"ops":[]}`), false},
		{[]byte(`{:index 0, :type :invoke, :process 0, :f :txn, :value [[:r 1 nil]]}`), false},
		{[]byte("w(1,0,0,0)\nw(2,0,0,0)\nr(1,0,1,1)\nr(2,0,1,1)\nw(1,1,1,1)\n"), false},
		{[]byte("r 0 0\nw 0 1\n-----\nr 0 1\nw 0 2\n=====\nr 0 2\nw 0 3\n=====\n"), false},
		{header().u(0).b, true},
		{(&le{}).u(0, 1, 1, 1, 1).s("i").s("yesterday").b, false},
	} {
		if got := Sniff(c.in); got != c.want {
			t.Errorf("Sniff(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestCorpus loads every dbcop history LABELS.tsv lists (there may be
// none; the round trip above covers the format then).
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
		if len(cols) < 2 || !strings.Contains(strings.ToLower(cols[1]), "dbcop") {
			continue
		}
		n++
		p := filepath.Join(corpora, cols[0])
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = filepath.Join(p, "history.bincode")
		}
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
		t.Logf("%s: %d sessions, %d transactions, %d operations, unique values: %v", p, st.Sessions, st.Transactions, st.Operations, history.NewIndex(h).Unique())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d dbcop histories in LABELS.tsv", n)
}

// FuzzRead reads arbitrary bytes: a history or a *format.Error, never a
// panic; what reads back writes and reads again to the same history.
func FuzzRead(f *testing.F) {
	small, err := os.ReadFile(filepath.Join("testdata", "small.bincode"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(small)
	f.Add(header().u(1, 1, 2).raw(0).u(3, 0).raw(1).raw(1).u(3, 4).raw(1).raw(0).b)
	f.Add(header().u(0).b)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *format.Error", err)
			}
			return
		}
		_ = history.NewIndex(h)
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			return // e.g. a write of 0: dbcop reads it, but cannot write it back
		}
		again, err := Read(&buf, "again")
		if err != nil {
			t.Fatalf("reading what Write wrote: %v", err)
		}
		if a, b := history.Notation(h), history.Notation(again); a != b {
			t.Fatalf("round trip:\n %s\n %s", a, b)
		}
	})
}
