package check_test

import (
	"context"
	"slices"
	"testing"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/check/reference"
	"github.com/isoscope/isoscope/internal/gen"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/workload"
)

// axiomaticLevels are the levels of axiomaticCases' verdict strings:
// Adya's read committed, rc-session, read atomic, causal, prefix,
// snapshot isolation, generalized SI, plain serializability.
var axiomaticLevels = []level.ID{level.ReadCommitted, level.RCSession, level.ReadAtomic, level.Causal, level.Prefix,
	level.SnapshotIsolation, level.GSI, level.PlainSerializable}

// axiomaticCases are hand-built histories that tell the axiomatic levels
// apart, with the kind the solver reports at the weakest violated
// axiomatic level.
var axiomaticCases = []struct {
	name, h, want, kind string
}{
	{"hb cycle (AWDIT none/hb-cycle.txt)", `s1: r 1 1 | s1: w 0 0 | s2: r 0 0 | s2: w 1 1`, "+-----++", "session-guarantee-violation"},
	{"causal past missed (AWDIT read-atomic/biswas-enea.txt)", `s1: w 0 1 | s1: w 0 2 | s2: r 0 2 w 1 1 | s3: r 0 1 r 1 1`, "+++---++", "causality-violation"},
	{"fractured read (AWDIT read-committed/biswas-enea.txt)", `s1: w 0 1 w 1 1 | s2: w 0 2 w 1 2 | s3: w 2 2 | s4: r 0 1 r 1 2 r 2 2`, "++------", "fractured-read"},
	{"non-monotonic read in a transaction", `init: x=0 y=0 | s1: w x 1 w y 1 | s2: r y 1 r x 0`, "+-------", "non-monotonic-read"},
	{"read your writes", `s1: w x 1 | s1: r x _`, "++----++", "session-guarantee-violation"},
	{"monotonic reads across a session", `init: x=0 | s1: w x 1 | s2: r x 1 | s2: r x 0`, "+++---++", "non-monotonic-read"},
	{"long fork (AWDIT causal/long-fork.txt)", `s1: w 0 0 w 1 0 | s2: w 0 1 | s2: r 0 1 r 1 0 | s3: w 1 1 | s3: r 1 1 r 0 0`, "++++----", "long-fork"},
	{"lost update (AWDIT causal/lost-update.txt)", `s1: w 0 0 | s2: r 0 0 w 0 1 | s3: r 0 0 w 0 2`, "+++++---", "lost-update"},
	{"a fractured scan", `init: 1=a 2=b | s1: d 1 w 2 c | s2: scan 0 10 [2=b]`, "++------", "fractured-read"},
	{"repeated values that explain each other", `s1: w x 1 | s2: w x 1 w y 1 | s3: r x 1 r y 1`, "++++++++", ""},
	// Session s2 writes x three times; T8 has seen only the first (T2)
	// when it reads x from T1, though it is walked after all three in
	// the topological order: the causal checker must look past the last
	// two walked writers of x in s2 to find T2.
	{"a writer two versions back in its session", `s1: w x 9 w q 1 | s2: r q 1 w x 1 w z 1 | s2: w x 2 | s2: w x 3 | s3: w a 1 | s3: w a 2 | s3: w a 3 | s3: r z 1 r x 9`, "+-------", "non-monotonic-read"},
	{"the same, reading x first", `s1: w x 9 w q 1 | s2: r q 1 w x 1 w z 1 | s2: w x 2 | s2: w x 3 | s3: w a 1 | s3: w a 2 | s3: w a 3 | s3: r x 9 r z 1`, "++------", "fractured-read"},
	{"repeated values, serializable", `s1: w x 1 w y 1 | s2: w x 1 w y 2 | s3: r x 1 r y 1 | s3: r y 2 | s3: r x 1`, "++++++++", ""},
	{"repeated values that do not explain a read", `init: z=0 | s1: w x 1 w z 1 | s2: w x 1 w z 2 | s3: r x 1 r z 0`, "+-------", "non-monotonic-read"},
}

// TestAxiomaticCases holds the oracle, the solver checker and auto to
// the table.
func TestAxiomaticCases(t *testing.T) {
	for _, c := range axiomaticCases {
		t.Run(c.name, func(t *testing.T) {
			h := history.MustParse(c.h)
			weakest := true
			for i, id := range axiomaticLevels {
				want := c.want[i] == '+'
				oracle, err := reference.Check(h, id)
				if err != nil {
					t.Fatalf("%s: oracle: %v", id, err)
				}
				if oracle != want {
					t.Errorf("%s: oracle says %v, the table %v", id, oracle, want)
				}
				for _, name := range []string{"sat", "auto"} {
					res, err := check.Run(context.Background(), h, level.Get(id), check.Options{Checker: name})
					if err != nil {
						t.Fatalf("%s (%s): %v", id, name, err)
					}
					if got := res.Outcome == check.Satisfied; got != want {
						t.Errorf("%s: %s (%s) says %v (%s), the table %v", id, name, res.Checker, got, kinds(res), want)
					}
					cyclesConnect(t, res)
					if name == "sat" && !want && level.Get(id).Axiom != level.NoAxiom && weakest {
						if k := kindsOnly(res); k != c.kind {
							t.Errorf("%s: found %s, want %s", id, k, c.kind)
						}
					}
				}
				if !want && level.Get(id).Axiom != level.NoAxiom {
					weakest = false
				}
			}
		})
	}
}

// kindsOnly lists the kinds of res's anomalies.
func kindsOnly(res check.Result) string {
	out := ""
	for _, a := range res.Anomalies {
		if out != "" {
			out += " "
		}
		out += a.Kind.String()
	}
	return out
}

// TestHoldsAxiomaticLevels: a causal store's history of 2,000
// transactions violates snapshot isolation (concurrent writers of a key
// commit), and the still-holds pass says causal consistency holds — past
// the solver's 1,000 transactions, decided by the saturation checker —
// which implies read atomic and rc-session.
func TestHoldsAxiomaticLevels(t *testing.T) {
	h, err := gen.GenerateCausal(gen.CausalConfig{Txns: 2000, Sessions: 10, Keys: 200, Dist: workload.Uniform,
		Ops: 8, ReadRatio: 0.5, Sync: gen.DefaultSync, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := check.Run(context.Background(), h, level.Get(level.SnapshotIsolation), check.Options{Holds: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != check.Violated {
		t.Fatalf("snapshot isolation: %s", res.Outcome)
	}
	var names []string
	for _, l := range res.Holds {
		names = append(names, l.Name)
	}
	if !slices.Contains(names, "causal") {
		t.Errorf("still holds %v, want causal", names)
	}
}
