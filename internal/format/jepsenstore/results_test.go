package jepsenstore

import (
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/level"
)

// elleInvalid is the shape of a results.edn whose Elle checker found a
// G-single (abridged from a MongoDB run): the top-level :valid? joins
// the performance and exception checkers too.
const elleInvalid = `{:perf {:latency-graph {:valid? true}, :rate-graph {:valid? true}, :valid? true},
 :stats {:valid? false, :count 3, :ok-count 0, :by-f {:txn {:valid? false, :count 3}}},
 :exceptions {:valid? true, :exceptions ({:class com.mongodb.MongoCommandException, :example {:type :info}})},
 :workload {:valid? false,
            :anomaly-types (:G-single),
            :anomalies {:G-single [{:cycle [#jepsen.history.Op{:index 1} #jepsen.history.Op{:index 2}]}]},
            :not #{:consistent-view :repeatable-read},
            :also-not #{:forward-consistent-view :serializable :snapshot-isolation :strict-serializable}},
 :valid? false}`

const knossosValid = `{:perf {:valid? true},
 :valid? true,
 :linear {:valid? true,
          :configs ({:model #knossos.model.Register{:value 437}, :last-op {:process 2}, :pending []}),
          :analyzer :linear,
          :final-paths ()},
 :timeline {:valid? true},
 :stats {:valid? true, :by-f {:read {:valid? true}}}}`

const independent = `{:valid? false,
 :independent {:valid? false,
               :results {0 {:linearizable {:valid? true, :analyzer :linear, :configs ()}, :valid? true},
                         7 {:linearizable {:valid? false, :analyzer :linear, :final-paths ()}, :valid? false}},
               :failures [7]}}`

func read(t *testing.T, s string) *Results {
	t.Helper()
	r, err := Read(strings.NewReader(s), "results.edn")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadResults(t *testing.T) {
	r := read(t, elleInvalid)
	if r.Valid != "false" || len(r.Checkers) != 1 {
		t.Fatalf("elle: %+v", r)
	}
	c := r.Checkers[0]
	if c.Checker != "elle" || c.Path != ":workload" || c.Valid != "false" || !slices.Equal(c.AnomalyTypes, []string{"G-single"}) ||
		!slices.Contains(c.Not, "repeatable-read") || !slices.Contains(c.AlsoNot, "serializable") {
		t.Fatalf("elle verdict: %+v", c)
	}
	r = read(t, knossosValid)
	if len(r.Checkers) != 1 || r.Checkers[0].Checker != "knossos" || r.Checkers[0].Path != ":linear" || r.Checkers[0].Valid != "true" {
		t.Fatalf("knossos: %+v", r.Checkers)
	}
	r = read(t, independent)
	if len(r.Checkers) != 1 || r.Checkers[0].Checker != "independent" || len(r.Checkers[0].Keys) != 2 ||
		r.Checkers[0].Keys[1].Key != "7" || r.Checkers[0].Keys[1].Valid != "false" {
		t.Fatalf("independent: %+v", r.Checkers)
	}
	// Elle with nothing to say: {:valid? true} under :workload.
	r = read(t, `{:valid? true, :workload {:valid? true}, :stats {:valid? true}}`)
	if len(r.Checkers) != 1 || r.Checkers[0].Checker != "checker" {
		t.Fatalf("bare workload: %+v", r.Checkers)
	}
	// :valid? :unknown (Elle's empty transaction graph).
	r = read(t, `{:valid? false, :workload {:valid? :unknown, :anomaly-types (:empty-transaction-graph), :not #{}, :also-not #{}}}`)
	if v, _ := r.AtLevel(level.Get(level.Serializable)); v != Unknown {
		t.Fatalf("unknown: %s", v)
	}
	// No consistency checker at all.
	r = read(t, `{:valid? false, :stats {:valid? false, :count 1}}`)
	if v, why := r.AtLevel(level.Get(level.Serializable)); v != None || !strings.Contains(why, "false") {
		t.Fatalf("none: %s %s", v, why)
	}
}

func TestReadResultsBad(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, "empty"},
		{`[:valid? true]`, "results.edn:1: results.edn is one map"},
		{`{:valid? true} {:valid? false}`, "a second value"},
		{`{:stats {:valid? true}}`, "no :valid?"},
		{"{:valid? true,\n :x [1 2}", "results.edn:2"},
	} {
		_, err := Read(strings.NewReader(tc.in), "results.edn")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestAtLevel: Elle's ruled-out models decide its verdict at a level:
// invalid at a level as strong as one it rules out, valid at weaker ones
// (it found nothing against them).
func TestAtLevel(t *testing.T) {
	r := read(t, elleInvalid)
	for _, tc := range []struct {
		id   level.ID
		want string
	}{
		{level.Serializable, Invalid}, {level.RepeatableRead, Invalid}, {level.StrictSerializable, Invalid},
		{level.SnapshotIsolation, Invalid}, {level.ReadCommitted, Valid}, {level.ReadUncommitted, Valid},
	} {
		if got, why := r.AtLevel(level.Get(tc.id)); got != tc.want {
			t.Errorf("%v: %s (%s), want %s", tc.id, got, why, tc.want)
		}
	}
	// Without :not, invalid is invalid at any level.
	r = read(t, `{:valid? false, :linear {:valid? false, :analyzer :linear}}`)
	if got, _ := r.AtLevel(level.Get(level.ReadCommitted)); got != Invalid {
		t.Errorf("knossos invalid: %s", got)
	}
	// Agreement.
	ser := level.Get(level.Serializable)
	for _, tc := range []struct {
		results             string
		satisfied, violated bool
		want                string
	}{
		{elleInvalid, false, true, "agree"},
		{elleInvalid, true, false, "disagree"},
		{knossosValid, true, false, "agree"},
		{knossosValid, false, true, "disagree"},
		{knossosValid, false, false, "no comparison"},
		{`{:valid? true}`, true, false, "no comparison"},
	} {
		if got := Compare(read(t, tc.results), ser, tc.satisfied, tc.violated); got.Agreement != tc.want {
			t.Errorf("%.30q satisfied=%v violated=%v: %s, want %s", tc.results, tc.satisfied, tc.violated, got.Agreement, tc.want)
		}
	}
}

// TestNilReads: the note on nil reads goes only with a disagreement in
// which Knossos says valid and isoscope found a violation.
func TestNilReads(t *testing.T) {
	ser := level.Get(level.StrictSerializable)
	c := Compare(read(t, knossosValid), ser, false, true)
	if c.NilReads(2); !strings.Contains(c.Note, "2 read(s) that returned nil") {
		t.Errorf("disagreement with Knossos: note %q", c.Note)
	}
	for _, c := range []Comparison{
		Compare(read(t, knossosValid), ser, true, false),
		Compare(read(t, elleInvalid), ser, true, false),
		Compare(read(t, `{:valid? true, :workload {:valid? true}}`), ser, false, true),
	} {
		if c.NilReads(2); c.Note != "" {
			t.Errorf("%s %s: note %q", c.Jepsen, c.Agreement, c.Note)
		}
	}
	c = Compare(read(t, knossosValid), ser, false, true)
	if c.NilReads(0); c.Note != "" {
		t.Errorf("no nil reads: note %q", c.Note)
	}
}

// FuzzRead: any input gives results or an error, never a panic.
func FuzzRead(f *testing.F) {
	for _, s := range []string{elleInvalid, knossosValid, independent, `{:valid? true}`, `{`, `#_ {}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Read(strings.NewReader(s), "results.edn")
		if err == nil {
			r.AtLevel(level.Get(level.Serializable))
		}
	})
}
