package edn

import (
	"slices"
	"strconv"
	"strings"
)

// Canonical renders v in full as EDN text, the same text for values that
// EDN (Clojure's =) takes as equal and different texts for values it
// takes as different: a map's pairs and a set's elements are sorted by
// their own canonical text, a floating-point number is written in its
// shortest form (1.50 is 1.5), an integer without its N suffix, and a
// JSON null is nil. Vectors and lists are both written as vectors (EDN
// takes them as equal). Readers use it to compare values of any kind by
// equality.
func (v Value) Canonical() string {
	var b strings.Builder
	v.canonical(&b)
	return b.String()
}

func (v Value) canonical(b *strings.Builder) {
	switch v.Kind {
	case Nil:
		b.WriteString("nil")
	case Int:
		b.WriteString(strconv.FormatInt(v.N, 10))
	case Number:
		b.WriteString(canonicalNumber(v.Text))
	case String:
		b.WriteString(strconv.Quote(v.Text))
	case Keyword:
		b.WriteString(":" + v.Text)
	case Char:
		b.WriteString(`\` + v.Text)
	case Vector:
		b.WriteByte('[')
		for i, x := range v.Items {
			if i > 0 {
				b.WriteByte(' ')
			}
			x.canonical(b)
		}
		b.WriteByte(']')
	case Set:
		items := make([]string, len(v.Items))
		for i, x := range v.Items {
			items[i] = x.Canonical()
		}
		slices.Sort(items)
		b.WriteString("#{" + strings.Join(items, " ") + "}")
	case Map:
		pairs := make([]string, 0, len(v.Items)/2)
		for i := 0; i+1 < len(v.Items); i += 2 {
			pairs = append(pairs, v.Items[i].Canonical()+" "+v.Items[i+1].Canonical())
		}
		slices.Sort(pairs)
		b.WriteString("{" + strings.Join(pairs, ", ") + "}")
	default: // Bool, Symbol
		b.WriteString(v.Text)
	}
}

// canonicalNumber writes a floating-point number in its shortest form; a
// ratio, a big integer or a big decimal (M) stays as written.
func canonicalNumber(s string) string {
	if strings.ContainsAny(s, "/NM") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	out := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(out, ".eEIN") {
		out += ".0" // a float stays apart from the integer of the same value
	}
	return out
}
