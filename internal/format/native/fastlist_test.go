package native

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestFastListElements: list reads whose elements list's integer path
// takes, and ones near them that it leaves to the scanner, give the same
// history or the same error with and without it — fixed cases, then
// random lists of integers (every length to 25 digits, signs, leading
// zeros), strings, nulls, numbers with fractions or exponents, spaces and
// broken ends.
func TestFastListElements(t *testing.T) {
	lists := []string{
		`[1]`, `[1,2,3]`, `[0]`, `[0,10]`, `[00]`, `[01,2]`, `[1,02]`, `[-1]`, `[1,-2]`, `[1.5]`, `[1e3]`, `[1E3]`,
		`[1 ,2]`, `[1, 2]`, `[ 1,2]`, `[1,2 ]`, `[1,]`, `[1,,2]`, `[1`, `[1,`, `[1,2`, `[1]]`, `[1}`, `[1:2]`,
		`[123456789012345678]`, `[1234567890123456789]`, `[9223372036854775807]`, `[9223372036854775808]`,
		`[12345678901234567890]`, `[99999999999999999999,1]`, `[1,"x"]`, `["x",1]`, `[null,1]`, `[1,null]`,
		`[1,true]`, `[1,[2]]`, `[]`, `[ ]`, `[1,2,3,4,5,6,7,8,9,10,11,12]`,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	elements := []func() string{
		func() string { return fmt.Sprint(rng.Int64N(1000)) },
		func() string { return digits(rng, 1+rng.IntN(25)) },
		func() string { return "0" + digits(rng, 1+rng.IntN(5)) },
		func() string { return "-" + digits(rng, 1+rng.IntN(20)) },
		func() string { return digits(rng, 1+rng.IntN(4)) + "." + digits(rng, 1) },
		func() string { return digits(rng, 1+rng.IntN(4)) + "e2" },
		func() string { return `"` + digits(rng, 2) + `"` },
		func() string { return "null" },
		func() string { return " " + fmt.Sprint(rng.IntN(100)) + " " },
	}
	for range 300 {
		n := rng.IntN(6)
		parts := make([]string, n)
		for i := range parts {
			if rng.IntN(4) == 0 {
				parts[i] = elements[rng.IntN(len(elements))]()
			} else {
				parts[i] = elements[0]()
			}
		}
		l := "[" + strings.Join(parts, ",") + "]"
		switch rng.IntN(20) {
		case 0:
			l = l[:len(l)-1]
		case 1:
			l = strings.Replace(l, ",", ",,", 1)
		}
		lists = append(lists, l)
	}
	defer func() { fastLists = true }()
	for _, l := range lists {
		in := []byte(lines(
			`{"id":1,"session":0,"ops":[["append",1,1]]}`,
			`{"id":2,"session":0,"ops":[["r",1,`+l+`],["append",1,7]]}`))
		fastLists = false
		want, wantErr := Read(bytes.NewReader(in), "h.jsonl")
		fastLists = true
		got, err := Read(bytes.NewReader(in), "h.jsonl")
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %v with the integer path, %v without", l, err, wantErr)
		} else if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the histories differ: %s", l, diff(got, want))
		}
	}
}

// digits returns n random decimal digits.
func digits(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + rng.IntN(10))
	}
	return string(b)
}
