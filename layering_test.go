package isoscope

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the module path the layering rules speak of.
const module = "github.com/isoscope/isoscope"

// layerRule forbids the packages under any of From (module-relative
// prefixes) to import any package under Forbid. Internal packages are
// followed transitively (an indirect import counts); standard-library
// packages count only when imported directly, since fmt itself imports os.
//
// Every entry is a prefix: "internal/check" is that package and every
// package below it; an entry ending in "/…" ("internal/check/…") is only
// the packages strictly below. Except names packages (exactly) that Forbid
// would cover but that are allowed; Exempt names importers (prefixes)
// that From would cover but that the rule does not hold. Written this way,
// a package added under a prefix is covered by its rule without anyone
// listing it.
type layerRule struct {
	Why    string
	From   []string
	Forbid []string
	Except []string
	Exempt []string
	// Direct counts only the From packages' own imports, not those of
	// the packages they import.
	Direct bool
}

// layerRules are docs/architecture.md's layering: a pure checking core,
// I/O and databases at the edges, layers that import downwards.
var layerRules = []layerRule{
	{
		Why:    "the checking core is pure: no I/O, no formats, no rendering, no databases",
		From:   []string{"internal/history", "internal/anomaly", "internal/level", "internal/graph", "internal/sat", "internal/check"},
		Forbid: []string{"os", "net", "database/sql", "internal/format", "internal/report", "internal/db", "internal/cli", "internal/runner", "internal/serve", "internal/workload", "internal/gen"},
	},
	{
		Why:    "the checker contract lies under the algorithms: they implement it, the driver (package check) lists and chooses them",
		From:   []string{"internal/check/checker"},
		Forbid: []string{"internal/check", "internal/sat", "internal/graph"},
		Except: []string{"internal/check/checker"},
	},
	{
		Why:    "the runner, the databases, the workloads, the clusters and the nemesis record; they neither check nor render",
		From:   []string{"internal/runner", "internal/db", "internal/workload", "internal/cluster", "internal/nemesis"},
		Forbid: []string{"internal/check", "internal/report", "internal/cli"},
	},
	{
		Why:    "a finding and the evidence of its edges are data below the report layer: pure, no rendering, no I/O",
		From:   []string{"internal/evidence", "internal/finding"},
		Forbid: []string{"os", "net", "internal/report", "internal/serve", "internal/cli", "internal/format", "internal/db", "internal/runner"},
	},
	{
		Why:    "the service reports findings as data; prose is the report layer's",
		From:   []string{"internal/serve", "internal/natsin", "internal/natsshard", "internal/shard"},
		Forbid: []string{"internal/report", "internal/cli"},
	},
	{
		Why:    "the wire contract is data both sides of the service import: no server, no client, no metrics, no HTTP",
		From:   []string{"internal/wire", "internal/shard"},
		Forbid: []string{"internal/serve", "internal/natsin", "internal/natsshard", "internal/collect", "github.com/prometheus", "net/http"},
	},
	{
		Why:    "a client of the service speaks the wire contract and imports no server",
		From:   []string{"internal/collect"},
		Forbid: []string{"internal/serve", "internal/natsin", "internal/natsshard"},
	},
	{
		Why:    "the command line and the public API reach the checkers only through the driver (check) and its contract (checker), the online checker through the service",
		From:   []string{"internal/cli", "internal/pipeline", "."},
		Forbid: []string{"internal/check/…"},
		Except: []string{"internal/check/checker"},
		Direct: true,
	},
	{
		Why:    "the public packages beside the root (the test helper, the tracing wrappers, the examples) use isoscope as any program does: through the root package's API",
		From:   []string{"isoscopetest", "trace", "examples"},
		Forbid: []string{"internal"},
		Direct: true,
	},
	{
		Why:    "the run pipeline is isoscope run's: only the command line runs it",
		From:   []string{"internal", "."},
		Forbid: []string{"internal/pipeline"},
		Exempt: []string{"internal/cli"},
	},
	{
		Why:    "nothing below the command line imports it",
		From:   []string{"internal"},
		Forbid: []string{"internal/cli"},
	},
}

// knownLayerViolations are the imports that break layerRules and are
// tolerated, each as "importer -> imported" (module-relative). A new
// violation, or one listed that no longer exists, fails TestLayering, so
// the list can only shrink.
var knownLayerViolations = []string{}

// imports returns every package directory of the module (module-relative,
// "." for the root) with the packages its non-test Go files import
// directly (module-relative for the module's own, import paths for the
// rest).
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "tmp" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if rel, ok := strings.CutPrefix(ip, module+"/"); ok {
				ip = rel
			}
			if !slices.Contains(out[dir], ip) {
				out[dir] = append(out[dir], ip)
			}
		}
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// under reports whether package p is prefix or below it; for a prefix
// ending in "/…", whether p is strictly below it.
func under(p, prefix string) bool {
	if base, ok := strings.CutSuffix(prefix, "/…"); ok {
		return strings.HasPrefix(p, base+"/")
	}
	prefix = strings.TrimSuffix(prefix, "/")
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// forbids reports whether r forbids importing package p.
func (r layerRule) forbids(p string) bool {
	return !slices.Contains(r.Except, p) && slices.ContainsFunc(r.Forbid, func(f string) bool { return under(p, f) })
}

// layerViolations returns the violations of rules in the import graph g,
// sorted, as "importer -> imported": for every package under a rule's
// From, each package on its import paths through the module (itself
// included) that directly imports a forbidden one. The search does not
// go on through a forbidden package.
func layerViolations(g map[string][]string, rules []layerRule) []string {
	seen := map[string]bool{}
	for _, r := range rules {
		forbidden := r.forbids
		for _, from := range slices.Sorted(maps.Keys(g)) {
			if forbidden(from) || !slices.ContainsFunc(r.From, func(f string) bool { return under(from, f) }) ||
				slices.ContainsFunc(r.Exempt, func(f string) bool { return under(from, f) }) {
				continue
			}
			queue, visited := []string{from}, map[string]bool{from: true}
			for len(queue) > 0 {
				p := queue[0]
				queue = queue[1:]
				for _, imp := range g[p] {
					if forbidden(imp) {
						seen[p+" -> "+imp] = true
						continue
					}
					if _, ours := g[imp]; ours && !visited[imp] && !r.Direct {
						visited[imp] = true
						queue = append(queue, imp)
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// TestLayering walks the module's imports and holds them to layerRules:
// a violation that is not among knownLayerViolations fails, and so does a
// known one that has gone (remove it from the list).
func TestLayering(t *testing.T) {
	g := imports(t)
	if len(g) < 20 {
		t.Fatalf("found only %d packages: is the test running at the module root?", len(g))
	}
	got := layerViolations(g, layerRules)
	for _, v := range got {
		if !slices.Contains(knownLayerViolations, v) {
			t.Errorf("layering violation: %s", v)
		}
	}
	for _, v := range knownLayerViolations {
		if !slices.Contains(got, v) {
			t.Errorf("known violation %s is gone: remove it from knownLayerViolations", v)
		}
	}
}

// TestLayeringCatchesViolations plants violations in a copy of the real
// import graph: a core package importing os, a checker reaching the
// report layer through another package, the runner importing a checker.
func TestLayeringCatchesViolations(t *testing.T) {
	g := imports(t)
	base := layerViolations(g, layerRules)
	plant := func(from, imp string) []string {
		c := maps.Clone(g)
		c[from] = append(slices.Clone(c[from]), imp)
		var added []string
		for _, v := range layerViolations(c, layerRules) {
			if !slices.Contains(base, v) {
				added = append(added, v)
			}
		}
		return added
	}
	cases := []struct{ from, imp, want string }{
		{"internal/check/mt", "os", "internal/check/mt -> os"},
		{"internal/check/checker", "internal/check/polygraph", "internal/check/checker -> internal/check/polygraph"},
		{"internal/cli", "internal/check/aion", "internal/cli -> internal/check/aion"},
		{".", "internal/check/polygraph", ". -> internal/check/polygraph"},
		{"internal/history", "net", "internal/history -> net"},
		{"internal/graph", "internal/format/native", "internal/graph -> internal/format/native"},
		{"internal/runner", "internal/check", "internal/runner -> internal/check"},
		{"internal/natsin", "internal/report/htmlreport", "internal/natsin -> internal/report/htmlreport"},
		{"internal/evidence", "internal/report", "internal/evidence -> internal/report"},
		{"internal/format/native", "internal/cli", "internal/format/native -> internal/cli"},
		// Packages no rule lists by name are covered by their prefix.
		{"internal/cli", "internal/check/saturate", "internal/cli -> internal/check/saturate"},
		{".", "internal/check/listappend", ". -> internal/check/listappend"},
		{"internal/check/checker", "internal/check/saturate", "internal/check/checker -> internal/check/saturate"},
		{"internal/check/checker", "internal/check", "internal/check/checker -> internal/check"},
		{"internal/cli", "internal/check/zz_new_algorithm", "internal/cli -> internal/check/zz_new_algorithm"},
		{"trace/etcdtrace", "internal/history", "trace/etcdtrace -> internal/history"},
		{"isoscopetest", "internal/report", "isoscopetest -> internal/report"},
		{"internal/pipeline", "internal/check/aion", "internal/pipeline -> internal/check/aion"},
		{"internal/pipeline", "internal/cli", "internal/pipeline -> internal/cli"},
		{"internal/serve", "internal/pipeline", "internal/serve -> internal/pipeline"},
		{".", "internal/pipeline", ". -> internal/pipeline"},
		{"internal/wire", "internal/serve", "internal/wire -> internal/serve"},
		{"internal/wire", "net/http", "internal/wire -> net/http"},
		{"internal/wire", "github.com/prometheus/client_golang/prometheus", "internal/wire -> github.com/prometheus/client_golang/prometheus"},
		{"internal/shard", "internal/collect", "internal/shard -> internal/collect"},
		{"internal/collect", "internal/serve", "internal/collect -> internal/serve"},
		{"internal/collect", "internal/natsin", "internal/collect -> internal/natsin"},
	}
	for _, c := range cases {
		if _, ok := g[c.from]; !ok {
			t.Fatalf("no package %s", c.from)
		}
		if added := plant(c.from, c.imp); !slices.Contains(added, c.want) {
			t.Errorf("planting %s -> %s: new violations %v, want %s", c.from, c.imp, added, c.want)
		}
	}
	// Transitive: a core package that imports a harmless module package
	// which imports the report layer is caught at the direct importer.
	c := maps.Clone(g)
	c["internal/zz_planted"] = []string{"internal/report"}
	c["internal/check/dsg"] = append(slices.Clone(c["internal/check/dsg"]), "internal/zz_planted")
	added := layerViolations(c, []layerRule{layerRules[0]})
	if !slices.Contains(added, "internal/zz_planted -> internal/report") {
		t.Errorf("a transitive import of the report layer from the core was not caught: %v", added)
	}
}

// TestLayeringAllowsTheContract holds the exceptions: the command line,
// the run pipeline and the public API may import the driver and the
// checker contract, the command line may run the pipeline, and the
// contract is not forbidden to itself.
func TestLayeringAllowsTheContract(t *testing.T) {
	g := map[string][]string{
		"internal/cli":           {"internal/check", "internal/check/checker", "internal/pipeline"},
		"internal/pipeline":      {"internal/check", "internal/check/checker"},
		".":                      {"internal/check", "internal/check/checker"},
		"internal/check":         {"internal/check/checker"},
		"internal/check/checker": {"internal/history"},
		"internal/history":       nil,
	}
	if v := layerViolations(g, layerRules); len(v) > 0 {
		t.Errorf("allowed imports reported as violations: %v", v)
	}
}

// TestLayerRulesNameRealPackages fails when a rule's module prefix names
// no package (a renamed or removed package would leave its rule empty and
// silently true), and when a rule's path of another module
// ("github.com/…") is imported by no package of this one.
func TestLayerRulesNameRealPackages(t *testing.T) {
	g := imports(t)
	exists := func(prefix string) bool {
		for p := range g {
			if under(p, prefix) {
				return true
			}
		}
		return false
	}
	imported := func(prefix string) bool {
		for _, imps := range g {
			if slices.ContainsFunc(imps, func(p string) bool { return under(p, prefix) }) {
				return true
			}
		}
		return false
	}
	for _, r := range layerRules {
		for _, list := range [][]string{r.From, r.Forbid, r.Except, r.Exempt} {
			for _, e := range list {
				if _, err := os.Stat(filepath.Join(build.Default.GOROOT, "src", e)); err == nil {
					continue // a standard-library package
				}
				if first, _, _ := strings.Cut(e, "/"); strings.Contains(first, ".") {
					if !imported(e) {
						t.Errorf("rule %q names %s, which no package of the module imports", r.Why, e)
					}
					continue
				}
				if !exists(e) {
					t.Errorf("rule %q names %s, which is no package of the module", r.Why, e)
				}
			}
		}
	}
}
