package cobra

import (
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

// render is the golden rendering of a history: its notation, one
// transaction per line.
func render(h *history.History) string { return formattest.Render(h) }

// Records for hand-made logs.
func rS(id uint64) []byte { return rec('S', id) }
func rC(id uint64) []byte { return rec('C', id) }
func rW(wid, k, v uint64) []byte {
	return rec('W', wid, k, v)
}
func rR(wt, wid, k, v uint64) []byte { return rec('R', wt, wid, k, v) }

func rec(tag byte, xs ...uint64) []byte {
	b := []byte{tag}
	for _, x := range xs {
		b = binary.BigEndian.AppendUint64(b, x)
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// TestSmall reads the hand-made directory testdata/small:
//
//	T0.log:  S 1, R init init k10, W 100 k10, C 1
//	         S 2, R null null k11, W 101 k11           (no C: aborted)
//	         S 3, R init gc k10 (dropped), R 1 100 k10, C 3
//	T1.log:  S 4, R 1 100 k10, R 2 101 k11, W 102 k10, C 4
//	         S 5, R 4 101 k11 (names the wrong writer), R 9 999 k12 (writer
//	         missing from the logs)                     (end of file: aborted)
//	T2.log:  S 7, R null null k12, C 7
//	T10.log: S 6, C 6
//	notes.txt (ignored)
func TestSmall(t *testing.T) {
	h, err := ReadDir(filepath.Join("testdata", "small"))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/small.golden", render(h))
	if !h.Header.Present || h.Header.UniqueValues || !strings.Contains(h.Header.Source, "Cobra") {
		t.Errorf("header %+v", h.Header)
	}
	var labels []string
	for _, s := range h.Sessions {
		labels = append(labels, s.String())
	}
	if got := strings.Join(labels, ","); got != "0,1,2,10" {
		t.Errorf("sessions %s, want 0,1,2,10 (numeric order)", got)
	}
	k10, _ := h.LookupKey(history.IntValue(10))
	if len(h.Header.Initial.Values) != 1 || h.InitialValue(k10) != InitValue {
		t.Errorf("initial values %v, want only k10=%v", h.Header.Initial.Values, InitValue)
	}
}

// TestCockBlog reads the smallest real Cobra history of the corpora.
func TestCockBlog(t *testing.T) {
	dir := filepath.Join(corpora, "cobra-logs", "ser-violation", "cock-blog")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no corpora: %v", err)
	}
	h, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/cock-blog.golden", render(h))
}

func TestReadBad(t *testing.T) {
	cases := []struct {
		name string
		logs [][]byte
		file string // the file the error names
		want string // a part of the message
	}{
		{"unknown tag", [][]byte{cat(rS(1), []byte{'X'})}, "T0.log", "unknown record tag 'X' (want 'S', 'W', 'R' or 'C') (record at byte 9)"},
		{"unknown binary tag", [][]byte{{0x00}}, "T0.log", "unknown record tag 0x00"},
		{"truncated start", [][]byte{rS(1)[:5]}, "T0.log", "truncated: the record needs 9 bytes, 5 are left (record at byte 0)"},
		{"truncated read", [][]byte{cat(rS(1), rR(1, 2, 3, 4)[:20])}, "T0.log", "truncated: the record needs 33 bytes, 20 are left (record at byte 9)"},
		{"truncated write", [][]byte{cat(rS(1), rW(1, 2, 3)[:24])}, "T0.log", "record at byte 9"},
		{"truncated commit", [][]byte{cat(rS(1), rC(1)[:1])}, "T0.log", "record at byte 9"},
		{"write outside", [][]byte{rW(1, 2, 3)}, "T0.log", "write outside a transaction (record at byte 0)"},
		{"read after commit", [][]byte{cat(rS(1), rC(1), rR(1, 2, 3, 4))}, "T0.log", "read outside a transaction (record at byte 18)"},
		{"commit without start", [][]byte{rC(7)}, "T0.log", "commit of transaction 7, which is not open"},
		{"commit of another", [][]byte{cat(rS(1), rC(2))}, "T0.log", "commit of transaction 2 inside transaction 1 (record at byte 9)"},
		{"id twice", [][]byte{cat(rS(1), rC(1), rS(1))}, "T0.log", "transaction 1 starts twice (record at byte 18)"},
		{"id in two files", [][]byte{cat(rS(1), rC(1)), cat(rS(2), rC(2), rS(1))}, "T1.log", "transaction 1 starts twice (first in T0.log) (record at byte 18)"},
		{"special write id", [][]byte{cat(rS(1), rW(InitID, 1, 1))}, "T0.log", "write with the special write id 0xbebeebee (record at byte 9)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labels := make([]int64, len(c.logs))
			names := make([]string, len(c.logs))
			for i := range c.logs {
				labels[i] = int64(i)
				names[i] = "T" + string(rune('0'+i)) + ".log"
			}
			_, err := readFiles("dir", labels, names, c.logs)
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *format.Error", err)
			}
			if fe.File != c.file || fe.Line != 0 || !strings.Contains(fe.Msg, c.want) {
				t.Errorf("got %q (file %q), want file %q and message containing %q", err, fe.File, c.file, c.want)
			}
		})
	}
}

func TestReadDirBad(t *testing.T) {
	var fe *format.Error
	if _, err := ReadDir(t.TempDir()); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "no session logs") {
		t.Errorf("empty directory: %v", err)
	}
	file := filepath.Join("testdata", "small", "T0.log")
	if _, err := ReadDir(file); !errors.As(err, &fe) || !strings.Contains(fe.Msg, "not a directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := ReadDir(filepath.Join("testdata", "missing")); err == nil {
		t.Error("missing directory: no error")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "T3.log"), cat(rS(1), []byte{'Q'}), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadDir(dir)
	if !errors.As(err, &fe) || fe.File != filepath.Join(dir, "T3.log") || !strings.Contains(fe.Msg, "byte 9") {
		t.Errorf("bad log: %v", err)
	}
}

func TestStatuses(t *testing.T) {
	h, err := readFiles("x", []int64{0}, []string{"T0.log"}, [][]byte{cat(
		rS(1), rW(10, 1, 1), rC(1),
		rS(2), rW(11, 1, 1), // no commit: aborted
		rS(3), rC(3), // empty, committed
		rS(4), rW(12, 1, 1), // end of file: aborted
	)})
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Status{history.Committed, history.Aborted, history.Committed, history.Aborted}
	if len(h.Txns) != len(want) {
		t.Fatalf("%d transactions", len(h.Txns))
	}
	for i, s := range want {
		if h.Txns[i].Status != s {
			t.Errorf("txn %v: %v, want %v", h.Txns[i].ID, h.Txns[i].Status, s)
		}
	}
}

func TestSniff(t *testing.T) {
	good := cat(rS(1), rR(InitID, InitID, 5, 0), rW(3, 5, 1), rC(1), rS(2))
	for _, c := range []struct {
		in   []byte
		want bool
	}{
		{good, true},
		{good[:20], true}, // cut short inside a record
		{nil, false},
		{rS(1)[:4], false},
		{[]byte(`{"id":1,"session":0,"ops":[]}`), false},
		{[]byte(`{:index 0 :type :invoke}`), false},
		{[]byte("w(1,0,0,0)\n"), false},
		{[]byte("r 1 2\n-----\n"), false},
		{cat(rS(1), []byte{'Z'}, rC(1)), false},
		// The first transaction decides; ReadDir reports a later bad
		// record.
		{cat(rS(1), rC(1), rC(1)), true},
		{cat(rS(1), rC(1), rW(1, 2, 3)), true},
		{cat(rS(1), rW(1, 2, 3), rC(1), []byte{'Z'}), true},
		{cat(rS(1), rW(1, 2, 3), []byte{'Z'}, rC(1)), false},
		{cat(rC(1), rS(1)), false},
		{rW(1, 2, 3), false},
	} {
		if got := Sniff(c.in); got != c.want {
			t.Errorf("Sniff(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	if !SniffDir(filepath.Join("testdata", "small")) {
		t.Error("SniffDir(testdata/small) = false")
	}
	if SniffDir("testdata") || SniffDir(filepath.Join("testdata", "small", "T0.log")) || SniffDir(t.TempDir()) {
		t.Error("SniffDir accepts a directory without logs, or a file")
	}
}

// FuzzRead reads arbitrary bytes as one or two session logs: the reader
// must return a history or a *format.Error, never panic.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"T0.log", "T1.log", "T2.log", "T10.log"} {
		b, err := os.ReadFile(filepath.Join("testdata", "small", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint16(len(b)/2))
	}
	f.Add(cat(rS(1), rR(NullID, NullID, 1, 0), rW(5, 1, 2), rC(1), rS(2), rR(7, 5, 1, 2)), uint16(18))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		c := int(cut)
		if c > len(data) {
			c = len(data)
		}
		h, err := readFiles("fuzz", []int64{0, 1}, []string{"T0.log", "T1.log"}, [][]byte{data[:c], data[c:]})
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *format.Error", err)
			}
			return
		}
		ids := map[history.Value]bool{}
		for i := range h.Txns {
			if ids[h.Txns[i].ID] {
				t.Fatalf("duplicate transaction id %v", h.Txns[i].ID)
			}
			ids[h.Txns[i].ID] = true
		}
		_ = history.Notation(h)
		_ = history.NewIndex(h)
	})
}

// TestSharedWriteID reads logs whose writes share one write id, as
// VeriStrong's do: the value hash tells the writes apart, a read matches
// the write of its key with the same id and hash, and a read of a hash
// nobody wrote reads a value no write has.
func TestSharedWriteID(t *testing.T) {
	const u = 0xabddefee
	h, err := readFiles("x", []int64{0, 1}, []string{"T0.log", "T1.log"}, [][]byte{
		cat(rS(1), rW(u, 1, 100), rW(u, 2, 200), rC(1),
			rS(2), rR(u, u, 1, 100), rW(u, 1, 101), rC(2)),
		cat(rS(3), rR(u, u, 1, 101), rR(u, u, 2, 200), rC(3),
			rS(4), rR(u, u, 2, 999), rW(7, 3, 5), rC(4),
			rS(5), rR(4, 7, 3, 6), rC(5)), // a unique write id: the hash is not looked at
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "W2883448814:V100"
	if got := h.Txns[0].Ops[0].Value; got != history.StringValue(want) {
		t.Errorf("first shared write reads %v, want %s", got, want)
	}
	type rw struct {
		txn, op int
		val     history.Value
	}
	for _, c := range []rw{
		{0, 1, history.StringValue("W2883448814:V200")},
		{1, 0, history.StringValue("W2883448814:V100")},
		{1, 1, history.StringValue("W2883448814:V101")},
		{2, 0, history.StringValue("W2883448814:V101")},
		{2, 1, history.StringValue("W2883448814:V200")},
		{3, 0, history.StringValue("W2883448814:V999")},
		{3, 1, history.IntValue(7)},
		{4, 0, history.IntValue(7)},
	} {
		if got := h.Txns[c.txn].Ops[c.op].Value; got != c.val {
			t.Errorf("T%d op %d: %v, want %v", c.txn+1, c.op, got, c.val)
		}
	}
	ix := history.NewIndex(h)
	if !ix.Unique() {
		t.Error("values not unique per key")
	}
	for _, c := range []struct {
		txn, op, writer int // writer -1: no write has the value
	}{{1, 0, 0}, {2, 0, 1}, {2, 1, 0}, {3, 0, -1}, {4, 0, 3}} {
		op := h.Txns[c.txn].Ops[c.op]
		var ws []int
		ix.Writers(op.Key, op.Value, func(w history.OpRef, _ bool) { ws = append(ws, int(w.Txn)) })
		switch {
		case c.writer < 0 && len(ws) != 0:
			t.Errorf("T%d op %d: writers %v, want none", c.txn+1, c.op, ws)
		case c.writer >= 0 && (len(ws) != 1 || ws[0] != c.writer):
			t.Errorf("T%d op %d: writers %v, want T%d", c.txn+1, c.op, ws, c.writer+1)
		}
	}
}
