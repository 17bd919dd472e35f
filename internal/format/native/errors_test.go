package native

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
)

// Lines that the bad cases build on.
const (
	hdr    = `{"format":"isoscope-history","version":1}`
	uniq   = `{"format":"isoscope-history","version":1,"unique_values":true}`
	txn1   = `{"id":1,"session":0,"ops":[["r","x",1]]}`
	txnInt = `{"id":1,"session":0,"ops":[["r",1,1]]}`
)

// badCases are inputs every reader must reject, with the line and the field
// the error names and a part of its message.
var badCases = []struct {
	name, in string
	line     int
	field    string
	msg      string
}{
	// Malformed JSON.
	{"cut short", lines(`{"id":1,`), 1, "", "malformed JSON: want a field name, found the end of the line at byte 9"},
	{"missing brace", lines(txn1, `{"id":2,"session":0,"ops":[["r","x",1]]`), 2, "", "malformed JSON: want ',' or '}'"},
	{"not an object", lines(`[1,2]`), 1, "", "want a transaction object, found '['"},
	{"null line", lines(`null`), 1, "", "want a transaction object"},
	{"text after the object", lines(txn1 + ` {}`), 1, "", "want the end of the line after the transaction, found '{' at byte 42"},
	{"bad escape", lines(`{"id":"\x","session":0,"ops":[["r","x",1]]}`), 1, "id", "want a valid escape"},
	{"bad \\u escape", lines(`{"id":"\u12","session":0,"ops":[["r","x",1]]}`), 1, "id", "four hex digits"},
	{"unterminated string", lines(`{"id":1,"session":"abc`), 1, "session", "want the end of a string"},
	{"leading zero", lines(`{"id":01,"session":0,"ops":[["r","x",1]]}`), 1, "id", "no leading zero"},
	{"bare minus", lines(`{"id":-,"session":0,"ops":[["r","x",1]]}`), 1, "id", "want a digit"},
	{"bad fraction", lines(`{"id":1,"session":0,"x":1.,"ops":[["r","x",1]]}`), 1, "x", "want a digit"},
	{"trailing comma", lines(`{"id":1,"session":0,"ops":[["r","x",1]],}`), 1, "", "want a field name"},
	{"trailing comma in ops", lines(`{"id":1,"session":0,"ops":[["r","x",1],]}`), 1, "ops[1]", "malformed JSON: want an operation, found ']'"},
	{"bad literal where a string is due", lines(`{"id":1,"session":0,"status":tru,"ops":[["r","x",1]]}`), 1, "status", "malformed JSON: want a JSON value"},
	{"nothing where a value is due", lines(`{"id":1,"session":0,"status":}`), 1, "status", "malformed JSON: want a JSON value, found '}'"},
	{"single quotes", lines(`{'id':1}`), 1, "", "want a field name"},
	{"invalid UTF-8", lines("{\"id\":\"é\xff\",\"session\":0,\"ops\":[[\"r\",\"x\",1]]}"), 1, "id", `want valid UTF-8 in a string, found byte "\xff" at byte 10`},
	{"invalid UTF-8 with escapes", lines("{\"id\":\"\\n\xff\",\"session\":0,\"ops\":[[\"r\",\"x\",1]]}"), 1, "id", "invalid UTF-8"},
	// Lone UTF-16 surrogates are no text: read as U+FFFD they would make
	// distinct strings one.
	{"lone high surrogate in a key", lines(`{"id":1,"session":0,"ops":[["w","\ud800",1]]}`), 1, "ops[0]", `malformed JSON: \ud800 at byte 34 is a lone UTF-16 surrogate`},
	{"lone low surrogate in a key", lines(txn1, `{"id":2,"session":0,"ops":[["r","x",1],["w","a\uDC00",1]]}`), 2, "ops[1]", `\uDC00 at byte 47 is a lone UTF-16 surrogate`},
	{"high surrogate before a high one", lines(`{"id":1,"session":0,"ops":[["w","\udbff\ud800",1]]}`), 1, "ops[0]", `\udbff at byte 34 is a lone UTF-16 surrogate`},
	{"high surrogate before a character", lines(`{"id":1,"session":0,"ops":[["w","\ud800\u0041",1]]}`), 1, "ops[0]", `\ud800 at byte 34 is a lone UTF-16 surrogate`},
	{"high surrogate before a bad escape", lines(`{"id":1,"session":0,"ops":[["w","\ud800\u00",1]]}`), 1, "ops[0]", `four hex digits after \u`},
	{"lone surrogate in a value", lines(`{"id":1,"session":0,"ops":[["w","x","v\ud800"]]}`), 1, "ops[0]", "lone UTF-16 surrogate"},
	{"lone surrogate in a read", lines(`{"id":1,"session":0,"ops":[["r","x","\udfff"]]}`), 1, "ops[0]", "lone UTF-16 surrogate"},
	{"lone surrogate in an element", lines(`{"id":1,"session":0,"ops":[["append","x","\ud800"]]}`), 1, "ops[0]", "lone UTF-16 surrogate"},
	{"lone surrogate in a list read", lines(`{"id":1,"session":0,"ops":[["r","x",["a","\ud800"]]]}`), 1, "ops[0]", "lone UTF-16 surrogate"},
	{"lone surrogate in a range", lines(`{"id":1,"session":0,"ops":[["scan","a",null,[["\ud800",1]]]]}`), 1, "ops[0]", "lone UTF-16 surrogate"},
	{"lone surrogate in a session", lines(`{"id":1,"session":"\ud800","ops":[["r","x",1]]}`), 1, "session", "lone UTF-16 surrogate"},
	{"lone surrogate in an id", lines(`{"id":"\udbff","session":0,"ops":[["r","x",1]]}`), 1, "id", "lone UTF-16 surrogate"},
	{"lone surrogate in a status", lines(`{"id":1,"session":0,"status":"\ud800","ops":[["r","x",1]]}`), 1, "status", "lone UTF-16 surrogate"},
	{"lone surrogate in an unknown field", lines(`{"id":1,"session":0,"note":"\ud800","ops":[["r","x",1]]}`), 1, "note", "lone UTF-16 surrogate"},
	{"lone surrogate in a field name", lines(`{"id":1,"session":0,"\ud800":1,"ops":[["r","x",1]]}`), 1, "", "lone UTF-16 surrogate"},
	{"lone surrogate in an attribute", lines(`{"id":1,"session":0,"ops":[["r","x",1,{"\ud800":1}]]}`), 1, "ops[0]", "lone UTF-16 surrogate"},
	{"lone surrogate in the source", lines(`{"format":"isoscope-history","version":1,"source":"\ud800"}`), 1, "source", "lone UTF-16 surrogate"},
	{"lone surrogate in an initial key", lines(`{"format":"isoscope-history","version":1,"initial":{"\ud800":1,"\udbff":2}}`), 1, "initial", "lone UTF-16 surrogate"},
	{"lone surrogate in an initial value", lines(`{"format":"isoscope-history","version":1,"initial":{"x":"\ud800"}}`), 1, "initial", "lone UTF-16 surrogate"},
	{"lone surrogate in a version_order key", lines(`{"format":"isoscope-history","version":1,"version_order":{"\ud800":[1]}}`, txn1), 1, "version_order", "lone UTF-16 surrogate"},
	{"lone surrogate in a version_order id", lines(`{"format":"isoscope-history","version":1,"version_order":{"x":["\ud800"]}}`, txn1), 1, "version_order", "lone UTF-16 surrogate"},
	{"invalid UTF-8 in a key", lines("{\"id\":1,\"session\":0,\"ops\":[[\"w\",\"\xed\xa0\x80\",1]]}"), 1, "ops[0]", "want valid UTF-8 in a string"},
	{"raw control character", lines("{\"id\":\"a\tb\",\"session\":0,\"ops\":[[\"r\",\"x\",1]]}"), 1, "id", "raw control characters"},
	{"bad literal", lines(`{"id":1,"session":0,"x":nul,"ops":[["r","x",1]]}`), 1, "x", "want a JSON value"},
	{"too deep", lines(`{"id":1,"x":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + `}`), 1, "x", "nested deeper than 1000"},
	{"no colon", lines(`{"id" 1}`), 1, "", "want ':'"},
	// Operations.
	{"unknown operation", lines(`{"id":1,"session":0,"ops":[["r","x",1],["cas","x",1,2]]}`), 1, "ops[1]", `unknown operation "cas"`},
	{"w without a value", lines(`{"id":1,"session":0,"ops":[["r","x",1],["w","x"]]}`), 1, "ops[1]", `"w" needs a key and a value`},
	{"w with an object value", lines(`{"id":1,"session":0,"ops":[["w","x",{"lock":true}]]}`), 1, "ops[0]", `"w" needs a key and a value`},
	{"r with two values", lines(`{"id":1,"session":0,"ops":[["r","x",1,2]]}`), 1, "ops[0]", `"r" needs a key and a value (or a list)`},
	{"d without a key", lines(`{"id":1,"session":0,"ops":[["d"]]}`), 1, "ops[0]", `"d" needs a key`},
	{"append without an element", lines(`{"id":1,"session":0,"ops":[["append","l"]]}`), 1, "ops[0]", `"append" needs a key and an element`},
	{"scan without a result", lines(`{"id":1,"session":0,"ops":[["scan","a","b"]]}`), 1, "ops[0]", `"scan" needs lo, hi and the list`},
	{"iter with an object result", lines(`{"id":1,"session":0,"ops":[["iter","a","b",{}]]}`), 1, "ops[0]", `"iter" needs lo, hi and the list`},
	{"after the attributes", lines(`{"id":1,"session":0,"ops":[["w","x",1,{"lock":true},3]]}`), 1, "ops[0]", `"w" needs a key and a value`},
	{"operation not an array", lines(`{"id":1,"session":0,"ops":[{"r":"x"}]}`), 1, "ops[0]", "must be an array that starts with its name, not an object"},
	{"name not a string", lines(`{"id":1,"session":0,"ops":[[1,"x",1]]}`), 1, "ops[0]", "starts with its name"},
	{"empty operation", lines(`{"id":1,"session":0,"ops":[[]]}`), 1, "ops[0]", "starts with its name"},
	{"null key", lines(`{"id":1,"session":0,"ops":[["r",null,1]]}`), 1, "ops[0]", "key must be an integer or a string, not null"},
	{"boolean key", lines(`{"id":1,"session":0,"ops":[["r",true,1]]}`), 1, "ops[0]", "key must be an integer or a string, not a boolean"},
	{"float value", lines(`{"id":1,"session":0,"ops":[["w","x",1.5]]}`), 1, "ops[0]", "not a non-integer number"},
	{"exponent value", lines(`{"id":1,"session":0,"ops":[["w","x",1e3]]}`), 1, "ops[0]", "not a non-integer number"},
	{"value out of range", lines(`{"id":1,"session":0,"ops":[["w","x",9223372036854775808]]}`), 1, "ops[0]", "out of the 64-bit range"},
	{"list read of a boolean", lines(`{"id":1,"session":0,"ops":[["r","x",true]]}`), 1, "ops[0]", "must be an integer, a string, null or a list, not a boolean"},
	{"nested list", lines(`{"id":1,"session":0,"ops":[["r","x",[1,[2]]]]}`), 1, "ops[0]", "a list element must be an integer, a string or null, not an array"},
	{"lock not a boolean", lines(`{"id":1,"session":0,"ops":[["r","x",1,{"lock":1}]]}`), 1, "ops[0]", `attribute "lock" must be true or false`},
	{"ops not an array", lines(`{"id":1,"session":0,"ops":{}}`), 1, "ops", "must be an array of operations, not an object"},
	{"ops null", lines(`{"id":1,"session":0,"ops":null}`), 1, "ops", "must be an array of operations, not null"},
	// Transactions.
	{"missing id", lines(txn1, `{"session":0,"ops":[["r","x",1]]}`), 2, "id", "missing"},
	{"missing session", lines(`{"id":1,"ops":[["r","x",1]]}`), 1, "session", "missing"},
	{"missing ops", lines(`{"id":1,"session":0}`), 1, "ops", "missing"},
	{"empty object", lines(`{}`), 1, "id", "missing"},
	{"float id", lines(`{"id":1.5,"session":0,"ops":[["r","x",1]]}`), 1, "id", "must be an integer or a string, not a non-integer number"},
	{"boolean id", lines(`{"id":true,"session":0,"ops":[["r","x",1]]}`), 1, "id", "must be an integer or a string, not a boolean"},
	{"null id", lines(`{"id":null,"session":0,"ops":[["r","x",1]]}`), 1, "id", "not null"},
	{"array session", lines(`{"id":1,"session":[0],"ops":[["r","x",1]]}`), 1, "session", "not an array"},
	{"null session", lines(`{"id":1,"session":null,"ops":[["r","x",1]]}`), 1, "session", "not null"},
	{"float session", lines(`{"id":1,"session":2.0,"ops":[["r","x",1]]}`), 1, "session", "non-integer"},
	{"duplicate id", lines(txn1, ``, `{"id":2,"session":0,"ops":[["r","x",1]]}`, txn1), 4, "id", "duplicate id 1 (first on line 1)"},
	{"duplicate string id", lines(`{"id":"a","session":0,"ops":[["r","x",1]]}`, `{"id":"a","session":1,"ops":[["r","x",1]]}`), 2, "id", `duplicate id a (first on line 1)`},
	{"duplicate huge id", lines(`{"id":-7,"session":0,"ops":[["r","x",1]]}`, `{"id":-7,"session":1,"ops":[["r","x",1]]}`), 2, "id", `duplicate id -7`},
	{"field given twice", lines(`{"id":1,"id":2,"session":0,"ops":[["r","x",1]]}`), 1, "id", "given twice"},
	{"unknown status", lines(`{"id":1,"session":0,"status":"done","ops":[["r","x",1]]}`), 1, "status", `unknown status "done"`},
	{"status not a string", lines(`{"id":1,"session":0,"status":1,"ops":[["r","x",1]]}`), 1, "status", "must be a string, not a number"},
	{"begin after end", lines(`{"id":1,"session":0,"begin":10,"end":5,"ops":[["r","x",1]]}`), 1, "end", "end 5 is before begin 10"},
	{"negative begin", lines(`{"id":1,"session":0,"begin":-1,"end":5,"ops":[["r","x",1]]}`), 1, "begin", "not a negative number"},
	{"float end", lines(`{"id":1,"session":0,"begin":1,"end":5.5,"ops":[["r","x",1]]}`), 1, "end", "not a non-integer number"},
	{"string begin", lines(`{"id":1,"session":0,"begin":"1","ops":[["r","x",1]]}`), 1, "begin", "not a string"},
	{"begin beyond int64", lines(`{"id":1,"session":0,"begin":9223372036854775808,"ops":[["r","x",1]]}`), 1, "begin", "out of the 64-bit range"},
	{"negative start_ts", lines(`{"id":1,"session":0,"start_ts":-3,"ops":[["r","x",1]]}`), 1, "start_ts", "not a negative number"},
	{"commit_ts beyond uint64", lines(`{"id":1,"session":0,"commit_ts":18446744073709551616,"ops":[["r","x",1]]}`), 1, "commit_ts", "out of the 64-bit range"},
	{"float commit_ts", lines(`{"id":1,"session":0,"commit_ts":1e2,"ops":[["r","x",1]]}`), 1, "commit_ts", "non-integer"},
	{"empty committed", lines(`{"id":1,"session":0,"ops":[]}`), 1, "ops", "only an aborted transaction may have no operations"},
	{"empty unknown", lines(`{"id":1,"session":0,"status":"unknown","ops":[]}`), 1, "ops", "only an aborted"},
	// Headers.
	{"header not first", lines(txn1, hdr), 2, "format", "only on the first line"},
	{"second header", lines(hdr, hdr), 2, "format", "only on the first line"},
	{"unsupported version", lines(`{"format":"isoscope-history","version":2}`), 1, "version", "unsupported version 2"},
	{"string version", lines(`{"format":"isoscope-history","version":"1"}`), 1, "version", `unsupported version "1"`},
	{"missing version", lines(`{"format":"isoscope-history"}`), 1, "version", "missing"},
	{"other format", lines(`{"format":"elle","version":1}`), 1, "format", `must be "isoscope-history"`},
	{"header malformed", lines(`{"format":"isoscope-history","version":1,}`), 1, "", "want a field name"},
	{"header field twice", lines(`{"format":"isoscope-history","version":1,"version":1}`), 1, "version", "given twice"},
	{"bad initial word", lines(`{"format":"isoscope-history","version":1,"initial":"empty"}`), 1, "initial", `must be "absent" or an object`},
	{"initial array", lines(`{"format":"isoscope-history","version":1,"initial":[1]}`), 1, "initial", "not an array"},
	{"initial value object", lines(`{"format":"isoscope-history","version":1,"initial":{"x":{}}}`), 1, "initial", `initial value of "x" must be`},
	{"initial key twice", lines(`{"format":"isoscope-history","version":1,"initial":{"x":1,"x":2}}`), 1, "initial", `key "x" given twice`},
	{"initial keys equal as integers", lines(`{"format":"isoscope-history","version":1,"initial":{"1":1,"01":2}}`, txnInt), 1, "initial", "key 1 given twice"},
	{"initial string key, integer history", lines(``, `{"format":"isoscope-history","version":1,"initial":{"x":0}}`, txnInt), 2, "initial", `key "x" is not an integer, but this history's keys are integers (since line 3)`},
	{"unique_values not a boolean", lines(`{"format":"isoscope-history","version":1,"unique_values":"yes"}`), 1, "unique_values", "must be true or false"},
	{"bad deletes", lines(`{"format":"isoscope-history","version":1,"deletes":"soft"}`), 1, "deletes", `must be "physical" or "tombstone", not "soft"`},
	{"deletes not a string", lines(`{"format":"isoscope-history","version":1,"deletes":1}`), 1, "deletes", "must be a string"},
	{"source not a string", lines(`{"format":"isoscope-history","version":1,"source":5}`), 1, "source", "must be a string"},
	{"version_order array", lines(`{"format":"isoscope-history","version":1,"version_order":[1]}`), 1, "version_order", "must be an object"},
	{"version_order not a list", lines(`{"format":"isoscope-history","version":1,"version_order":{"x":1}}`), 1, "version_order", `the writers of "x" must be an array`},
	{"version_order float id", lines(`{"format":"isoscope-history","version":1,"version_order":{"x":[1.5]}}`), 1, "version_order", "non-integer"},
	{"version_order null id", lines(`{"format":"isoscope-history","version":1,"version_order":{"x":[null]}}`), 1, "version_order", "not null"},
	{"version_order unknown id", lines(`{"format":"isoscope-history","version":1,"version_order":{"x":[1,2]}}`, txn1), 1, "version_order", "key x: no transaction has id 2"},
	{"version_order id twice", lines(`{"format":"isoscope-history","version":1,"version_order":{"x":[1,1]}}`, txn1), 1, "version_order", "transaction 1 is listed twice"},
	{"version_order string key, integer history", lines(`{"format":"isoscope-history","version":1,"version_order":{"x":[1]}}`, txnInt), 1, "version_order", `key "x" is not an integer`},
	// Keys and ranges.
	{"keys of both kinds", lines(txn1, `{"id":2,"session":0,"ops":[["w","x",2],["w",7,1]]}`), 2, "ops[1]", "key 7 is an integer, but this history's keys are strings (since line 1)"},
	{"range bound of the other kind", lines(txnInt, `{"id":2,"session":0,"ops":[["scan","a","z",[]]]}`), 2, "ops[0]", `lo a is a string, but this history's keys are integers`},
	{"hi of the other kind", lines(`{"id":2,"session":0,"ops":[["scan","a",5,[]]]}`), 1, "ops[0]", `hi 5 is an integer, but this history's keys are strings`},
	{"null lo", lines(`{"id":2,"session":0,"ops":[["scan",null,5,[]]]}`), 1, "ops[0]", `lo must be an integer or a string, not null`},
	{"pairs out of order", lines(`{"id":1,"session":0,"ops":[["scan",1,10,[[5,1],[3,1]]]]}`), 1, "ops[0]", "not in strictly ascending order: 3 after 5"},
	{"pairs repeat a key", lines(`{"id":1,"session":0,"ops":[["iter","a",null,[["b",1],["b",2]]]]}`), 1, "ops[0]", "not in strictly ascending order: b after b"},
	{"pair below lo", lines(`{"id":1,"session":0,"ops":[["scan",4,10,[[3,1]]]]}`), 1, "ops[0]", "result key 3 is outside the range [4, 10)"},
	{"pair at hi", lines(`{"id":1,"session":0,"ops":[["scan",4,10,[[10,1]]]]}`), 1, "ops[0]", "result key 10 is outside the range [4, 10)"},
	{"pair key of the other kind", lines(`{"id":1,"session":0,"ops":[["scan",4,10,[["a",1]]]]}`), 1, "ops[0]", "a result key a is a string"},
	{"pair not a pair", lines(`{"id":1,"session":0,"ops":[["scan",4,10,[[5]]]]}`), 1, "ops[0]", "[key, value] pairs"},
	{"pair of three", lines(`{"id":1,"session":0,"ops":[["scan",4,10,[[5,1,2]]]]}`), 1, "ops[0]", "[key, value] pairs"},
	{"result not a list", lines(`{"id":1,"session":0,"ops":[["scan",4,10,5]]}`), 1, "ops[0]", "the result must be an array of [key, value] pairs, not a number"},
	// Broken promises.
	{"duplicate write", lines(uniq, txn1, `{"id":2,"session":0,"ops":[["r","x",1],["w","x",5]]}`, `{"id":3,"session":1,"ops":[["w","y",5],["r","x",5],["w","x",5]]}`), 4, "ops[2]", "unique_values is promised, but x=5 was already written by transaction 2 (line 3)"},
	{"write of the initial value", lines(`{"format":"isoscope-history","version":1,"unique_values":true,"initial":{"x":0}}`, `{"id":1,"session":0,"ops":[["w","x",0]]}`), 2, "ops[0]", "x=0 was already written by the initial state"},
	{"duplicate string write", lines(uniq, `{"id":1,"session":0,"ops":[["w","x","a"],["w","x","a"]]}`), 2, "ops[1]", `x=a was already written`},
	{"fence_key not a key", lines(`{"format":"isoscope-history","version":1,"fence_key":[1]}`), 1, "fence_key", "must be a string or an integer key"},
	{"fence_key not of the keys' kind", lines(`{"format":"isoscope-history","version":1,"fence_key":"f"}`, txnInt), 1, "fence_key", `key "f" is not an integer, but this history's keys are integers (since line 2)`},
	{"duplicate append", lines(uniq, `{"id":1,"session":0,"ops":[["append","l",1]]}`, `{"id":2,"session":0,"ops":[["append","l",2],["append","l",1]]}`), 3, "ops[1]", "1 was already appended to l by transaction 1 (line 2)"},
}

func TestReadBad(t *testing.T) {
	for _, c := range badCases {
		t.Run(c.name, func(t *testing.T) {
			h, err := Read(strings.NewReader(c.in), "bad.jsonl")
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v (%T), history %v; want a *format.Error", err, err, h != nil)
			}
			if h != nil {
				t.Error("Read returned a history with its error")
			}
			if fe.File != "bad.jsonl" || fe.Line != c.line || fe.Field != c.field || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got  %s\nwant bad.jsonl:%d: %s: …%s…", err, c.line, c.field, c.msg)
			}
		})
	}
}

func TestReadBadGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for i := range 1000 {
		fmt.Fprintf(zw, `{"id":%d,"session":0,"ops":[["r","x",%d]]}`+"\n", i, i*7919%1000)
	}
	zw.Close()
	data := buf.Bytes()
	for name, in := range map[string][]byte{
		"cut short":   data[:len(data)-10],
		"bad header":  append([]byte{0x1f, 0x8b, 0}, data[3:]...),
		"bad content": append(append([]byte(nil), data[:20]...), bytes.Repeat([]byte{0xff}, 40)...),
	} {
		_, err := Read(bytes.NewReader(in), "bad.gz")
		var fe *format.Error
		if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "gzip") {
			t.Errorf("%s: got %v, want a *format.Error about gzip", name, err)
		}
	}
}

func TestErrorString(t *testing.T) {
	for _, c := range []struct {
		e    format.Error
		want string
	}{
		{format.Error{File: "h.jsonl", Line: 3, Field: "ops[1]", Msg: `"w" needs a key and a value`}, `h.jsonl:3: ops[1]: "w" needs a key and a value`},
		{format.Error{File: "h.jsonl", Line: 3, Msg: "malformed"}, "h.jsonl:3: malformed"},
		{format.Error{File: "h.jsonl", Msg: "gzip: bad"}, "h.jsonl: gzip: bad"},
		{format.Error{Line: 2, Field: "id", Msg: "missing"}, "line 2: id: missing"},
		{format.Error{Msg: "bad"}, "bad"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
