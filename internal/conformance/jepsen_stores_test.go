package conformance

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/format/jepsenstore"
	"github.com/isoscope/isoscope/internal/format/registry"
	"github.com/isoscope/isoscope/internal/level"
)

// jepsenStores is where the corpus of real Jepsen store runs is: the
// directory jepsen-stores of shared/corpora, or $ISOSCOPE_JEPSEN_STORES.
// Each run is a directory with a history (history.edn or history.txt,
// either may be gzip-compressed) and Jepsen's results.edn, under
// <owner>+<repository>/<the run's path in that repository>;
// docs/jepsen-corpus.md names the sources and their licences.
func jepsenStores(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("ISOSCOPE_JEPSEN_STORES"); d != "" {
		return d
	}
	p, ok := inSharedCorpora(t, "jepsen-stores")
	if !ok {
		t.Skip("no corpus of Jepsen stores: neither shared/corpora/jepsen-stores beside the repository nor $ISOSCOPE_JEPSEN_STORES (docs/jepsen-corpus.md)")
	}
	return p
}

// storeExpectation explains a run of the corpus on which isoscope and
// results.edn do not simply agree: one isoscope does not read yet (the
// reader shape it needs), one it does not check, or a disagreement and
// why the label is wrong. A pattern (filepath.Match, on the run's path
// in the corpus) covers several runs.
type storeExpectation struct {
	pattern string
	// outcome is "refused" (isoscope does not read or check it: exit 2),
	// "no comparison" (results.edn, or isoscope, has no verdict) or
	// "disagree".
	outcome string
	why     string
	// sign is what isoscope's error or verdict says, for a run refused:
	// the reason is the one stated.
	sign string
}

// knossosNilReads is why isoscope and Knossos disagree on five keys of
// the ZooKeeper runs.
const knossosNilReads = "Knossos's register models take a read that returned nil as a read of any value (knossos.model: (or (nil? (:value op)) (= value (:value op)))); isoscope takes it as what it recorded, the register's initial, absent state, which these reads return after writes that completed before they began: a stale read. With those reads as unknown (:info), isoscope agrees on all five"

// storeExpectations are docs/jepsen-corpus.md's table, in the same words.
var storeExpectations = []storeExpectation{
	{"josehu07+jepsen.demo/store/zk e=false */*/independent/[012]", "disagree", knossosNilReads, "real-time-violation"},
	{"josehu07+jepsen.demo/store/zk e=true */*/independent/[12]", "disagree", knossosNilReads, "real-time-violation"},
	{"josehu07+jepsen.demo/store/zk e=false */*", "disagree", knossosNilReads + " (the run's whole history holds those keys)", "real-time-violation"},
	{"mvitz+javaspektrum-jepsen/store/etcdemo/20170920T130903.000Z", "refused",
		"the tutorial's first step: no client operation took effect (its reads never completed), so there is no transaction to check",
		"no transactions"},
	{"mvitz+javaspektrum-jepsen/store/etcdemo/20170920T13*", "no comparison",
		"results.edn is {:valid? true} alone: these runs are steps of the Jepsen tutorial before it has a checker (checker/unbridled-optimism), so there is no verdict to compare",
		"Jepsen: none"},
	{"Deabus+braft_bug", "no comparison",
		"every operation of the history completed :info, so no transaction is known to have taken effect; Elle's :valid? is :unknown (its :invalid verdict comes from the stats and assert checkers, not from isolation)",
		"Jepsen: unknown"},
	{"Howieboss02+CS4720_jepsen_linearizability_checking/store_final/bank-simple-test/*", "refused",
		"a bank workload (:f :transfer, reads of balances): isoscope checks no bank histories", "is not a transaction"},
	{"hooji+ratis-jepsen/results/*/counter-*", "refused",
		"a counter workload (:f :add): isoscope checks no counters", "(:f :add) is not a transaction"},
	{"hooji+ratis-jepsen/results/*/EXPECTED-RED-q14-retry-cache-expiry", "refused",
		"a counter workload (:f :add): isoscope checks no counters", "(:f :add) is not a transaction"},
	{"SungHoHong2+Jepsen-IO-Experiment/elle/store/redis 6.0.3 (raft e0123a9) append /20200803T230048.000Z", "no comparison",
		"Elle's :valid? is :unknown (:empty-transaction-graph): history.txt, the only history kept, has no operation that completed :ok, so no transaction committed; isoscope holds vacuously",
		"Jepsen: unknown"},
}

// expectation returns the first expectation whose pattern matches rel.
func expectation(rel string) (storeExpectation, bool) {
	for _, e := range storeExpectations {
		if ok, _ := filepath.Match(e.pattern, rel); ok {
			return e, true
		}
	}
	return storeExpectation{}, false
}

// TestJepsenStores runs isoscope on every run of the corpus of real
// Jepsen stores, at the level the history's format implies (strict
// serializability for register logs, Knossos's linearizability) or else
// serializable, and compares its verdict with the run's own results.edn
// (jepsenstore.Compare): they must agree, or the run must be in
// storeExpectations with the same outcome.
func TestJepsenStores(t *testing.T) {
	root := jepsenStores(t)
	var runs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if r, ok, _ := jepsenstore.Find(path); ok && r.Via == "" && r.Results != "" {
			runs = append(runs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 {
		t.Fatalf("%s holds no Jepsen run (a history and results.edn)", root)
	}
	counts := map[string]int{}
	bySource := map[string]map[string]int{}
	for _, dir := range runs {
		rel, _ := filepath.Rel(root, dir)
		got, detail := storeVerdict(t, dir)
		counts[got]++
		source, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if bySource[source] == nil {
			bySource[source] = map[string]int{}
		}
		bySource[source][got]++
		want, listed := expectation(rel)
		switch {
		case got == "agree" && listed:
			t.Logf("%s: agrees now; its entry (%s) can go", rel, want.why)
		case got == "agree":
		case !listed:
			t.Errorf("%s: %s (%s), and no entry of storeExpectations explains it", rel, got, detail)
		case want.outcome != got || !strings.Contains(detail, want.sign):
			t.Errorf("%s: %s (%s), but storeExpectations says %s (%q): %s", rel, got, detail, want.outcome, want.sign, want.why)
		}
	}
	for source, c := range bySource {
		t.Logf("%s: %v", source, c)
	}
	t.Logf("%d runs: %d agree, %d disagree, %d without a verdict to compare, %d refused", len(runs),
		counts["agree"], counts["disagree"], counts["no comparison"], counts["refused"])
}

// storeVerdict checks one run and returns how its verdict compares with
// results.edn: "agree", "disagree", "no comparison" or "refused", with
// what was found.
func storeVerdict(t *testing.T, dir string) (string, string) {
	t.Helper()
	run, _, err := jepsenstore.Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	results, err := jepsenstore.ReadResults(run.Results)
	if err != nil {
		t.Fatalf("%s: %v", run.Results, err)
	}
	o, err := jepsenstore.Open(run, "", registry.Options{})
	if err != nil {
		return "refused", err.Error()
	}
	lvl := level.Get(level.Serializable)
	if implied := o.History.Header.Implies; implied != "" {
		if lvl, err = level.Lookup(implied); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := check.Run(ctx, o.History, lvl, check.Options{})
	if err != nil {
		return "refused", err.Error()
	}
	cmp := jepsenstore.Compare(results, res.Level, res.Outcome == check.Satisfied, res.Outcome == check.Violated)
	var kinds []string
	for _, a := range res.Anomalies {
		kinds = append(kinds, a.Kind.String())
	}
	slices.Sort(kinds)
	return cmp.Agreement, "isoscope: " + res.Level.Name + " " + res.Outcome.String() + " " + strings.Join(slices.Compact(kinds), ",") +
		"; Jepsen: " + cmp.Jepsen + ", " + cmp.Why
}
