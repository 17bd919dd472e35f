package jepsen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// longFork is elle-cli's histories/jepsen/long-fork.edn (EPL-2.0): two
// read-only transactions under :f :read, without :process.
const longFork = `[{:type :invoke, :f :read, :value [[:r 0 nil] [:r 1 nil] [:r 2 nil]]},
{:type :ok, :f :read, :value [[:r 0 1] [:r 1 1] [:r 2 nil]]},
{:type :invoke, :f :read, :value [[:r 2 nil] [:r 0 nil] [:r 1 nil]]},
{:type :ok, :f :read, :value [[:r 2 1]   [:r 0 1]   [:r 1 nil]]}]`

// TestTransactionsUnderAnyF: Elle ignores :f, and so does the reader: the
// long-fork history is two read-only transactions, each read kept.
func TestTransactionsUnderAnyF(t *testing.T) {
	h, err := Read(strings.NewReader(longFork), "long-fork.edn")
	if err != nil {
		t.Fatal(err)
	}
	want := "t1: s0: @1-2: r 0 1 r 1 1 r 2 _ | t2: s0: @3-4: r 2 1 r 0 1 r 1 _"
	if got := history.Notation(h); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	w := "{:type :invoke, :process 0, :f :write, :value [[:w :x 1]]}\n{:type :ok, :process 0, :f :write, :value [[:w :x 1]]}\n" +
		"{:type :invoke, :process 1, :f :read, :value [[:r :x nil]]}\n{:type :ok, :process 1, :f :read, :value [[:r :x 1]]}\n"
	h, err = Read(strings.NewReader(w), "rw.edn")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := history.Notation(h), "t1: s0: @1-2: w x 1 | t2: s1: @3-4: r x 1"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestNemesisFirst: the nemesis's operations, first or anywhere, are the
// history's faults, on its clock (here :time).
func TestNemesisFirst(t *testing.T) {
	in := `{:type :info, :process :nemesis, :f :start-partition, :time 5}
{:type :info, :process :nemesis, :f :start-partition, :time 7, :value [:isolated {"n1" #{"n2"}}]}
{:type :invoke, :process 0, :f :txn, :time 10, :value [[:append 1 1]]}
{:type :ok, :process 0, :f :txn, :time 20, :value [[:append 1 1]]}
{:type :info, :process "nemesis", :f :kill, :time 25}
{:type :invoke, :process 1, :f :txn, :time 30, :value [[:r 1 nil]]}
{:type :ok, :process 1, :f :txn, :time 40, :value [[:r 1 [1]]]}
`
	if !Sniff([]byte(in)) {
		t.Fatal("not sniffed")
	}
	h, err := Read(strings.NewReader(in), "n.edn")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := history.Notation(h), "t1: s0: @10-20: a 1 1 | t2: s1: @30-40: r 1 [1]"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	want := []history.Fault{
		{Kind: "start-partition", Begin: 5, End: 7, Info: `[:isolated {"n1" #{"n2"}}]`, Line: 1},
		{Kind: "kill", Begin: 25, End: 40, Line: 5},
	}
	if fmt.Sprint(h.Faults) != fmt.Sprint(want) {
		t.Errorf("faults %+v\nwant   %+v", h.Faults, want)
	}
}

// TestAnyValue: keys, values and elements are any EDN values, equal as
// EDN values are: vector and keyword keys, string and integer values that
// differ ("1" is not 1).
func TestAnyValue(t *testing.T) {
	in := `{:type :ok, :process 0, :value [[:append [:anti 1] :e] [:append [:anti 2] "1"] [:append [:anti 2] 1]]}
{:type :ok, :process 1, :value [[:r [:anti 1] [:e]] [:r [:anti 2] ["1" 1]]]}
`
	h, err := Read(strings.NewReader(in), "v.edn")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := history.Notation(h), `t1: s0: a "[:anti 1]" e a "[:anti 2]" "1" a "[:anti 2]" 1 | t2: s1: r "[:anti 1]" [e] r "[:anti 2]" ["1",1]`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	in = `{:type :ok, :process 0, :value [[:w [:k 1] 1]]}
{:type :ok, :process 1, :value [[:r [:k 1] "1"]]}
`
	if h, err = Read(strings.NewReader(in), "r.edn"); err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(context.Background(), h, level.Get(level.ReadCommitted), check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != check.Violated || len(res.Anomalies) != 1 || res.Anomalies[0].Kind.String() != "thin-air-read" {
		t.Errorf("%s %v: want the read of \"1\" from k, where 1 was written, a thin-air read", res.Outcome, res.Anomalies)
	}
}

// TestIndependentTransactions: a jepsen.independent history of
// transactions ([key txn]) is read as parts, one per key, whose verdicts
// are those of each key's history checked alone: Elle's own histories,
// one per key, with a nemesis among them.
func TestIndependentTransactions(t *testing.T) {
	names := []string{"elle/histories/si-without-g-single.edn", "elle-cli/histories/elle/list-append-gh-30.edn"}
	var alone []*history.History
	var b strings.Builder
	b.WriteString("{:type :info, :process :nemesis, :f :pause}\n")
	for i, name := range names {
		b0, err := os.ReadFile(filepath.Join(corpora, name))
		if err != nil {
			t.Skipf("no Elle corpus: %v", err)
		}
		// Without :time, which one of them has and the other not.
		raw := regexp.MustCompile(`:time \d+,? *`).ReplaceAllString(string(b0), "")
		h, err := Read(strings.NewReader(raw), name)
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, h)
		// Each operation's :value becomes [[:k i] txn], its process is
		// renumbered apart.
		for _, line := range strings.Split(raw, "\n") {
			at := strings.Index(line, ":value ")
			if at < 0 {
				continue
			}
			end := strings.LastIndex(line, "]")
			line = line[:at] + fmt.Sprintf(":value [[:k %d] ", i) + line[at+len(":value "):end+1] + "]" + line[end+1:]
			line = strings.Replace(line, ":process ", fmt.Sprintf(":process 10%d", i), 1)
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("{:type :info, :process :nemesis, :f :pause, :value :paused}\n")
	h, err := Read(strings.NewReader(b.String()), "independent.edn")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(h.Parts) != len(names) || len(h.Faults) != 1 {
		t.Fatalf("%d parts, %d faults; want %d and 1", len(h.Parts), len(h.Faults), len(names))
	}
	for _, l := range []level.ID{level.Serializable, level.SnapshotIsolation} {
		lvl := level.Get(l)
		res, err := check.Run(context.Background(), h, lvl, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		violated := false
		for i, p := range res.Parts {
			if want := fmt.Sprintf("[:k %d]", i); p.Key != history.StringValue(want) {
				t.Errorf("part %d has key %s, want %s", i, p.Key, want)
			}
			one, err := check.Run(context.Background(), alone[i], lvl, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != one.Outcome || p.Anomalies != len(one.Anomalies) {
				t.Errorf("%s at %s: as key %d %s with %d anomalies, alone %s with %d", names[i], lvl.Name, i, p.Outcome, p.Anomalies, one.Outcome, len(one.Anomalies))
			}
			violated = violated || p.Outcome == check.Violated
		}
		if (res.Outcome == check.Violated) != violated {
			t.Errorf("%s: together %s", lvl.Name, res.Outcome)
		}
	}
}

func FuzzReadShapes(f *testing.F) {
	f.Add("{:type :info, :process :nemesis, :f :start}\n{:type :ok, :f :read, :value [[:r [:a 1] \"x\"]]}\n")
	f.Add(longFork)
	f.Add("{:type :invoke, :process 0, :value [3 [[:append :x 1]]]}\n{:type :info, :process 0, :value [3 [[:append :x 1]]]}\n{:type :ok, :process 1, :value [4 [[:r :x [1.5 \\c]]]]}\n")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Read(strings.NewReader(s), "f")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) || fe.Line == 0 {
				t.Fatalf("not a format error naming a line: %v", err)
			}
			return
		}
		if len(h.Txns) == 0 && h.Header.Initial.Values == nil {
			t.Fatal("a history read without transactions")
		}
		seen := 0
		for _, p := range h.Parts {
			seen += len(p.Txns)
		}
		if h.Parts != nil && seen != len(h.Txns) {
			t.Fatalf("parts hold %d transactions of %d", seen, len(h.Txns))
		}
		for _, flt := range h.Faults {
			if flt.End < flt.Begin || flt.Line == 0 {
				t.Fatalf("fault %+v", flt)
			}
		}
		_ = history.NewIndex(h)
	})
}
