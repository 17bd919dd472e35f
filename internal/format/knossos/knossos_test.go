package knossos

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/edn"
	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/golden"
	"github.com/isoscope/isoscope/internal/history"
)

const sample = "INFO  jepsen.util - 0\t:invoke\t:write\t1\n" +
	"INFO  jepsen.util - 1\t:invoke\t:read\tnil\n" +
	"INFO  jepsen.util - 0\t:ok\t:write\t1\n" +
	"INFO  jepsen.util - 1\t:ok\t:read\t1\n" +
	"INFO  jepsen.util - 2   :invoke :cas    [1 2]\n" +
	"INFO  jepsen.util - 3\t:invoke\t:cas\t[5 6]\n" +
	"INFO  jepsen.util - 3\t:fail\t:cas\t[5 6]\n" +
	"INFO  jepsen.util - 2   :info   :cas    [1 2]\n" +
	"INFO  jepsen.util - 4\t:invoke\t:write\t7\n"

func TestRead(t *testing.T) {
	if !Sniff([]byte(sample)) || Sniff([]byte(`{"id":1}`)) {
		t.Fatal("sniff")
	}
	h, err := Read(strings.NewReader(sample), "s.log")
	if err != nil {
		t.Fatal(err)
	}
	// The nemesis's lines are faults, on the log's clock, its lines.
	nemesis := "INFO  jepsen.util - :nemesis\t:info\t:start\tnil\nINFO  jepsen.util - :nemesis\t:info\t:start\t[:isolated {\"n1\" #{\"n2\"}}]\n"
	withNemesis, err := Read(strings.NewReader(nemesis+sample), "n.log")
	if err != nil {
		t.Fatal(err)
	}
	if f := withNemesis.Faults; len(f) != 1 || f[0].Kind != "start" || f[0].Begin != 1 || f[0].End != 2 || f[0].Info != `[:isolated {"n1" #{"n2"}}]` || len(withNemesis.Txns) != len(h.Txns) {
		t.Errorf("faults %+v, %d transactions; want the nemesis's start from line 1 to 2, and %d", f, len(withNemesis.Txns), len(h.Txns))
	}
	want := "t1: s0: @1-3: w x 1 | t2: s1: @2-4: r x 1 | t3: s2: unknown: @5-8: r x 1 w x 2 | t4: s4: unknown: @9-10: w x 7"
	if got := history.Notation(h); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if h.Header.Implies != "strict-serializable" || h.Header.ImpliedBy != "knossos" {
		t.Errorf("a register log asks for linearizability: header implies %q by %q", h.Header.Implies, h.Header.ImpliedBy)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"hello\n", "not a knossos log line"},
		{"INFO  jepsen.util - x\t:invoke\t:read\tnil\n", "not an integer (a client) or a name"},
		{"INFO  jepsen.util - 0\t:ok\t:read\tnil\n", "did not invoke"},
		{"INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:invoke\t:read\tnil\n", "invokes again"},
		{"INFO  jepsen.util - 0\t:invoke\t:cas\t[1]\nINFO  jepsen.util - 0\t:ok\t:cas\t[1]\n", "not [old new]"},
		{"INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:read\t\"x\n", "is not an EDN value"},
		{"INFO  jepsen.util - 0\t:invoke\t:lock\tnil\n", "unknown function :lock"},
		{"INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:fail\t:read\tnil\n", "no transactions: of the 2 client operations read, none took effect (1 reads"},
		{"INFO  jepsen.util - 0\t:begin\t:read\tnil\n", "unknown type"},
	} {
		_, err := Read(strings.NewReader(c.in), "b.log")
		var fe *format.Error
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || fe.Line == 0 {
			t.Errorf("%q: got %v, want a format error with %q", c.in, err, c.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(sample)
	f.Add("INFO  jepsen.util - 0\t:invoke\t:cas\t[1 2]\n")
	f.Add(ednSample)
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Read(strings.NewReader(s), "f")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) {
				t.Fatalf("not a format error: %v", err)
			}
			return
		}
		_ = history.NewIndex(h)
	})
}

// TestGolden reads a small log (concurrent writes and reads, a cas that
// failed, one of unknown outcome, a read that timed out) and compares the
// history with testdata/small.golden.
func TestGolden(t *testing.T) {
	h := formattest.ReadFile(t, filepath.Join("testdata", "small.log"), Read)
	golden.Check(t, "testdata/small.golden", formattest.Render(h))
}

// ednSample is a knossos history in EDN: a vector, a comment, a
// nemesis's operation, a map over two lines, a failed compare-and-set, a
// failed write, one of unknown outcome and one never completed.
const ednSample = `[{:process 0, :type :invoke, :f :write, :value 1}
 {:process 1, :type :invoke, :f :read, :value nil}
 {:process 0, :type :ok, :f :write, :value 1}
 ; a comment
 {:process :nemesis, :type :info, :f :start, :value "partition"}
 {:process 1, :type :ok, :f :read, :value 1}
 {:process 2,
  :type :invoke, :f :cas, :value [1 2]}
 {:process 3, :type :invoke, :f :cas, :value [5 6]}
 {:process 3, :type :fail, :f :cas, :value [5 6]}
 {:process 2, :type :info, :f :cas, :value [1 2]}
 {:process 4, :type :invoke, :f :write, :value 3}
 {:process 4, :type :fail, :f :write, :value 3}
 {:process 5, :type :invoke, :f :write, :value 7}]
`

func TestReadEDN(t *testing.T) {
	if !Sniff([]byte(ednSample)) || !Sniff([]byte("; knossos\n{:process 0, :type :invoke, :f :read, :value nil}\n")) {
		t.Fatal("sniff")
	}
	for _, other := range []string{
		`{:process 0, :type :invoke, :f :append, :key "4", :value "x 0 1 y"}`, // porcupine's key-value log
		`{:process 0, :type :invoke, :f :read, :key "4", :value nil}`,
		`{:index 2, :type :invoke, :process 0, :f :txn, :value [[:append 255 8]]}`, // Elle's
	} {
		if Sniff([]byte(other)) {
			t.Errorf("sniffed %s as a knossos history", other)
		}
	}
	h, err := Read(strings.NewReader(ednSample), "s.edn")
	if err != nil {
		t.Fatal(err)
	}
	// The nemesis's operation (line 5) is a fault, on the same clock.
	want := "t1: s0: @1-3: w x 1 | t2: s1: @2-5: r x 1 | t3: s2: unknown: @6-9: r x 1 w x 2 | t4: s4: aborted: @10-11: w x 3 | t5: s5: unknown: @12-13: w x 7"
	if got := history.Notation(h); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(h.Faults) != 1 || h.Faults[0].Kind != "start" || h.Faults[0].Begin != 4 || h.Faults[0].Line != 5 {
		t.Errorf("faults %+v, want the nemesis's :start at instant 4, line 5", h.Faults)
	}
	if h.Header.Implies != "strict-serializable" || h.Txns[2].Line != 7 {
		t.Errorf("header implies %q; transaction 3 on line %d, want 7", h.Header.Implies, h.Txns[2].Line)
	}
	for _, c := range []struct{ in, want string }{
		{"[{:process 0, :type :invoke, :f :read, :value nil}\n 3]", "not a map"},
		{"[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :read, :value [[:r 0 1] [:r 1 nil]]}]", "is a transaction, not a register's value"},
		{"[{:process 0, :type :invoke, :f :write, :value 1}\n {:type :ok, :f :write, :value 1}]", "operations with a :process (line 1) and without (line 2)"},
		{"[{:process 0, :type :invoke, :f :write, :value [1 2]}\n {:process 0, :type :ok, :f :write, :value 2}]", "is not [key value], as the :value on line 1 is"},
		{"[{:process 0, :type :invoke, :f :write, :value [1 2]}\n {:process 0, :type :ok, :f :write, :value [3 2]}]", "the key 3 of this completion is not 1"},
		{"[{:process 0, :type :invoke, :f :add, :value 1}]", "unknown function :add"},
		{"[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :invoke, :f :read, :value nil}]", "invokes again"},
		{"[{:process 0, :type :invoke, :f :read, :value nil}", "ends inside"},
	} {
		_, err := Read(strings.NewReader(c.in), "b.edn")
		var fe *format.Error
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || fe.Line == 0 {
			t.Errorf("%q: got %v, want a format error with %q", c.in, err, c.want)
		}
	}
}

// noLines is v with every line number cleared: where an inner value of a
// log's field is said to be does not matter, the field's line does.
func noLines(v edn.Value) edn.Value {
	v.Line = 0
	items := make([]edn.Value, len(v.Items))
	for i, it := range v.Items {
		items[i] = noLines(it)
	}
	if v.Items != nil {
		v.Items = items
	}
	return v
}

// TestTextValueFastPaths holds textValue's fast paths (integers, [a b]
// pairs, plain keywords) to the EDN decoder on the same text.
func TestTextValueFastPaths(t *testing.T) {
	for _, s := range []string{"0", "-3", "42", "[1 3]", "[0 0]", ":timed-out", ":fail", ":a.b", ":x?", ":ok!", ":a/b", ":", "::a", ":a b", "[1 2 3]", "nil", `"6"`, ":é"} {
		got, gerr := textValue(s, 7)
		want, werr := edn.NewDecoder(strings.NewReader(s), "").Decode()
		if (gerr == nil) != (werr == nil) || gerr == nil && !reflect.DeepEqual(noLines(got), noLines(want)) {
			t.Errorf("%q: fast path %#v, %v; decoder %#v, %v", s, got, gerr, want, werr)
		}
	}
}
