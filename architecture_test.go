package isoscope

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architecturePackages returns the packages docs/architecture.md's table
// gives a line each, module-relative ("." for the root).
func architecturePackages(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([^`]+)`( \\(root\\))? \\|")
	var out []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| package | what it is |"):
			in = true
		case in && !strings.HasPrefix(line, "|"):
			in = false
		case in:
			if m := row.FindStringSubmatch(line); m != nil {
				p := m[1]
				if m[2] != "" {
					p = "."
				}
				out = append(out, p)
			}
		}
	}
	return out
}

// TestArchitectureListsEveryPackage holds docs/architecture.md's package
// table to the module: one line per package, none missing, none that no
// longer exists.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc := architecturePackages(t)
	if len(doc) < 20 {
		t.Fatalf("found only %d rows in docs/architecture.md's package table", len(doc))
	}
	g := imports(t)
	for p := range g {
		if otherModule(p) {
			delete(g, p)
		}
	}
	for p := range g {
		if !slices.Contains(doc, p) {
			t.Errorf("package %s has no line in docs/architecture.md's package table", p)
		}
	}
	seen := map[string]bool{}
	for _, p := range doc {
		if _, ok := g[p]; !ok {
			t.Errorf("docs/architecture.md's package table lists %s, which is no package of the module", p)
		}
		if seen[p] {
			t.Errorf("docs/architecture.md's package table lists %s twice", p)
		}
		seen[p] = true
	}
}

// otherModule reports whether package directory p lies in a module of
// its own (a go.mod in it or a directory above it, below the root), as
// bench/ does.
func otherModule(p string) bool {
	for d := p; d != "." && d != "/" && d != ""; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return true
		}
	}
	return false
}
