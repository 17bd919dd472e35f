package format

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

func gz(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.String()
}

func TestDetect(t *testing.T) {
	header := `{"format":"isoscope-history","version":1,"initial":"absent"}` + "\n"
	txn := `{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}` + "\n"
	long := `{"id":1,"session":0,"hints":{"a":"` + strings.Repeat("x", 200) + `"},"ops":[["r","x",1]]}`
	for _, c := range []struct{ name, in, want string }{
		{"header", header + txn, "isoscope"},
		{"transaction", txn, "isoscope"},
		{"ops first", `{"ops":[["r","x",1]],"id":1,"session":0}`, "isoscope"},
		{"ops after nested fields", `{"id":"a,b}","session":{"x":[1,{"y":"]"}]},"begin":5,"ops":[]}`, "isoscope"},
		{"blank lines and spaces", "\n \r\n\t" + ` { "format" : "isoscope-history" }`, "isoscope"},
		{"byte order mark", "\ufeff" + header, "isoscope"},
		{"gzip", gz(header + txn), "isoscope"},
		{"gzip cut short", func() string { s := gz(header + strings.Repeat(txn, 100)); return s[:len(s)-8] }(), "isoscope"},
		{"line cut short after ops", long[:len(long)-10], "isoscope"},
		{"line cut short before ops", long[:100], ""},
		{"other format", `{"format":"elle","version":1}`, ""},
		{"format later than ops is still a header", `{"ops":5,"format":"x"}`, ""},
		{"no ops", `{"id":1,"session":0}`, ""},
		{"ops not a list", `{"ops":"r x 1"}`, ""},
		{"ops nested", `{"x":{"ops":[]}}`, ""},
		{"array", `[{"ops":[]}]`, ""},
		{"EDN", `{:type :ok, :f :txn, :value [[:r :x 1]]}`, ""},
		{"text", "hello", ""},
		{"empty", "", ""},
		{"blank", "\n\n  \n", ""},
		{"broken gzip", "\x1f\x8bnot really", ""},
	} {
		if got := Detect([]byte(c.in)); got != c.want {
			t.Errorf("%s: Detect = %q, want %q", c.name, got, c.want)
		}
	}
}
