package native

import (
	"strings"
	"testing"
)

// TestSniff: the first line that is not blank claims the input when it is
// a header or a transaction, however its fields are laid out, even cut
// short after the "ops" field's start. The gzip-compressed cases are the
// registry's (TestDetectGzip), which sniffs the decompressed prefix.
func TestSniff(t *testing.T) {
	header := `{"format":"isoscope-history","version":1,"initial":"absent"}` + "\n"
	txn := `{"id":1,"session":0,"ops":[["r","x",null],["w","x",1]]}` + "\n"
	long := `{"id":1,"session":0,"hints":{"a":"` + strings.Repeat("x", 200) + `"},"ops":[["r","x",1]]}`
	for _, c := range []struct {
		name, in string
		want     bool
	}{
		{"header", header + txn, true},
		{"transaction", txn, true},
		{"ops first", `{"ops":[["r","x",1]],"id":1,"session":0}`, true},
		{"ops after nested fields", `{"id":"a,b}","session":{"x":[1,{"y":"]"}]},"begin":5,"ops":[]}`, true},
		{"blank lines and spaces", "\n \r\n\t" + ` { "format" : "isoscope-history" }`, true},
		{"byte order mark", "\ufeff" + header, true},
		{"line cut short after ops", long[:len(long)-10], true},
		{"line cut short before ops", long[:100], false},
		{"other format", `{"format":"elle","version":1}`, false},
		{"format later than ops is still a header", `{"ops":5,"format":"x"}`, false},
		{"no ops", `{"id":1,"session":0}`, false},
		{"ops not a list", `{"ops":"r x 1"}`, false},
		{"ops nested", `{"x":{"ops":[]}}`, false},
		{"array", `[{"ops":[]}]`, false},
		{"EDN", `{:type :ok, :f :txn, :value [[:r :x 1]]}`, false},
		{"text", "hello", false},
		{"empty", "", false},
		{"blank", "\n\n  \n", false},
		{"gzip magic", "\x1f\x8bnot really", false},
	} {
		if got := Sniff([]byte(c.in)); got != c.want {
			t.Errorf("%s: Sniff = %v, want %v", c.name, got, c.want)
		}
	}
}
