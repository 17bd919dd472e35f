package timekiller

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/format/native"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
)

func read(t *testing.T, in string) *history.History {
	t.Helper()
	h, err := Read(strings.NewReader(in), "x.json")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestGolden(t *testing.T) {
	for _, c := range []struct{ in, golden, source string }{
		// Clocks with logical parts (the largest is 5: 3 bits), p as a
		// string, string tid and sid, mixed-case types, a read with v
		// left out, negative keys.
		{"kv.json", "kv.golden", "key-value history; timestamps: p·2^3 + l"},
		// TiDB-style timestamps (l always 0: kept as they are), appends
		// and list reads with [], null and v left out.
		{"list.json", "list.golden", "list history; timestamps: p·2^0 + l"},
		// Reads of 0 from a key nobody writes 0 to, and no null read:
		// TimeKiller's --initial_value 0.
		{"zero.json", "zero.golden", "initial value 0"},
	} {
		t.Run(c.in, func(t *testing.T) {
			h := formattest.ReadFile(t, filepath.Join("testdata", c.in), Read)
			if !h.Header.Present || h.Header.UniqueValues || !strings.Contains(h.Header.Source, c.source) {
				t.Errorf("header %+v", h.Header)
			}
			golden.Check(t, "testdata/"+c.golden, formattest.Render(h))
			// What convert writes reads back, timestamps and all.
			back, err := native.Read(bytes.NewReader([]byte(formattest.JSONL(t, h))), "back")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := history.Notation(back), history.Notation(h); got != want {
				t.Errorf("read back:\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestTimestampOrder draws random clocks and checks that the map keeps
// their lexicographic order, equal clocks equal.
func TestTimestampOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		n := 2 + rng.IntN(20)
		type pair struct{ p, l int64 }
		var clocks []pair
		var b strings.Builder
		b.WriteString("[")
		pBits, lBits := 1+rng.IntN(40), rng.IntN(20)
		for i := range n {
			s := pair{rng.Int64N(1 << pBits), rng.Int64N(1 << lBits)}
			if i > 0 && rng.IntN(4) == 0 {
				s = clocks[rng.IntN(len(clocks))] // a repeated clock
			}
			clocks = append(clocks, s)
			if i > 0 {
				b.WriteString(",")
			}
			// cts = sts: every clock is a start and a commit.
			c := `{"p":` + strconv.FormatInt(s.p, 10) + `,"l":` + strconv.FormatInt(s.l, 10) + `}`
			b.WriteString(`{"tid":` + strconv.Itoa(i) + `,"sid":0,"sts":` + c + `,"cts":` + c + `,"ops":[{"t":"r","k":1}]}`)
		}
		b.WriteString("]")
		h := read(t, b.String())
		for i := range clocks {
			for j := range clocks {
				a, c := clocks[i], clocks[j]
				lex := a.p < c.p || a.p == c.p && a.l < c.l
				if got := h.Txns[i].StartTS < h.Txns[j].StartTS; got != lex {
					t.Fatalf("round %d: clocks %v and %v map to %d and %d", round, a, c, h.Txns[i].StartTS, h.Txns[j].StartTS)
				}
				if (a == c) != (h.Txns[i].StartTS == h.Txns[j].StartTS) {
					t.Fatalf("round %d: clocks %v and %v map to %d and %d", round, a, c, h.Txns[i].StartTS, h.Txns[j].StartTS)
				}
			}
		}
	}
}

func TestReadBad(t *testing.T) {
	const ok = `"sid":0,"sts":{"p":1,"l":0},"cts":{"p":2,"l":0}`
	txn := func(fields string) string { return `[{"tid":1,` + fields + `}]` }
	cases := []struct {
		name, in string
		line     int
		field    string
		msg      string
	}{
		{"empty", "", 0, "", "empty input"},
		{"not an array", `{"tid":1}`, 1, "", "want a JSON array"},
		{"not JSON", "[{\"tid\":1,\n oops}]", 2, "", "malformed JSON"},
		{"cut short", "[{\"tid\":1,\"sid\":0", 1, "", "ends inside the array"},
		{"after the array", `[] []`, 1, "", "unexpected data after"},
		{"element not an object", "[\n\n 5]", 3, "[0]", "want a transaction object"},
		{"no tid", `[{` + ok + `,"ops":[{"t":"r","k":1}]}]`, 1, "[0].tid", "missing"},
		{"tid a list", `[{"tid":[1],` + ok + `,"ops":[{"t":"r","k":1}]}]`, 1, "[0].tid", "want an integer or a string"},
		{"no sid", `[{"tid":1,"sts":{"p":1,"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]}]`, 1, "[0].sid", "missing"},
		{"no sts", txn(`"sid":0,"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].sts", "want a hybrid logical clock"},
		{"sts a number", txn(`"sid":0,"sts":5,"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].sts", "want a hybrid logical clock"},
		{"no p", txn(`"sid":0,"sts":{"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].sts.p", "missing"},
		{"no l", txn(`"sid":0,"sts":{"p":1},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].sts.l", "missing"},
		{"negative p", txn(`"sid":0,"sts":{"p":-1,"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].sts.p", "-1 is negative"},
		{"fractional l", txn(`"sid":0,"sts":{"p":1,"l":0.5},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].sts.l", "want an integer, got 0.5"},
		{"p too big", txn(`"sid":0,"sts":{"p":1,"l":0},"cts":{"p":99999999999999999999,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].cts.p", "out of the 64-bit range"},
		{"p a word", txn(`"sid":0,"sts":{"p":"soon","l":0},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0].sts.p", `want an integer, got "soon"`},
		{"commit before start", txn(`"sid":0,"sts":{"p":2,"l":1},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`), 1, "[0]", "cts (p 2, l 0) is before the start timestamp sts (p 2, l 1)"},
		{"no ops", txn(ok), 1, "[0].ops", "want an array of operations"},
		{"ops null", txn(ok + `,"ops":null`), 1, "[0].ops", "want an array of operations"},
		{"ops empty", txn(ok + `,"ops":[]`), 1, "[0].ops", "empty"},
		{"op not an object", txn(ok + `,"ops":[["r",1,2]]`), 1, "[0].ops[0]", "want an operation object"},
		{"no type", txn(ok + `,"ops":[{"k":1,"v":2}]`), 1, "[0].ops[0].t", "want the operation's type"},
		{"unknown type", "[\n" + txn(ok + `,"ops":[{"t":"r","k":1},{"t":"d","k":1}]`)[1:], 2, "[0].ops[1].t", `unknown operation type "d"`},
		{"no key", txn(ok + `,"ops":[{"t":"r","v":2}]`), 1, "[0].ops[0].k", "missing"},
		{"string key", txn(ok + `,"ops":[{"t":"r","k":"x","v":2}]`), 1, "[0].ops[0].k", `want an integer, got "x"`},
		{"write of null", txn(ok + `,"ops":[{"t":"w","k":1,"v":null}]`), 1, "[0].ops[0].v", "want an integer, got null"},
		{"write without v", txn(ok + `,"ops":[{"t":"w","k":1}]`), 1, "[0].ops[0].v", "missing"},
		{"read of a word", txn(ok + `,"ops":[{"t":"r","k":1,"v":"five"}]`), 1, "[0].ops[0].v", `want an integer, got "five"`},
		{"append of a list", txn(ok + `,"ops":[{"t":"a","k":1,"v":[1]}]`), 1, "[0].ops[0].v", "want an integer"},
		{"list of words", txn(ok + `,"ops":[{"t":"a","k":1,"v":1},{"t":"r","k":1,"v":["a"]}]`), 1, "[0].ops[1].v", `element 0: want an integer, got "a"`},
		{"list read of a number", txn(ok + `,"ops":[{"t":"a","k":1,"v":1},{"t":"r","k":1,"v":1}]`), 1, "[0].ops[1].v", "want the list read"},
		{"write in a list history", txn(ok + `,"ops":[{"t":"a","k":1,"v":1},{"t":"w","k":1,"v":1}]`), 1, "[0].ops[1].t", "a write in a list history"},
		{"duplicate tid", "[\n" + `{"tid":1,` + ok + `,"ops":[{"t":"r","k":1}]},` + "\n" + `{"tid":1,` + ok + `,"ops":[{"t":"r","k":1}]}]`, 3, "[1].tid", "1 is also the tid of [0] (line 2)"},
		// Lone surrogates and invalid UTF-8 were U+FFFD: sessions "\ud800"
		// and "\udbff" were one session.
		{"lone surrogate in a sid", "[\n" + `{"tid":1,"sid":"\ud800","sts":{"p":1,"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]}]`, 2, "[0].sid", `\ud800 in "\ud800" is a lone UTF-16 surrogate`},
		{"low surrogate in a sid", `[{"tid":1,"sid":"s\uDC00","sts":{"p":1,"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]}]`, 1, "[0].sid", `\uDC00 in "s\uDC00" is a lone UTF-16 surrogate`},
		{"two high surrogates in a tid", `[{"tid":"\udbff\ud800",` + ok + `,"ops":[{"t":"r","k":1}]}]`, 1, "[0].tid", `\udbff in "\udbff\ud800" is a lone UTF-16 surrogate`},
		{"invalid UTF-8 in a tid", "[{\"tid\":\"a\xff\"," + ok + `,"ops":[{"t":"r","k":1}]}]`, 1, "[0].tid", `"\"a\xff\"" is not valid UTF-8`},
		{"clock does not fit", `[{"tid":1,"sid":0,"sts":{"p":1,"l":0},"cts":{"p":9223372036854775807,"l":0},"ops":[{"t":"r","k":1}]},` + "\n" +
			`{"tid":2,"sid":0,"sts":{"p":1,"l":7},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]}]`, 1, "[0].cts",
			"(p 9223372036854775807, l 0) does not fit in 64 bits: its physical part needs 63 bits, and 3 more hold the logical parts (the largest, l 7, is at [1].sts)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(c.in), "bad.json")
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a *format.Error", err)
			}
			if fe.File != "bad.json" || fe.Line != c.line || fe.Field != c.field || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got %q (line %d, field %q), want line %d, field %q and a message containing %q", err, fe.Line, fe.Field, c.line, c.field, c.msg)
			}
		})
	}
}

// TestInitialValue checks when the initial state is 0 rather than absent.
func TestInitialValue(t *testing.T) {
	const clocks = `"sts":{"p":1,"l":0},"cts":{"p":2,"l":0}`
	for _, c := range []struct {
		ops  string
		zero bool
	}{
		{`{"t":"r","k":1,"v":0}`, true},
		{`{"t":"r","k":1,"v":0},{"t":"r","k":2}`, false},                        // a null read: absent
		{`{"t":"w","k":1,"v":0},{"t":"r","k":1,"v":0}`, false},                  // the 0 was written
		{`{"t":"w","k":1,"v":0},{"t":"r","k":2,"v":0}`, true},                   // but not to key 2
		{`{"t":"r","k":1,"v":3}`, false},                                        // no 0 read
		{`{"t":"a","k":1,"v":0},{"t":"r","k":2,"v":[]},{"t":"r","k":3}`, false}, // lists start empty
	} {
		h := read(t, `[{"tid":1,"sid":0,`+clocks+`,"ops":[`+c.ops+`]}]`)
		if got := len(h.Header.Initial.Values) > 0; got != c.zero {
			t.Errorf("%s: initial 0 = %v, want %v", c.ops, got, c.zero)
		}
		if c.zero && len(h.Header.Initial.Values) != len(h.Keys) {
			t.Errorf("%s: %d initial values for %d keys", c.ops, len(h.Header.Initial.Values), len(h.Keys))
		}
	}
}

func TestSniff(t *testing.T) {
	formattest.Sniff(t, Sniff, map[string]bool{
		`[{"tid":1,"sid":0,"sts":{"p":1,"l":0},"cts":{"p":2,"l":0},"ops":[]}]`:                                    true,
		"\xef\xbb\xbf[\n  {\n    \"cts\": {\n      \"l\": 0,\n      \"p\": \"320316486\"\n    },\n    \"ops\": [": true, // cut short
		`[{"ops":[{"t":"r","k":1}],"tid":1,"sts":{"p":1,"l":0}`:                                                   true,
		`[{"tid":1,"sid":0,"sts":5}]`:                                      false,
		`[{"type":"invoke","f":"txn","value":[["r",1,null]],"process":0}]`: false,
		`{"id":1,"session":0,"ops":[["r","x",1]]}`:                         false,
		`{"format":"isoscope-history","version":1}`:                        false,
		`[{:index 0, :type :invoke, :f :txn, :value [[:r 1 nil]]}]`:        false,
		"w(1,0,0,0)\n": false,
		"[]":           false,
		"":             false,
	})
}

// FuzzRead reads arbitrary bytes: a history or a *format.Error, never a
// panic; a history's ids are unique, its sessions in range, and every
// transaction committed with start_ts ≤ commit_ts.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"kv.json", "list.json", "zero.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`[{"tid":1,"sid":0,"sts":{"p":1,"l":9},"cts":{"p":1,"l":9},"ops":[{"t":"a","k":1,"v":0},{"t":"r","k":1,"v":[0]}]}]`)
	f.Fuzz(func(t *testing.T, in string) {
		h, err := Read(strings.NewReader(in), "fuzz")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *format.Error", err)
			}
			return
		}
		ids := map[history.Value]bool{}
		for i := range h.Txns {
			tx := &h.Txns[i]
			if ids[tx.ID] || tx.Session < 0 || int(tx.Session) >= len(h.Sessions) || tx.Status != history.Committed ||
				!tx.HasStartTS || !tx.HasCommitTS || tx.StartTS > tx.CommitTS || len(tx.Ops) == 0 {
				t.Fatalf("transaction %v: %+v", tx.ID, tx)
			}
			ids[tx.ID] = true
			if slices.ContainsFunc(tx.Ops, func(op history.Op) bool { return op.Key < 0 || int(op.Key) >= len(h.Keys) }) {
				t.Fatalf("transaction %v: a key out of range", tx.ID)
			}
		}
		_ = history.Notation(h)
		_ = history.NewIndex(h)
	})
}

// TestLabelText: string tids and sids that are Unicode text are read as
// text, escaped or not; "\ud83d\ude00" and "😀" are the same session.
func TestLabelText(t *testing.T) {
	const clocks = `"sts":{"p":1,"l":0},"cts":{"p":2,"l":0},"ops":[{"t":"r","k":1}]`
	h := read(t, `[{"tid":"\ud83d\ude00\u00e9\n","sid":"\ud83d\ude00",`+clocks+`},{"tid":"é","sid":"😀",`+clocks+`}]`)
	if len(h.Sessions) != 1 || h.Sessions[0] != history.StringValue("😀") {
		t.Errorf("sessions %v, want one, 😀", h.Sessions)
	}
	if len(h.Txns) != 2 || h.Txns[0].ID != history.StringValue("😀é\n") || h.Txns[1].ID != history.StringValue("é") {
		t.Errorf("transactions %v", h.Txns)
	}
}
