package registry

import (
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/history"
)

// TestJepsenShapes: every shape of Jepsen history is detected as the
// format whose reader reads all of it, and read with every operation kept
// or refused on its line; none is read as an empty history. Elle's
// long-fork history (operations under :f :read, no :process) was once
// detected as a knossos register log and every operation dropped.
func TestJepsenShapes(t *testing.T) {
	for _, c := range []struct {
		name, in, format string
		txns, faults     int
		err              string
	}{
		{"long-fork", `[{:type :invoke, :f :read, :value [[:r 0 nil] [:r 1 nil] [:r 2 nil]]},
{:type :ok, :f :read, :value [[:r 0 1] [:r 1 1] [:r 2 nil]]},
{:type :invoke, :f :read, :value [[:r 2 nil] [:r 0 nil] [:r 1 nil]]},
{:type :ok, :f :read, :value [[:r 2 1]   [:r 0 1]   [:r 1 nil]]}]`, "jepsen", 2, 0, ""},
		{"nemesis-first register", "{:type :info, :process :nemesis, :f :start}\n{:type :info, :process :nemesis, :f :start}\n" +
			"{:type :invoke, :process 0, :f :write, :value 1}\n{:type :ok, :process 0, :f :write, :value 1}\n", "knossos", 1, 1, ""},
		{"nemesis-first transactions", "{:type :info, :process :nemesis, :f :kill}\n" +
			"{:type :invoke, :process 0, :f :txn, :value [[:w 1 1]]}\n{:type :ok, :process 0, :f :txn, :value [[:w 1 1]]}\n", "jepsen", 1, 1, ""},
		{"knossos JSON", `[{"process":0,"type":"invoke","f":"write","value":1},{"process":0,"type":"ok","f":"write","value":1}]`, "knossos", 1, 0, ""},
		{"independent registers", "{:type :invoke, :process 0, :f :cas, :value [3 [0 4]]}\n{:type :ok, :process 0, :f :cas, :value [3 [0 4]]}\n", "knossos", 1, 0, ""},
		{"independent transactions", "{:type :invoke, :process 0, :f :txn, :value [3 [[:w 1 1]]]}\n{:type :ok, :process 0, :f :txn, :value [3 [[:w 1 1]]]}\n", "jepsen", 1, 0, ""},
		{"nemesis only", "{:type :info, :process :nemesis, :f :start}\n{:type :info, :process :nemesis, :f :stop}\n", "jepsen", 0, 0,
			"no transactions: of the 0 client operations read"},
		{"bank", "{:type :invoke, :f :read, :process 0, :value nil}\n{:type :ok, :f :read, :process 0, :value {0 10 1 10}}\n", "knossos", 0, 0,
			"x.edn:2: value: {0 10 1 10} is a map"},
		{"set", "{:type :invoke, :f :add, :process 0, :value 1}\n{:type :ok, :f :add, :process 0, :value 1}\n", "jepsen", 0, 0,
			"x.edn:1: value: 1 (:f :add) is not a transaction"},
		{"reads of unknown outcome only", "{:type :invoke, :f :read, :process 0, :value nil}\n{:type :info, :f :read, :process 0, :value nil}\n", "knossos", 0, 0,
			"no transactions: of the 2 client operations read, none took effect"},
	} {
		if got := detect([]byte(c.in)); got != c.format {
			t.Errorf("%s: detected as %q, want %q", c.name, got, c.format)
			continue
		}
		o, err := Read(strings.NewReader(c.in), "x.edn", "", Options{})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want an error with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if h := o.History; len(h.Txns) != c.txns || len(h.Faults) != c.faults {
			t.Errorf("%s: %d transactions and %d faults (%s), want %d and %d", c.name, len(h.Txns), len(h.Faults), history.Notation(h), c.txns, c.faults)
		}
	}
}

// TestNoTransactionsRefused: a foreign format's input from which its
// reader makes no transaction is refused, not checked as an empty
// history that holds; a native history may be empty.
func TestNoTransactionsRefused(t *testing.T) {
	for _, c := range []struct{ format, in string }{
		{"awdit", "-----\n=====\n"},
		{"plume", "\n"},
		{"timekiller", "[]"},
		{"jepsen", "{:type :info, :process :nemesis, :f :start}\n"},
	} {
		_, err := Read(strings.NewReader(c.in), "x", c.format, Options{})
		if err == nil || !strings.Contains(err.Error(), "no transactions") {
			t.Errorf("%s %q: got %v, want no transactions", c.format, c.in, err)
		}
	}
	o, err := Read(strings.NewReader(`{"format":"isoscope-history","version":1}`+"\n"), "x", "isoscope", Options{})
	if err != nil || len(o.History.Txns) != 0 {
		t.Errorf("an empty native history: %v", err)
	}
}

// TestDetectByValueRead: a history whose first client operation is the
// invocation of a read without a value is told by the first value read:
// a transaction's (Elle's, with :f :read) or a register's.
func TestDetectByValueRead(t *testing.T) {
	for in, want := range map[string]string{
		"{:type :invoke, :f :read, :process 0, :value nil}\n{:type :ok, :f :read, :process 0, :value [[:r 1 2]]}\n": "jepsen",
		"{:type :invoke, :f :read, :process 0, :value nil}\n{:type :ok, :f :read, :process 0, :value 2}\n":          "knossos",
	} {
		if got := detect([]byte(in)); got != want {
			t.Errorf("%q: detected as %q, want %q", in, got, want)
		}
		if _, err := Read(strings.NewReader(in), "x.edn", "", Options{}); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}
