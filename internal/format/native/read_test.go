package native

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// goodCases are inputs every reader must accept, with the history they give
// in the one-line notation (history.Notation) and what the notation leaves
// out of the header (headerString).
var goodCases = []struct {
	name, in, want, header string
}{
	{"read and write", lines(`{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}`),
		`t1: s0: r x _ w x 1`, ``},
	{"any field order, string id and session", lines(`{"ops":[["w","x",1]],"session":"alice","id":"t-1"}`),
		`tt-1: salice: w x 1`, ``},
	{"statuses", lines(
		`{"id":1,"session":0,"status":"committed","ops":[["w","x",1]]}`,
		`{"id":2,"session":0,"status":"aborted","ops":[["w","x",2]]}`,
		`{"id":3,"session":1,"status":"unknown","ops":[["w","x",3]]}`,
		`{"id":4,"session":1,"status":null,"ops":[["r","x",1]]}`),
		`t1: s0: w x 1 | t2: s0: aborted: w x 2 | t3: s1: unknown: w x 3 | t4: s1: r x 1`, ``},
	{"aborted without operations", lines(`{"id":1,"session":0,"status":"aborted","ops":[]}`),
		`t1: s0: aborted: `, ``},
	{"instants and timestamps", lines(
		`{"id":17,"session":3,"begin":1732266000000123456,"end":1732266000000456789,"start_ts":4411,"commit_ts":4417,"ops":[["r","x7",5],["w","x7",6]]}`),
		`t17: s3: @1732266000000123456-1732266000000456789: ts=4411-4417: r x7 5 w x7 6`, ``},
	{"begin alone: the end is unknown", lines(`{"id":1,"session":0,"begin":5,"ops":[["r","x",1]]}`),
		`t1: s0: @5-9223372036854775807: r x 1`, ``},
	{"end alone, null begin", lines(`{"id":1,"session":0,"begin":null,"end":7,"ops":[["r","x",1]]}`),
		`t1: s0: @0-7: r x 1`, ``},
	{"equal instants, zero", lines(`{"id":1,"session":0,"begin":0,"end":0,"ops":[["r","x",1]]}`),
		`t1: s0: @0-0: r x 1`, ``},
	{"largest timestamps", lines(`{"id":1,"session":0,"start_ts":0,"commit_ts":18446744073709551615,"ops":[["r","x",1]]}`),
		`t1: s0: ts=0-18446744073709551615: r x 1`, ``},
	{"delete and append", lines(`{"id":1,"session":0,"ops":[["d","x"],["append","l",1],["append","l","two"],["append","l",null]]}`),
		`t1: s0: d x a l 1 a l two a l _`, ``},
	{"list reads", lines(`{"id":1,"session":0,"ops":[["r","l",[1,"a",null]],["r","m",[]],["r","n",null]]}`),
		`t1: s0: r l [1,a,_] r m [] r n []`, ``}, // null: a list absent, as nothing uses n as a register (lists.go)
	{"scan and iterator", lines(`{"id":1,"session":0,"ops":[["scan",1,10,[[1,"a"],[5,null],[9,3]]],["iter",2,null,[[5,null]]],["scan",3,3,[]]]}`),
		`t1: s0: scan 1 10 [1=a,5=_,9=3] iter 2 _ [5=_] scan 3 3 []`, ``},
	{"string keys in ranges", lines(`{"id":1,"session":0,"ops":[["scan","a","c",[["a",1],["b",2],["bb",3]]],["iter","",null,[]]]}`),
		`t1: s0: scan a c [a=1,b=2,bb=3] iter "" _ []`, ``},
	{"attributes", lines(`{"id":1,"session":0,"ops":[["r","x",1,{"lock":true}],["w","x",2,{}],["r","y",2,{"lock":false,"why":[1,{"a":null}]}],["scan","a","b",[],{"lock":true}],["d","z",{"x":1}]]}`),
		`t1: s0: r* x 1 w x 2 r y 2 scan* a b [] d z`, ``},
	{"integer keys, negative and extreme values", lines(`{"id":-1,"session":-2,"ops":[["w",-5,-9223372036854775808],["w",0,9223372036854775807],["r",-5,0]]}`),
		`t-1: s-2: w -5 -9223372036854775808 w 0 9223372036854775807 r -5 0`, ``},
	{"escapes", lines(`{"id":"a\"b","session":"\u00e9\t","ops":[["w","k\\\/\n\r\b\f","\u0041\u00e9\u20ac\ud83d\ude00\uD83D\uDE01"],["w","\ufffd","\uffff"]]}`),
		`t"a\"b": s"é\t": w "k\\/\n\r\b\f" Aé€😀😁 w ` + "\ufffd \uffff", ``},
	{"raw UTF-8", lines(`{"id":"é","session":"日本","ops":[["w","ключ","значение"]]}`),
		`té: s日本: w ключ значение`, ``},
	{"escaped field names", lines(`{"\u0069d":1,"sess\u0069on":0,"ops":[["\u0072","x",1]]}`),
		`t1: s0: r x 1`, ``},
	{"unknown fields of every shape", lines(`{"hints":{"a":[1,2.5e-3,{"b":null}],"c":-0.0},"id":1,"x":true,"y":"s","z":[],"w":{},"v":false,"session":0,"u":null,"ops":[["r","x",1]],"t":1E+9}`),
		`t1: s0: r x 1`, ``},
	{"blank lines, spaces and CRLF", "\n  \n" + `  { "id" : 1 , "session" : 0 , "ops" : [ [ "r" , "x" , 1 ] , [ "w" , "x" , 2 , { "lock" : true } ] ] }  ` + "\r\n\r\n\t\n" + `{"id":2,"session":0,"ops":[["r","x",2]]}`,
		`t1: s0: r x 1 w* x 2 | t2: s0: r x 2`, ``},
	{"sessions interned", lines(
		`{"id":1,"session":7,"ops":[["w","x",1]]}`,
		`{"id":2,"session":"7","ops":[["w","x",2]]}`,
		`{"id":3,"session":7,"ops":[["w","x",3]]}`,
		`{"id":"3","session":100000000,"ops":[["w","x",4]]}`),
		`t1: s7: w x 1 | t2: s"7": w x 2 | t3: s7: w x 3 | t"3": s100000000: w x 4`, ``},
	{"sparse and huge ids", lines(
		`{"id":9000000000000000000,"session":0,"ops":[["w","x",1]]}`,
		`{"id":70000,"session":0,"ops":[["w","x",2]]}`,
		`{"id":0,"session":0,"ops":[["w","x",3]]}`,
		`{"id":200000,"session":0,"ops":[["w","x",4]]}`),
		`t9000000000000000000: s0: w x 1 | t70000: s0: w x 2 | t0: s0: w x 3 | t200000: s0: w x 4`, ``},
	{"header: absent, unique", lines(
		`{"format":"isoscope-history","version":1,"initial":"absent","unique_values":true}`,
		`{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}`,
		`{"id":2,"session":1,"ops":[["r","x",1],["w","x",2]]}`),
		`unique: | t1: s0: r x _ w x 1 | t2: s1: r x 1 w x 2`, `v1`},
	{"header: initial values, string keys", lines(
		`{"format":"isoscope-history","version":1,"initial":{"x":0,"y":"a","z":null}}`,
		`{"id":1,"session":0,"ops":[["r","x",0],["w","y","b"]]}`),
		`init: x=0 y=a z=null | t1: s0: r x 0 w y b`, `v1`},
	{"header: initial values, integer keys", lines(
		`{"format":"isoscope-history","version":1,"initial":{"1":10,"-2":20},"unique_values":true}`,
		`{"id":1,"session":0,"ops":[["r",1,10],["w",1,11],["r",-2,20],["w",3,1]]}`),
		`unique: 1=10 -2=20 | t1: s0: r 1 10 w 1 11 r -2 20 w 3 1`, `v1`},
	{"header: range bounds fix the kind of key", lines(
		`{"format":"isoscope-history","version":1,"initial":{"5":0}}`,
		`{"id":1,"session":0,"ops":[["scan",1,9,[[5,0]]]]}`),
		`init: 5=0 | t1: s0: scan 1 9 [5=0]`, `v1`},
	{"header: no keys at all keeps string keys", lines(
		`{"format":"isoscope-history","version":1,"initial":{"5":0}}`,
		`{"id":1,"session":0,"status":"aborted","ops":[]}`),
		`init: "5"=0 | t1: s0: aborted: `, `v1`},
	{"header: tombstones, version order, source, unknown fields", lines(
		`{"version":1,"format":"isoscope-history","deletes":"tombstone","version_order":{"x":[1,"b"],"y":[]},"source":"postgres 16, serializable","extra":{"a":[1]},"unique_values":false}`,
		`{"id":1,"session":0,"ops":[["w","x",1]]}`,
		`{"id":"b","session":0,"ops":[["w","x",2],["d","x"]]}`),
		`t1: s0: w x 1 | tb: s0: w x 2 d x`, `v1 tombstone source=postgres 16, serializable vo=x:1,b;y:`},
	{"header: integer version order", lines(
		`{"format":"isoscope-history","version":1,"deletes":"physical","version_order":{"7":[2,1]}}`,
		`{"id":1,"session":0,"ops":[["w",7,1]]}`,
		`{"id":2,"session":0,"ops":[["w",7,2]]}`),
		`t1: s0: w 7 1 | t2: s0: w 7 2`, `v1 vo=7:2,1`},
	{"header only", lines(`{"format":"isoscope-history","version":1}`), ``, `v1`},
	{"header after blank lines, with a byte order mark", "\n\ufeff" + lines(`{"format":"isoscope-history","version":1}`, ``, `{"id":1,"session":0,"ops":[["r","x",1]]}`),
		`t1: s0: r x 1`, `v1`},
	{"byte order mark before a transaction", "\ufeff" + lines(`{"id":1,"session":0,"ops":[["r","x",1]]}`),
		`t1: s0: r x 1`, ``},
	{"empty input", "", ``, ``},
	{"no final newline", `{"id":1,"session":0,"ops":[["r","x",1]]}`, `t1: s0: r x 1`, ``},
	{"unique values with null writes of different keys", lines(
		`{"format":"isoscope-history","version":1,"unique_values":true,"initial":{"x":0}}`,
		`{"id":1,"session":0,"ops":[["w","x",null],["w","y",null],["append","l",1],["append","m",1]]}`),
		`unique: x=0 | t1: s0: w x _ w y _ a l 1 a m 1`, `v1`},
}

func TestReadGood(t *testing.T) {
	for _, c := range goodCases {
		t.Run(c.name, func(t *testing.T) {
			h, err := Read(strings.NewReader(c.in), "good.jsonl")
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if got := history.Notation(h); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if got := headerString(h); got != c.header {
				t.Errorf("header %q, want %q", got, c.header)
			}
			again, text, err := roundTrip(h)
			if err != nil {
				t.Fatalf("round trip: %v\n%s", err, text)
			}
			if d := diff(h, again); d != "" {
				t.Errorf("round trip: %s\n%s", d, text)
			}
			if _, text2, _ := roundTrip(again); !bytes.Equal(text, text2) {
				t.Errorf("Write is not stable:\n%s\n%s", text, text2)
			}
		})
	}
}

func TestReadGzip(t *testing.T) {
	for _, c := range goodCases {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(c.in))
		zw.Close()
		plain, err := Read(strings.NewReader(c.in), "x")
		if err != nil {
			t.Fatal(err)
		}
		h, err := Read(&buf, "x.gz")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := diff(plain, h); d != "" {
			t.Errorf("%s: gzip: %s", c.name, d)
		}
	}
}

// TestReadLongLines reads lines longer than the reader's buffer.
func TestReadLongLines(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"format":"isoscope-history","version":1,"source":"` + strings.Repeat("s", 100000) + `"}` + "\n")
	for i := range 3 {
		b.WriteString(`{"id":` + string(rune('1'+i)) + `,"session":0,"ops":[`)
		for j := range 20000 {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`["r","x",1]`)
		}
		b.WriteString("]}\n")
	}
	h, err := Read(strings.NewReader(b.String()), "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Txns) != 3 || len(h.Txns[2].Ops) != 20000 || len(h.Header.Source) != 100000 || h.Txns[2].Line != 4 {
		t.Errorf("read %d transactions", len(h.Txns))
	}
}

// TestReader streams the same transactions Read returns.
func TestReader(t *testing.T) {
	in := goodCases[0].in + `{"id":2,"session":1,"ops":[["r","x",1]]}` + "\n"
	in = `{"format":"isoscope-history","version":1,"initial":{"x":0},"version_order":{"x":[1]}}` + "\n" + in
	r, err := NewReader(strings.NewReader(in), "s")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Header().Present {
		t.Error("Header().Present is false")
	}
	var got []*history.Txn
	for {
		txn, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, txn)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("Next after the end: %v", err)
	}
	h := r.History()
	if len(got) != 2 || len(h.Txns) != 0 || got[1].Line != 3 || h.Sessions[got[1].Session] != history.IntValue(1) {
		t.Fatalf("streamed %d transactions, history holds %d", len(got), len(h.Txns))
	}
	if k := got[0].Ops[1].Key; h.Keys[k] != history.StringValue("x") || h.InitialValue(k) != history.IntValue(0) {
		t.Errorf("key %v, initial %v", h.Keys[k], h.InitialValue(k))
	}
	if vo := r.Header().VersionOrder; len(vo) != 1 || vo[got[0].Ops[1].Key][0] != 0 {
		t.Errorf("version order %v", vo)
	}
}

// TestWriteNotation writes histories built in memory and reads them back.
func TestWriteNotation(t *testing.T) {
	for _, s := range []string{
		"init: x=0 y=0 | t1: s1: r x 0 w x 1 | t2: s2: aborted: r* y 0 d y | t3: s1: @5-9: ts=3-4: a l 1 r l [1,2] scan a _ [x=1,y=_] iter a b []",
		"unique: | t1: s0: r x _ w x 1 | t2: s1: unknown: r x 1 w x 2",
		"init: 1=5 | t1: s0: r 1 5 w 2 6 scan 0 9 [1=5,2=6]",
	} {
		h := history.MustParse(s)
		h.Header.Present, h.Header.Version = true, Version
		again, text, err := roundTrip(h)
		if err != nil {
			t.Fatalf("%s: %v\n%s", s, err, text)
		}
		if d := diff(h, again); d != "" {
			t.Errorf("%s: %s\n%s", s, d, text)
		}
	}
}

func TestWriteRejectsBrokenModels(t *testing.T) {
	base := func() *history.History { return history.MustParse("t1: s0: r x 1 scan 1 2 []") }
	for name, breakIt := range map[string]func(h *history.History){
		"null id":       func(h *history.History) { h.Txns[0].ID = history.NullValue },
		"session":       func(h *history.History) { h.Txns[0].Session = 9 },
		"key":           func(h *history.History) { h.Txns[0].Ops[0].Key = 9 },
		"range":         func(h *history.History) { h.Txns[0].Ops[1].Range = nil },
		"kind":          func(h *history.History) { h.Txns[0].Ops[0].Kind = 99 },
		"status":        func(h *history.History) { h.Txns[0].Status = 9 },
		"version order": func(h *history.History) { h.Header.VersionOrder = map[history.KeyID][]history.TxnID{0: {5}} },
		"initial key":   func(h *history.History) { h.Header.Initial.Values = map[history.KeyID]history.Value{7: {}} },
	} {
		h := base()
		breakIt(h)
		if err := Write(io.Discard, h); err == nil {
			t.Errorf("%s: Write accepted a broken history", name)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteError(t *testing.T) {
	if err := Write(failWriter{}, history.MustParse("t1: s0: r x 1")); err == nil || err.Error() != "disk full" {
		t.Errorf("Write: %v", err)
	}
}

// TestWriteRefusesInexpressible: what other formats' readers can give but
// the format cannot hold, and its reader would reject, is refused by name.
func TestWriteRefusesInexpressible(t *testing.T) {
	twoKinds := history.MustParse("t1: s0: w x 1")
	twoKinds.Txns[0].Ops = append(twoKinds.Txns[0].Ops, history.Op{Kind: history.Write, Key: twoKinds.Key(history.IntValue(5)), Value: history.IntValue(2)})
	for _, c := range []struct {
		h    *history.History
		want string
	}{
		{twoKinds, "keys of two kinds"},
		{history.MustParse("t1: s0: w x 1 | t7: s1:"), "transaction 7 commits no operations"},
	} {
		if err := Write(io.Discard, c.h); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", history.Notation(c.h), err, c.want)
		}
	}
	var buf bytes.Buffer
	if err := Write(&buf, history.MustParse("t1: s0: w x 1 | t7: s1: aborted:")); err != nil {
		t.Errorf("an aborted transaction without operations: %v", err)
	}
	if _, err := Read(&buf, "aborted.jsonl"); err != nil {
		t.Errorf("reading it back: %v", err)
	}
}
