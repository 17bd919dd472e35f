package edn

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
)

// all decodes every top-level value of s.
func all(s string) ([]Value, error) {
	var out []Value
	err := NewDecoder(strings.NewReader(s), "t").Each(func(v Value) error { out = append(out, v); return nil })
	return out, err
}

func TestDecode(t *testing.T) {
	vs, err := all("; c\n{:a 1, :b [nil true \"s\\n\\u00e9\" \\x \\newline :k/w sym -2N 1.5 1/2 ##Inf] :c #{1} :d (1) #_ :gone :e #inst \"2020\"}\n{:a -7}")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Line != 2 || vs[1].Line != 3 {
		t.Fatalf("got %v", vs)
	}
	m := vs[0]
	b, _ := m.Get("b")
	var kinds []string
	for _, x := range b.Items {
		kinds = append(kinds, x.Kind.String()+"="+x.String())
	}
	want := `nil=nil a boolean=true a string="s\né" a character=\x a character=\` + "\n" +
		` a keyword=:k/w a symbol=sym an integer=-2 a number=1.5 a number=1/2 a number=##Inf`
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, ok := m.Get("gone"); ok {
		t.Error("#_ did not discard")
	}
	if e, _ := m.Get("e"); e.Kind != String || e.Text != "2020" {
		t.Errorf("tagged value %v", e)
	}
	if c, _ := m.Get("c"); c.Kind != Set || len(c.Items) != 1 {
		t.Errorf("set %v", c)
	}
}

func TestJSON(t *testing.T) {
	vs, err := all(`[{"type": "ok", "value": [["r", "x", null], ["w", "y", "\ud83d\ude00"]]},` + "\n" + `{"type":"invoke"}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[1].Line != 2 {
		t.Fatalf("got %v", vs)
	}
	v, _ := vs[0].Get("value")
	if got := v.String(); got != `[["r" "x" nil] ["w" "y" "😀"]]` {
		t.Errorf("got %s", got)
	}
	if ty, _ := vs[0].Get("type"); ty.Kind != String || ty.Text != "ok" {
		t.Errorf("type %v", ty)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
		want string
	}{
		{"{:a\n[1 2", 2, "ends inside the vector opened on line 2"},
		{"(1 2]", 1, `"]" closes the top-level vector opened on line 1, which wants ")"`},
		{"{:a (1 2]}", 1, `"]" closes the vector opened on line 1, which wants ")"`},
		{"}", 1, `unexpected "}"`},
		{"\"abc", 1, "ends inside a string"},
		{"\"\\x\"", 1, `unknown escape \x`},
		{"\"\\u12\"", 1, "four hex digits"},
		{"\"\xff\"", 1, "not valid UTF-8"},
		// Lone surrogates: as U+FFFD, "\ud800" and "\udbff" were one
		// string, so two keys one key.
		{"\n\"\\ud800\"", 2, `\ud800 in a string is a lone UTF-16 surrogate`},
		{"\"a\\udbff\"", 1, `\udbff in a string is a lone UTF-16 surrogate`},
		{"\"\\udc00\"", 1, `\udc00 in a string is a lone UTF-16 surrogate`},
		{"\"\\ud800\\ud800\"", 1, `\ud800 in a string is a lone UTF-16 surrogate`},
		{"\"\\ud800\\u0041\"", 1, `\ud800 in a string is a lone UTF-16 surrogate`},
		{"\"\\ud800\\n\"", 1, `\ud800 in a string is a lone UTF-16 surrogate`},
		{"[\\uD800]", 1, `\uD800 is a UTF-16 surrogate`},
		{"\n[:a\xff]", 2, "a keyword that is not valid UTF-8"},
		// A discard that ends the input inside the top-level vector.
		{"(#_0", 1, "the input ends inside the top-level vector opened on line 1"},
		{"[1\n#_2", 2, "the input ends inside the top-level vector opened on line 1"},
		{"\n\n#_", 3, "discards nothing"},
		{"#foo", 1, "tags nothing"},
		{"#", 1, "neither {, _ nor a tag"},
		{"\\", 1, "a backslash without a character"},
		{"\\abc", 1, `\abc is not a character`},
		{":", 1, "a colon without a keyword name"},
		{"1x", 1, `"1x" is not a number`},
		{"[1] 2", 1, "more input after the top-level vector"},
		{strings.Repeat("#{", MaxDepth), 1, "nested more than"},
		{strings.Repeat("#t ", 2*MaxDepth) + "1", 1, "nested more than"},
	} {
		_, err := all(c.in)
		var fe *format.Error
		if !errors.As(err, &fe) || fe.Line != c.line || fe.File != "t" || !strings.Contains(fe.Msg, c.want) {
			t.Errorf("%q: got %v, want line %d and %q", c.in, err, c.line, c.want)
		}
	}
}

func TestDecodeEOF(t *testing.T) {
	d := NewDecoder(strings.NewReader(" ; nothing\n #_ 1 "), "t")
	if _, err := d.Decode(); !errors.Is(err, io.EOF) {
		t.Errorf("got %v, want io.EOF", err)
	}
}

func TestEscapes(t *testing.T) {
	vs, err := all(`"a\"b\\c\nd\u0001\/\'\t\r\b\f"`)
	if want := "a\"b\\c\nd\x01/'\t\r\b\f"; err != nil || len(vs) != 1 || vs[0].Text != want {
		t.Errorf("got %v %v, want %q", vs, err, want)
	}
}

// FuzzDecode decodes arbitrary text: values or a *format.Error, never a
// panic.
func FuzzDecode(f *testing.F) {
	f.Add(`{:a [1 "x" \c #{:k} (nil) #_ 2 #t 3]} ; c`)
	f.Add(`[{"a": [1, null, "\u00e9"]}]`)
	f.Fuzz(func(t *testing.T, s string) {
		_, err := all(s)
		var fe *format.Error
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error %v is not a *format.Error", err)
		}
	})
}

// TestDiscardInTopLevelVector: #_ drops an element of the top-level
// vector, the last one too.
func TestDiscardInTopLevelVector(t *testing.T) {
	for in, want := range map[string]int{"[1 #_2]": 1, "[#_1 2 3]": 2, "(#_ 1)": 0} {
		vs, err := all(in)
		if err != nil || len(vs) != want {
			t.Errorf("%q: got %v, %v; want %d values", in, vs, err, want)
		}
	}
}
