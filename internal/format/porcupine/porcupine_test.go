package porcupine

import (
	"errors"
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

// TestGolden reads testdata/small.txt: appends seen by later gets
// (read-modify-writes), a put then an append, an :info append that a get
// saw, a get of a key never written, a failed append, an append no get saw
// (a blind write) and an invocation never completed (a get: dropped).
func TestGolden(t *testing.T) {
	h := formattest.ReadFile(t, filepath.Join("testdata", "small.txt"), Read)
	golden.Check(t, "testdata/small.jsonl", formattest.JSONL(t, h))
	if h.Header.Implies != "strict-serializable" || h.Header.ImpliedBy != "porcupine" {
		t.Errorf("a key-value log asks for linearizability: header implies %q by %q", h.Header.Implies, h.Header.ImpliedBy)
	}
}

// TestCorpus reads the six key-value logs of porcupine's test data.
func TestCorpus(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpora, "porcupine", "test_data", "kv", "*.txt"))
	if len(files) == 0 {
		t.Skipf("no porcupine key-value logs under %s", corpora)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !Sniff(data) {
			t.Errorf("%s: Sniff says no", p)
		}
		h := formattest.ReadFile(t, p, Read)
		blind := 0
		for i := range h.Txns {
			if ops := h.Txns[i].Ops; len(ops) == 1 && ops[0].Kind == history.Write {
				blind++
			}
		}
		st := h.Stats()
		t.Logf("%s: %d transactions, %d sessions, %d blind writes (puts and appends no get saw)", p, st.Transactions, st.Sessions, blind)
	}
}

func TestSplit(t *testing.T) {
	set := func(s ...string) map[string]bool {
		m := map[string]bool{}
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	puts, appends := set("P"), set("ab", "c", "abc")
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"", []int{0}},
		{"Pc", []int{0, 1, 2}},
		{"abcc", []int{0, 3, 4}}, // "abc" and "c", or "ab", "c", "c": either splits
		{"cP", nil},              // a put only first
		{"abx", nil},
	} {
		got := split(c.in, puts, appends, []int{1, 2, 3})
		if c.in == "abcc" && len(got) == 4 {
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("split(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestDuplicateElements: an element appended twice (a later run of the
// workload repeats it) goes to the append that can have made each state.
func TestDuplicateElements(t *testing.T) {
	log := `{:process 0, :type :invoke, :f :append, :key "k", :value "e"}
{:process 0, :type :ok, :f :append, :key "k", :value "e"}
{:process 1, :type :invoke, :f :get, :key "k", :value nil}
{:process 1, :type :ok, :f :get, :key "k", :value "e"}
{:process 2, :type :invoke, :f :append, :key "k", :value "f"}
{:process 2, :type :ok, :f :append, :key "k", :value "f"}
{:process 0, :type :invoke, :f :append, :key "k", :value "e"}
{:process 0, :type :ok, :f :append, :key "k", :value "e"}
{:process 1, :type :invoke, :f :get, :key "k", :value nil}
{:process 1, :type :ok, :f :get, :key "k", :value "efe"}
`
	h, err := Read(strings.NewReader(log), "d.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := "init: k=\"\" | t1: s0: @1-2: r k \"\" w k e | t2: s1: @3-4: r k e | t3: s2: @5-6: r k e w k ef | t4: s0: @7-8: r k ef w k efe | t5: s1: @9-10: r k efe"
	if got := history.Notation(h); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestBadInput(t *testing.T) {
	inv := `{:process 0, :type :invoke, :f :get, :key "a", :value nil}` + "\n"
	for _, c := range []struct{ in, field, want string }{
		{":x\n", "", "an event is a keyword, not a map"},
		{`{:process 0, :type :begin, :f :get, :key "a", :value nil}`, "type", "none of"},
		{`{:process 0, :type :invoke, :f :cas, :key "a", :value nil}`, "f", "none of"},
		{`{:process x, :type :invoke, :f :get, :key "a", :value nil}`, "process", "not an integer"},
		{`{:process 0, :type :invoke, :f :get, :key 1, :value nil}`, "key", "not a string"},
		{`{:process 0, :type :invoke, :f :put, :key "a", :value 5}`, "value", "neither a string nor nil"},
		{`{:process 0, :type :invoke, :f :put, :key "a", :value nil}`, "value", "a put of nil"},
		{inv + inv, "", "invokes again"},
		{`{:process 0, :type :ok, :f :get, :key "a", :value ""}`, "", "did not invoke"},
		{inv + `{:process 0, :type :ok, :f :get, :key "b", :value ""}`, "", `invoked :get of "a" but completes :get of "b"`},
		{inv + `{:process 0, :type :ok, :f :get, :key "a", :value nil}`, "value", "returned nil"},
		{`{:process 0, :type :invoke, :f :get, :key "a"`, "", "ends inside the map"},
	} {
		_, err := Read(strings.NewReader(c.in), "b.txt")
		var fe *format.Error
		if !errors.As(err, &fe) || fe.Line == 0 || fe.Field != c.field || !strings.Contains(fe.Msg, c.want) {
			t.Errorf("%q: got %v, want a format error on a line, field %q, with %q", c.in, err, c.field, c.want)
		}
	}
}

func TestSniff(t *testing.T) {
	formattest.Sniff(t, Sniff, map[string]bool{
		"{:process 0, :type :invoke, :f :append, :key \"0\", :value \"x 0 0 y\"}\n":                true,
		"\n{:process 12, :type :ok, :f :get, :key \"\", :value \"\"}":                              true,
		"{:type :invoke, :f :txn, :value [[:append 11 1]], :process 10, :time 14532933, :index 0}": false,
		"INFO  jepsen.util - 0\t:invoke\t:read\tnil":                                               false,
		"": false,
	})
}

// FuzzRead reads arbitrary text: a history or a *format.Error, never a
// panic.
func FuzzRead(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "small.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add(`{:process 0, :type :invoke, :f :append, :key "a", :value ""}` + "\n" + `{:process 1, :type :ok, :f :get, :key "a", :value "…"}`)
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
	})
}
