package jepsen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
)

// corpora is the shared corpora directory, relative to this package.
const corpora = formattest.Corpora

func readFile(t *testing.T, path string) *history.History {
	t.Helper()
	return formattest.ReadFile(t, path, Read)
}

// TestGolden reads the fixtures and compares their native JSON Lines.
func TestGolden(t *testing.T) {
	for _, c := range []struct{ in, golden string }{
		// List-append EDN with :time: a comment and a blank line, a
		// nemesis operation, a failed and an indeterminate transaction
		// (their reads dropped), a discarded micro-operation (#_), a
		// string element, an invocation never completed, an :info
		// read-only transaction (dropped).
		{"small.edn", "small.jsonl"},
		// rw-register JSON without :time or :index: positions stand in
		// for both; a completion without an invocation (no instants); a
		// \u escape.
		{"rw.json", "rw.jsonl"},
	} {
		t.Run(c.in, func(t *testing.T) {
			h := readFile(t, filepath.Join("testdata", c.in))
			golden.Check(t, "testdata/"+c.golden, formattest.JSONL(t, h))
		})
	}
}

// TestCorpus reads every Jepsen history of LABELS.tsv (the rw-register
// ones are labelled unknown, but must read all the same).
func TestCorpus(t *testing.T) {
	f, err := os.Open(filepath.Join(corpora, "LABELS.tsv"))
	if os.IsNotExist(err) {
		t.Skipf("no corpora at %s", corpora)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 || !strings.HasPrefix(cols[1], "jepsen-list") && !strings.HasPrefix(cols[1], "jepsen-rw") {
			continue
		}
		n++
		p := filepath.Join(corpora, cols[0])
		data, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if !Sniff(data) {
			t.Errorf("%s: Sniff says no", p)
		}
		h, err := Read(bytes.NewReader(data), p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		st := h.Stats()
		if st.Transactions == 0 {
			t.Errorf("%s: no transactions", p)
		}
		if strings.Contains(cols[1], "list-append") != strings.Contains(h.Header.Source, "list-append") {
			t.Errorf("%s (%s): source %q", p, cols[1], h.Header.Source)
		}
		t.Logf("%s: %d transactions (%d committed), %d sessions, %d operations", p, st.Transactions, st.Committed, st.Sessions, st.Operations)
	}
	if n < 8 {
		t.Errorf("%d Jepsen histories in LABELS.tsv, want 8 at least", n)
	}
}

// TestSameAsJSON: the EDN and JSON forms of the paper example are one
// history.
func TestSameAsJSON(t *testing.T) {
	dir := filepath.Join(corpora, "elle-cli", "histories", "elle")
	if _, err := os.Stat(dir); err != nil {
		// Outside the project's machines; the conformance test fails
		// instead, so CI, which has shared/ beside the repository, runs this.
		t.Skipf("no corpora at %s: %v", dir, err)
	}
	for _, name := range []string{"paper-example", "rw-register"} {
		a := readFile(t, filepath.Join(dir, name+".edn"))
		b := readFile(t, filepath.Join(dir, name+".json"))
		if x, y := history.Notation(a), history.Notation(b); x != y {
			t.Errorf("%s:\n edn  %s\n json %s", name, x, y)
		}
	}
}

func TestBadInput(t *testing.T) {
	inv := `{:type :invoke, :process 0, :f :txn, :value [[:r 1 nil]]}` + "\n"
	for _, c := range []struct{ in, field, want string }{
		{"{:type :ok", "", "ends inside the map opened on line 1"},
		{inv + "[:type :ok]\n", "", "an operation is a vector, not a map"},
		{inv + "{:process 0, :value []}\n", "type", "missing"},
		{"{:type :begin, :process 0, :value []}\n", "type", ":begin is none of"},
		{"{:type :ok, :process 1.5, :value []}\n", "process", "1.5 is not an integer"},
		{"{:type :ok, :process 0, :f :read, :value 1}\n", "value", "1 (:f :read) is not a transaction, a vector of micro-operations (a register operation: --format knossos"},
		{"{:type :ok, :process 0, :time :now, :value []}\n", "time", "is not an integer"},
		{inv + inv, "", "process 0 invokes again"},
		{inv + `{:type :ok, :process 0, :value [[:r 1 nil]]}`, "f", `invoked "txn" but completes ""`},
		{`{:type :ok, :process 0, :value 5}`, "value", "5 is not a transaction"},
		{`{:type :ok, :process 0}`, "value", "missing"},
		{`{:type :ok, :process 0, :value [[:r 1]]}`, "value[0]", "is not a micro-operation"},
		{`{:type :ok, :process 0, :value [[:r 1 nil] [:cas 1 [1 2]]]}`, "value[1]", "unknown micro-operation :cas"},
		{`{:type :ok, :process 0, :value [[:append nil 2]]}`, "value[0]", "the key is nil"},
		{`{:type :ok, :process 0, :value [[:w 1 nil]]}`, "value[0]", "writes nil"},
		{`{:type :ok, :process 0, :value [[:r 1 [1 nil]]]}`, "value[0]", "element 1 of the list read is nil"},
		{"{:type :ok, :process 0, :value [[:w 1 [:a 1]]]}\n{:type :ok, :process 1, :value [[:r 1 \"[:a 1]\"]]}\n", "value[0]",
			`the value "[:a 1]" is a string, but the value [:a 1] (line 1) is a vector`},
		{"{:type :ok, :process 0, :value [[:w [3] 1]]}\n{:type :ok, :process 1, :value [[:r \"[3]\" 1]]}\n", "value[0]",
			`the key "[3]" is a string, but the key [3] (line 1) is a vector`},
		{"{:type :invoke, :process 0, :value [1 [[:w 1 1]]]}\n{:type :ok, :process 0, :value [[:w 1 1]]}\n", "value",
			"is not [key transaction], as the :value on line 1 is (jepsen.independent)"},
		{"{:type :ok, :process 0, :value [[:w 1 1]]}\n{:type :ok, :process 0, :value [1 [[:w 1 1]]]}\n", "value",
			"is [key transaction] (jepsen.independent), but the :value on line 1 is a transaction"},
		{"{:type :invoke, :process 0, :value [1 [[:w 1 1]]]}\n{:type :ok, :process 0, :value [2 [[:w 1 1]]]}\n", "value",
			"the key 2 of this completion is not 1, its invocation's (line 1)"},
		{"{:type :info, :process :nemesis, :f :start}\n{:type :info, :process 0, :f :read, :value [[:r 1 nil]]}\n", "",
			"no transactions: of the 1 client operations read, none is a transaction that took effect"},
		{"{:type :ok, :process [0], :value []}\n", "process", "is not an integer (a client) or a name (the nemesis)"},
		{"{:type :ok, :process 0, :time 1, :value []}\n{:type :ok, :process 1, :value []}\n", "", "has no :time, but the one on line 1 has"},
		{"{:type :ok, :value []}\n{:type :ok, :process 1, :value []}\n", "", "has a :process, but the one on line 1 has none"},
		{"[{:type :ok, :process 0, :value []}\n", "", "ends inside the top-level vector"},
		{"[{:type :ok, :process 0, :value []}] {}\n", "", "more input after the top-level vector"},
		{`{:type :ok, :process 0, :value [[:r "a\q" nil]]}`, "", `unknown escape \q`},
		{`{:type :ok, :process 0, :value [[:r 1 nil]]]`, "", `"]" closes the map`},
		{`{:type :ok :process}`, "", "a key without a value"},
		{`{"type":"ok","process":0,"value":[["r","x",1e400x]]}`, "", "is not a number"},
		{strings.Repeat("[", 2000), "", "nested more than"},
		// Keywords and strings are both read as strings: :x and "x" would
		// be one key, or one value.
		{"{:type :ok, :process 0, :value [[:append :x 1]]}\n{:type :ok, :process 1, :value [[:r \"x\" [1]]]}\n", "value[0]",
			`the key "x" is a string, but the key :x (line 1) is a keyword: isoscope reads both as the string "x" and cannot tell them apart`},
		{"{:type :ok, :process 0, :value [[:w 1 \"a\"] [:r 2 nil]]}\n{:type :ok, :process 1, :value [[:r 1 :a]]}\n", "value[0]",
			`the value :a is a keyword, but the value "a" (line 1) is a string`},
		{"{:type :ok, :process 0, :value [[:append 1 :e]]}\n{:type :ok, :process 1, :value [[:r 1 [\"e\"]]]}\n", "value[0]",
			`the value "e" is a string, but the value :e (line 1) is a keyword`},
		{`{"type":"ok","process":0,"value":[["w","k","\ud800"],["w","k","\udbff"]]}`, "", `\ud800 in a string is a lone UTF-16 surrogate`},
	} {
		_, err := Read(strings.NewReader(c.in), "b.edn")
		var fe *format.Error
		if !errors.As(err, &fe) || fe.Line == 0 || fe.File != "b.edn" || fe.Field != c.field || !strings.Contains(fe.Msg, c.want) {
			t.Errorf("%q: got %v (field %q), want a format error on a line, field %q, with %q", c.in, err, fieldOf(err), c.field, c.want)
		}
	}
}

func fieldOf(err error) string {
	var fe *format.Error
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// TestErrorLine: the line named is the line of the culprit, in a vector
// spread over lines too.
func TestErrorLine(t *testing.T) {
	in := "[{:type :invoke, :process 0, :value [[:r 1 nil]]}\n\n {:type :ok, :process 0,\n  :value [[:r 1 nil]\n          [:r nil 1]]}]"
	_, err := Read(strings.NewReader(in), "v.edn")
	var fe *format.Error
	if !errors.As(err, &fe) || fe.Line != 5 || fe.Field != "value[1]" {
		t.Errorf("got %v, want line 5, value[1]", err)
	}
}

// TestCompletionsOnly: a history of completions alone reads, without
// instants.
func TestCompletionsOnly(t *testing.T) {
	in := "{:type :ok, :value [[:append :x 1]]}\n{:type :ok, :value [[:r :x [1]]]}\n{:type :fail, :value [[:append :x 2] [:r :x nil]]}\n"
	h, err := Read(strings.NewReader(in), "c.edn")
	if err != nil {
		t.Fatal(err)
	}
	want := "t1: s0: a x 1 | t2: s0: r x [1] | t3: s0: aborted: a x 2"
	if got := history.Notation(h); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestSniff(t *testing.T) {
	formattest.Sniff(t, Sniff, map[string]bool{
		"{:index 0, :type :invoke, :process 0, :f :txn, :value [[:r 1 nil]]}": true,
		"; comment\n\n;; another\n{:type :ok :value []}":                      true,
		`[{"index":0,"process":1,"type":"invoke","value":[]}`:                 true,
		`{"type": "info", "value": null}`:                                     true,
		"[\n{:type :fail, :value []}":                                         true,
		`{"format":"isoscope-history","version":1}`:                           false,
		`{"id":1,"session":0,"ops":[]}`:                                       false,
		"{:type :begin}":                                                      false,
		"{:type :okay}":                                                       false,
		"INFO  jepsen.util - 0\t:invoke\t:read\tnil":                          false,
		"; only a comment":                                                    false,
		"":                                                                    false,
	})
}

// summary renders a history without its ids, for round trips: each
// transaction's session, status, instants and operations, sorted.
func summary(h *history.History, times bool) string {
	var out []string
	for i := range h.Txns {
		t := h.Txns[i]
		t.ID = history.IntValue(0)
		if !times {
			t.HasTime = false
		}
		g := history.New()
		g.Keys, g.Sessions, g.Txns = h.Keys, h.Sessions, []history.Txn{t}
		out = append(out, history.Notation(g))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

func roundTrip(t *testing.T, h *history.History) *history.History {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		t.Fatal(err)
	}
	if !Sniff(buf.Bytes()) {
		t.Errorf("Sniff rejects what Write writes:\n%s", buf.String())
	}
	again, err := Read(&buf, "again")
	if err != nil {
		t.Fatalf("reading what Write wrote: %v", err)
	}
	return again
}

func TestRoundTrip(t *testing.T) {
	// With :time, every instant survives; ids become the invocations'
	// :index.
	h := readFile(t, filepath.Join("testdata", "small.edn"))
	if a, b := summary(h, true), summary(roundTrip(t, h), true); a != b {
		t.Errorf("round trip:\n%s\n---\n%s", a, b)
	}
	// Without instants, completions alone, in file order.
	for _, src := range []string{
		"t1: s7: r x 1 w y 2 | t2: s8: aborted: w x 9 | t3: s7: unknown: w y 3 | t4: s9: r y _",
		"t1: s0: a 5 1 a 6 1 | t2: s1: r 5 [1] r 6 [] | t3: s2: a 6 2",
	} {
		h := history.MustParse(src)
		if a, b := summary(h, false), summary(roundTrip(t, h), false); a != b {
			t.Errorf("round trip:\n%s\n---\n%s", a, b)
		}
	}
	// The paper example from the corpora, written and read back.
	p := filepath.Join(corpora, "elle", "histories", "huge-scc.edn")
	if _, err := os.Stat(p); err == nil {
		h := readFile(t, p)
		if a, b := summary(h, true), summary(roundTrip(t, h), true); a != b {
			t.Errorf("huge-scc round trip differs")
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"t1: s1: d x", "appends, writes and reads only"},
		{"t1: s1: scan 1 5 []", "appends, writes and reads only"},
		{"t1: s1: @1-5: w x 1 | t2: s1: @5-9: w x 2", "overlap in time"},
		{"t1: s1: a x 1 | t2: s2: r y 5", "transaction 2 has a register operation (r y 5) in a history of appends and list reads"},
		{"t1: s1: w x _", "no writes of nil"},
		{"t1: s1: a x 1 | t2: s2: r x _", "transaction 2 reads x as null in a history of appends and list reads"},
		{"t1: s1: w x 1 | t2: s2:", "transaction 2 commits no operations"},
		{"init: x=3 | t1: s1: a y 1", "key x has initial value 3; Jepsen's list-append histories start with every list empty"},
		{"t1: s1: @1-2: w x 1 | t2: s2: aborted: w x 2", "transaction 2 (aborted) has no instants while every committed one has"},
		{"t1: s1: ts=1-2: w x 1", "transaction 1 carries the database's timestamps"},
	} {
		err := Write(&bytes.Buffer{}, history.MustParse(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
	h := history.MustParse("t1: s1: w x 1 | t2: s1: r x 1")
	h.Header.VersionOrder = map[history.KeyID][]history.TxnID{0: {0}}
	if err := Write(&bytes.Buffer{}, h); err == nil || !strings.Contains(err.Error(), "white-box version order (of key x") {
		t.Errorf("version order: got %v", err)
	}
}

// TestWriteUntimed: without instants Write writes completions alone, with
// no :time, which read back without instants; a committed transaction
// without instants drops the others' too (strict serializability cannot
// be checked either way).
func TestWriteUntimed(t *testing.T) {
	for _, src := range []string{
		"t1: s0: w x 1 | t2: s1: r x 1 | t3: s0: aborted: w x 2 | t4: s2: unknown: r x 1 w x 3",
		"t1: s0: @1-2: w x 1 | t2: s1: r x 1 | t3: s0: @5-6: aborted: w x 2",
	} {
		h := history.MustParse(src)
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), ":invoke") || strings.Contains(buf.String(), ":time") {
			t.Errorf("%s: wrote invocations or :time:\n%s", src, buf.String())
		}
		again, err := Read(&buf, "again")
		if err != nil {
			t.Fatal(err)
		}
		for i := range again.Txns {
			if again.Txns[i].HasTime {
				t.Errorf("%s: transaction %s reads back with instants", src, again.TxnName(history.TxnID(i)))
			}
		}
		if a, b := summary(h, false), summary(again, false); a != b {
			t.Errorf("round trip:\n%s\n---\n%s", a, b)
		}
	}
}

// TestWriteInitial: a non-empty initial state is written as a first
// completion marked :isoscope/initial, before everything in time when
// there is :time, and reads back as the initial state, not a transaction.
func TestWriteInitial(t *testing.T) {
	for _, c := range []struct{ src, first string }{
		{"init: x=0 y=s | t1: s0: r x 0 w x 1 | t2: s1: r y s",
			`{:index 0, :type :ok, :process 2, :f :txn, :value [[:w "x" 0] [:w "y" "s"]], :isoscope/initial true}`},
		{"init: 5=7 | t1: s3: @10-20: r 5 7 | t2: s4: @12-30: w 5 8",
			`{:index 0, :time 9, :type :ok, :process 5, :f :txn, :value [[:w 5 7]], :isoscope/initial true}`},
	} {
		h := history.MustParse(c.src)
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(buf.String(), "\n"); first != c.first {
			t.Errorf("%s: first line\n%s\nwant\n%s", c.src, first, c.first)
		}
		again, err := Read(&buf, "again")
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Txns) != len(h.Txns) || len(again.Sessions) != len(h.Sessions) {
			t.Errorf("%s: read back %s", c.src, history.Notation(again))
		}
		for k, v := range h.Header.Initial.Values {
			if k2, ok := again.LookupKey(h.Keys[k]); !ok || again.InitialValue(k2) != v {
				t.Errorf("%s: initial value of %s is %s, want %s", c.src, h.KeyName(k), again.InitialValue(k2), v)
			}
		}
	}
}

// TestReadMarks: the marks Write writes are read strictly.
func TestReadMarks(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{:type :ok, :process 0, :value [[:w :x 1]]}\n{:type :ok, :process 1, :value [[:w :y 1]], :isoscope/initial true}", "must be the first operation"},
		{"{:type :invoke, :process 0, :value [[:w :x 1]], :isoscope/initial true}", "a completion (:ok)"},
		{"{:type :ok, :process 0, :value [[:w :x 1] [:r :x 1]], :isoscope/initial true}", "writes (:w) each key once"},
		{"{:type :ok, :process 0, :value [[:w :x 1]], :isoscope/initial 1}", "want true"},
		{"{:type :ok, :process 0, :value [[:r :x 1]], :isoscope/reads true}", "marks an :info completion"},
	} {
		_, err := Read(strings.NewReader(c.in), "m.edn")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
	h, err := Read(strings.NewReader("{:type :invoke, :process 0, :value [[:r :x nil] [:w :x 2]]}\n{:type :info, :process 0, :value [[:r :x 1] [:w :x 2]], :isoscope/reads true}\n"), "m.edn")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := history.Notation(h), "t1: s0: unknown: @1-2: r x 1 w x 2"; got != want {
		t.Errorf("marked :info reads: got %s, want %s", got, want)
	}
}

// TestWriteShape pins the lines Write writes.
func TestWriteShape(t *testing.T) {
	h := history.MustParse("t1: s3: @10-20: a 1 5 r 2 [7,8] | t2: s4: aborted: @12-15: a k q r k [] | t3: s3: unknown: @30-40: a 1 6 r 2 [7]")
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		t.Fatal(err)
	}
	want := `{:index 0, :time 10, :type :invoke, :process 3, :f :txn, :value [[:append 1 5] [:r 2 nil]]}
{:index 1, :time 12, :type :invoke, :process 4, :f :txn, :value [[:append "k" "q"] [:r "k" nil]]}
{:index 2, :time 15, :type :fail, :process 4, :f :txn, :value [[:append "k" "q"] [:r "k" nil]]}
{:index 3, :time 20, :type :ok, :process 3, :f :txn, :value [[:append 1 5] [:r 2 [7 8]]]}
{:index 4, :time 30, :type :invoke, :process 3, :f :txn, :value [[:append 1 6] [:r 2 nil]]}
{:index 5, :time 40, :type :info, :process 3, :f :txn, :value [[:append 1 6] [:r 2 [7]]], :isoscope/reads true}
`
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzRead reads arbitrary text: a history or a *format.Error, never a
// panic; what reads back writes and reads again to the same operations.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"small.edn", "rw.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add(`{:type :ok, :value [[:r :x #{1 [2]}] #inst "2020" \a \newline ##Inf 1/2 -3N]}`)
	f.Add(`[{"type":"ok","process":0,"value":[["r","x","\ud83d\ude00"]]}]`)
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Read(strings.NewReader(s), "fuzz")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *format.Error", err)
			}
			return
		}
		_ = history.NewIndex(h)
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			return // e.g. instants that overlap within a process
		}
		again, err := Read(&buf, "again")
		if err != nil {
			t.Fatalf("reading what Write wrote: %v\n%s", err, buf.String())
		}
		timed := len(h.Txns) > 0
		for i := range h.Txns {
			timed = timed && h.Txns[i].HasTime
		}
		if a, b := summary(h, timed), summary(again, timed); a != b {
			t.Fatalf("round trip:\n%s\n---\n%s", a, b)
		}
	})
}

func Example() {
	h, err := Read(strings.NewReader(`{:type :invoke, :process 0, :value [[:append :x 1] [:r :y nil]]}
{:type :ok, :process 0, :value [[:append :x 1] [:r :y [2]]]}`), "example.edn")
	if err != nil {
		panic(err)
	}
	fmt.Println(history.Notation(h))
	// Output: t1: s0: @1-2: a x 1 r y [2]
}

// TestWordsByRole: a text may be a keyword key and a string value (or the
// other way round): keys and values are not confused.
func TestWordsByRole(t *testing.T) {
	h, err := Read(strings.NewReader(`{:type :ok, :process 0, :value [[:w :x "x"] [:w "y" :y] [:r :x "x"]]}`), "w.edn")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := history.Notation(h), `t1: s0: w x x w y y r x x`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
