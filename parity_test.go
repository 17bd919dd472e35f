package isoscope

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check"
	"github.com/isoscope/isoscope/internal/level"
)

// publicConsts returns the values of the root package's string constants
// of the named type, read from its source, so that a constant added
// without a counterpart (or the other way round) is seen.
func publicConsts(t *testing.T, typ string) []string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || id.Name != typ {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("a %s constant whose value is not a string literal: %s", typ, fset.Position(v.Pos()))
					}
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no constants of type %s in the root package", typ)
	}
	return out
}

// errorer is the part of testing.T that same reports through.
type errorer interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder is an errorer that keeps what it is told.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// same reports the names of internal that public lacks and of public that
// internal lacks.
func same(t errorer, what string, internal, public []string) {
	t.Helper()
	for _, n := range internal {
		if !slices.Contains(public, n) {
			t.Errorf("%s %q has no public counterpart in the root package", what, n)
		}
	}
	for _, n := range public {
		if !slices.Contains(internal, n) {
			t.Errorf("public %s %q names nothing internal", what, n)
		}
	}
}

// TestPublicParity holds the public API's lists to the internal ones they
// mirror: every checker, anomaly kind, dependency kind and level has its
// public counterpart, and no public one names something that does not
// exist.
func TestPublicParity(t *testing.T) {
	same(t, "checker", append([]string{"auto"}, check.Names()...), publicConsts(t, "Checker"))

	var kinds []string
	for _, k := range anomaly.Kinds() {
		kinds = append(kinds, k.String())
	}
	same(t, "anomaly kind", kinds, publicConsts(t, "Kind"))

	var internalDeps []string
	for d := anomaly.WW; ; d++ {
		if _, ok := anomaly.ParseDep(d.String()); !ok {
			break
		}
		internalDeps = append(internalDeps, d.String())
	}
	same(t, "dependency", internalDeps, publicConsts(t, "Dep"))
	for _, d := range publicConsts(t, "Dep") {
		if i, ok := deps[Dep(d)]; !ok || i.String() != d {
			t.Errorf("public dependency %q is not mapped to an internal one", d)
		}
	}

	for _, l := range level.All() {
		if fromLevel(l.ID) == 0 {
			t.Errorf("level %s has no public counterpart", l.Name)
		}
	}
	if len(toLevel) != len(level.All()) {
		t.Errorf("%d public levels, %d internal ones", len(toLevel), len(level.All()))
	}
}

// TestPublicParityCatchesDrift runs the comparison on a planted gap: an
// internal name missing from the public list, and a public name with no
// internal counterpart, must both be reported.
func TestPublicParityCatchesDrift(t *testing.T) {
	rec := &recorder{}
	same(rec, "checker", []string{"a", "b"}, []string{"a", "c"})
	if len(rec.errs) != 2 {
		t.Fatalf("planted drift gave %d errors, want 2: %q", len(rec.errs), rec.errs)
	}
}
