package history

import "testing"

func TestParseRoundTrip(t *testing.T) {
	cases := []string{
		"init: x=0 y=0 | t1: s1: r x 0 w x 1 | t2: s2: aborted: r* y 0 d y | t3: s1: @5-9: ts=3-4: a l 1 r l [1,2] scan 1 _ [x=1,y=_] iter a b []",
		"unique: | t1: s0: r x _ w x 1",
	}
	for _, c := range cases {
		h, err := Parse(c)
		if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		again, err := Parse(Notation(h))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", Notation(h), err)
		}
		if Notation(again) != Notation(h) {
			t.Errorf("round trip:\n %s\n %s", Notation(h), Notation(again))
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []string{"s1: r x", "s1: zz x 1", "t1: r x 1 | t1: r x 1", "@1: r x 1", "ts=a-b: r x 1", "s1: scan 1 2 [x]"} {
		if _, err := Parse(c); err == nil {
			t.Errorf("%q: want an error", c)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("init: x=0 | s1: r x 0 w x 1 | s2: r x 1")
	f.Add("t1: s1: @1-2: ts=1-2: scan 1 _ [x=1] iter 1 2 [] a k 1 r k [1,2] d k")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Parse(s)
		if err != nil {
			return
		}
		_ = Notation(h)
		_ = NewIndex(h)
	})
}
