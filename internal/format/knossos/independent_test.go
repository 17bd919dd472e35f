package knossos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format"
	"github.com/isoscope/isoscope/internal/format/formattest"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
)

// etcdLog is one of porcupine's Jepsen etcd register logs and its label.
type etcdLog struct {
	name         string
	lines        [][4]string // process, type, function, value
	linearizable bool
}

// etcdLogs reads porcupine's labelled etcd logs from the shared corpora.
func etcdLogs(t *testing.T) []etcdLog {
	t.Helper()
	dir := filepath.Join(formattest.Corpora, "porcupine")
	f, err := os.Open(filepath.Join(dir, "LABELS.tsv"))
	if err != nil {
		t.Skipf("no porcupine corpus: %v", err)
	}
	defer f.Close()
	var logs []etcdLog
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 || !strings.HasPrefix(cols[0], "test_data/jepsen/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, cols[0]))
		if err != nil {
			t.Fatal(err)
		}
		l := etcdLog{name: cols[0], linearizable: cols[1] == "linearizable"}
		for _, line := range strings.Split(string(b), "\n") {
			rest, ok := strings.CutPrefix(line, prefix)
			if !ok {
				continue
			}
			fs := fields(rest)
			l.lines = append(l.lines, [4]string{fs[0], fs[1], fs[2], fs[3]})
		}
		logs = append(logs, l)
	}
	if len(logs) < 100 {
		t.Fatalf("%d labelled etcd logs, want the 102 of the corpus", len(logs))
	}
	return logs
}

// independent writes the logs as one jepsen.independent history in EDN,
// log i on key i with its processes renumbered apart, their lines
// interleaved round-robin (each log's own order kept), and a nemesis's
// operation before everything.
func independent(logs []etcdLog) string {
	var b strings.Builder
	b.WriteString("{:type :info, :process :nemesis, :f :start}\n{:type :info, :process :nemesis, :f :start, :value \"partitioned\"}\n")
	for at := 0; ; at++ {
		more := false
		for i, l := range logs {
			if at >= len(l.lines) {
				continue
			}
			more = true
			ln := l.lines[at]
			var proc int
			fmt.Sscan(ln[0], &proc)
			value := ln[3]
			if !strings.HasPrefix(value, ":") { // :timed-out stays as it is
				value = fmt.Sprintf("[%d %s]", i, value)
			}
			fmt.Fprintf(&b, "{:process %d, :type %s, :f %s, :value %s}\n", 1000*i+proc, ln[1], ln[2], value)
		}
		if !more {
			return b.String()
		}
	}
}

// TestIndependentLabels reads porcupine's 102 labelled etcd logs as the
// keys of jepsen.independent histories (six logs a history, interleaved)
// and checks that each key's verdict is its log's label, that the verdict
// together is violated exactly when a key's is, and, linearizability
// being local (a history is linearizable exactly when each object's
// sub-history is), that it is the verdict of the whole history checked
// as one at strict serializability.
func TestIndependentLabels(t *testing.T) {
	logs := etcdLogs(t)
	sser := level.Get(level.StrictSerializable)
	for lo := 0; lo < len(logs); lo += 6 {
		group := logs[lo:min(lo+6, len(logs))]
		h, err := Read(strings.NewReader(independent(group)), "independent.edn")
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Parts) != len(group) || len(h.Faults) != 1 {
			t.Fatalf("%d parts and %d faults, want %d and 1", len(h.Parts), len(h.Faults), len(group))
		}
		res, err := check.Run(context.Background(), h, sser, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		anyViolated := false
		for _, p := range res.Parts {
			i := int(p.Key.N)
			if p.Key.Kind != history.Int || i < 0 || i >= len(group) {
				t.Fatalf("a part has key %s", p.Key)
			}
			l := group[i]
			if want := l.linearizable; (p.Outcome == check.Satisfied) != want {
				t.Errorf("%s as key %d: %s, labelled linearizable %v", l.name, i, p.Outcome, want)
			}
			anyViolated = anyViolated || p.Outcome == check.Violated
		}
		if (res.Outcome == check.Violated) != anyViolated {
			t.Errorf("logs %d…: together %s, but a key violated: %v", lo, res.Outcome, anyViolated)
		}
		whole := *h
		whole.Parts = nil
		one, err := check.Run(context.Background(), &whole, sser, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if one.Outcome != res.Outcome {
			t.Errorf("logs %d…: key by key %s, as one history %s", lo, res.Outcome, one.Outcome)
		}
		for _, a := range res.Anomalies {
			for _, tx := range a.Txns {
				if int(tx) >= len(h.Txns) {
					t.Fatalf("anomaly %v names transaction %d of %d", a.Kind, tx, len(h.Txns))
				}
			}
		}
	}
}

// TestIndependentBrokenKey: a register history of three keys, one of
// which reads a value nobody wrote, is violated on that key alone; the
// anomaly names the key's transactions in the whole history.
func TestIndependentBrokenKey(t *testing.T) {
	in := `[{:process 0, :type :invoke, :f :write, :value [:a 1]}
 {:process 0, :type :ok, :f :write, :value [:a 1]}
 {:process 1, :type :invoke, :f :read, :value [[:b 2] nil]}
 {:process 1, :type :ok, :f :read, :value [[:b 2] 7]}
 {:process 2, :type :invoke, :f :cas, :value ["c" [nil 3]]}
 {:process 2, :type :ok, :f :cas, :value ["c" [nil 3]]}
 {:process 3, :type :invoke, :f :read, :value [:a nil]}
 {:process 3, :type :ok, :f :read, :value [:a 1]}]`
	h, err := Read(strings.NewReader(in), "broken.edn")
	if err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(context.Background(), h, level.Get(level.StrictSerializable), check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Parts {
		got = append(got, p.Key.String()+" "+p.Outcome.String())
	}
	if want := `"[:b 2]" violation|a satisfied|c satisfied`; strings.Join(got, "|") != want {
		t.Errorf("keys %s, want %s", strings.Join(got, "|"), want)
	}
	if res.Outcome != check.Violated || len(res.Anomalies) != 1 || len(res.Anomalies[0].Txns) != 1 ||
		res.Anomalies[0].Txns[0] != 1 || h.KeyName(res.Anomalies[0].Key) != `"[:b 2]"` {
		t.Errorf("outcome %s, anomalies %+v: want one, transaction 2's read of key [:b 2]", res.Outcome, res.Anomalies)
	}
}

// TestStringValues: a register's values are compared as EDN values, as
// Knossos compares them: a read of "6" after a write of 6 reads a value
// nobody wrote, and a read of "6" after a write of "6" is linearizable.
func TestStringValues(t *testing.T) {
	for _, c := range []struct {
		written, read string
		want          check.Outcome
	}{
		{`6`, `"6"`, check.Violated},
		{`"6"`, `"6"`, check.Satisfied},
		{`:six`, `:six`, check.Satisfied},
		{`:six`, `"seven"`, check.Violated},
		{`[1 :a]`, `[1 :a]`, check.Satisfied},
		{`1.50`, `1.5`, check.Satisfied},
		{`1`, `1.0`, check.Violated},
	} {
		in := fmt.Sprintf(`[{:process 0, :type :invoke, :f :write, :value %[1]s}
 {:process 0, :type :ok, :f :write, :value %[1]s}
 {:process 1, :type :invoke, :f :read, :value nil}
 {:process 1, :type :ok, :f :read, :value %[2]s}]`, c.written, c.read)
		h, err := Read(strings.NewReader(in), "s.edn")
		if err != nil {
			t.Errorf("write %s, read %s: %v", c.written, c.read, err)
			continue
		}
		res, err := check.Run(context.Background(), h, level.Get(level.StrictSerializable), check.Options{})
		if err != nil || res.Outcome != c.want {
			t.Errorf("write %s, read %s: %s (%v), want %s", c.written, c.read, res.Outcome, err, c.want)
		}
	}
}

// TestNemesisFirst: a register history whose first operations are the
// nemesis's is a knossos history (detection looks past them), and they
// are its faults.
func TestNemesisFirst(t *testing.T) {
	in := `{:type :info, :f :start, :process :nemesis, :time 5}
{:type :info, :f :start, :process :nemesis, :time 6, :value [:isolated {"n1" #{"n2" "n3"}}]}
{:type :invoke, :f :write, :value 3, :process 0, :time 10}
{:type :ok, :f :write, :value 3, :process 0, :time 20}
{:type :invoke, :f :read, :value nil, :process 1, :time 30}
{:type :ok, :f :read, :value 3, :process 1, :time 40}
{:type :info, :f :stop, :process :nemesis, :time 50}
`
	if !Sniff([]byte(in)) {
		t.Fatal("a register history that starts with the nemesis's operations is not sniffed")
	}
	h, err := Read(strings.NewReader(in), "n.edn")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := history.Notation(h), "t1: s0: @3-4: w x 3 | t2: s1: @5-6: r x 3"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	want := []history.Fault{
		{Kind: "start", Begin: 1, End: 2, Info: `[:isolated {"n1" #{"n2" "n3"}}]`, Line: 1},
		{Kind: "stop", Begin: 7, End: 8, Line: 7},
	}
	if fmt.Sprint(h.Faults) != fmt.Sprint(want) {
		t.Errorf("faults %+v\nwant   %+v", h.Faults, want)
	}
}

// TestNotARegister: operations of other workloads (Elle's long-fork
// reads, a bank's, a set's) are not sniffed as a register history, and
// when named --format knossos are refused on their line.
func TestNotARegister(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[{:type :invoke, :f :read, :value [[:r 0 nil] [:r 1 nil]]},\n{:type :ok, :f :read, :value [[:r 0 1] [:r 1 nil]]}]",
			"s.edn:2: value: [[:r 0 1] [:r 1 nil]] is a transaction, not a register's value"},
		{"{:type :invoke, :f :read, :process 0, :value nil}\n{:type :ok, :f :read, :process 0, :value {0 10 1 10}}\n",
			"s.edn:2: value: {0 10 1 10} is a map"},
		{"{:type :invoke, :f :add, :process 0, :value 1}\n", "s.edn:1: f: unknown function :add"},
	} {
		_, err := Read(strings.NewReader(c.in), "s.edn")
		var fe *format.Error
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
	if Sniff([]byte("[{:type :invoke, :f :read, :value [[:r 0 nil] [:r 1 nil]]},\n{:type :ok, :f :read, :value [[:r 0 1] [:r 1 nil]]}]")) {
		t.Error("Elle's long-fork history sniffed as a register history")
	}
}

func FuzzReadIndependent(f *testing.F) {
	f.Add("{:type :info, :process :nemesis, :f :kill}\n{:process 0, :type :invoke, :f :cas, :value [1 [2 3]]}\n{:process 0, :type :ok, :f :cas, :value [1 [2 3]]}\n")
	f.Add("{:process 0, :type :invoke, :f :write, :value [[:a 1] \"x\"]}\n{:process 1, :type :invoke, :f :read, :value [[:a 1] nil]}\n{:process 1, :type :info, :f :read, :value :timed-out}\n")
	f.Add(`[{"process":0,"type":"invoke","f":"write","value":["k",1]},{"process":0,"type":"ok","f":"write","value":["k",1]}]`)
	f.Fuzz(func(t *testing.T, s string) {
		h, err := Read(strings.NewReader(s), "f")
		if err != nil {
			var fe *format.Error
			if !errors.As(err, &fe) || fe.Line == 0 && !strings.Contains(fe.Msg, "no transactions") {
				t.Fatalf("not a format error naming a line: %v", err)
			}
			return
		}
		if len(h.Txns) == 0 {
			t.Fatal("a history read without transactions")
		}
		owner := map[history.KeyID]int{}
		seen := 0
		for i, p := range h.Parts {
			for _, tx := range p.Txns {
				seen++
				for _, op := range h.Txns[tx].Ops {
					if o, ok := owner[op.Key]; ok && o != i {
						t.Fatalf("key %s in parts %d and %d", h.KeyName(op.Key), o, i)
					}
					owner[op.Key] = i
				}
			}
		}
		if h.Parts != nil && seen != len(h.Txns) {
			t.Fatalf("parts hold %d transactions of %d", seen, len(h.Txns))
		}
		_ = history.NewIndex(h)
	})
}
