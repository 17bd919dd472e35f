package sat_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/isoscope/isoscope/internal/sat"
	"github.com/isoscope/isoscope/internal/sat/sattest"
)

// TestRandomCNF: small random formulas of mixed widths against brute force.
// chronoModes are the ChronoAfter settings the random tests cycle
// through: chronological backtracking on every backjump of more than one
// level, the default, and off.
var chronoModes = [3]int{1, 0, -1}

func TestRandomCNF(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 1))
		nvars := 3 + r.IntN(10)
		cls := sattest.RandomClauses(r, nvars, nvars*4+r.IntN(8), 3)
		s := sattest.Solver(nvars, cls)
		s.ChronoAfter = chronoModes[seed%3]
		got, want := s.Solve(), sattest.Brute(nvars, cls, nil)
		if (got == sat.Sat) != want {
			t.Fatalf("seed %d: solver %s, brute force %v", seed, got, want)
		}
		if got == sat.Sat && !sattest.Satisfies(cls, sattest.Model(s)) {
			t.Fatalf("seed %d: the model falsifies a clause", seed)
		}
	}
}

// TestRandom3SATThreshold exercises learning, restarts and clause deletion
// on 3-SAT near the satisfiability threshold, against brute force.
func TestRandom3SATThreshold(t *testing.T) {
	sats := 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 3))
		nvars := 12 + r.IntN(5)
		var cls [][]sat.Lit
		for range int(4.26 * float64(nvars)) {
			c := sattest.RandomClauses(r, nvars, 1, 1)[0]
			for len(c) < 3 {
				c = append(c, sattest.RandomClauses(r, nvars, 1, 1)[0]...)
			}
			cls = append(cls, c)
		}
		s := sattest.Solver(nvars, cls)
		s.ChronoAfter = chronoModes[seed%3]
		got, want := s.Solve(), sattest.Brute(nvars, cls, nil)
		if (got == sat.Sat) != want {
			t.Fatalf("seed %d: %s, brute force %v", seed, got, want)
		}
		if want {
			sats++
		}
	}
	if sats < 60 || sats > 240 {
		t.Errorf("%d of 300 satisfiable: not near the threshold", sats)
	}
}

// TestDIMACSInstances solves the known instances in testdata, whose names
// say their answer.
func TestDIMACSInstances(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.cnf")
	if len(files) < 5 {
		t.Fatalf("only %d instances in testdata", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			f, err := sat.ParseDIMACS(fh)
			if err != nil {
				t.Fatal(err)
			}
			s := sat.New()
			f.Load(s)
			got := s.Solve()
			want := sat.Unsat
			if strings.Contains(path, ".sat.") {
				want = sat.Sat
			}
			if got != want {
				t.Fatalf("%s, want %s", got, want)
			}
			if got == sat.Sat && !f.Satisfied(s.Value) {
				t.Fatal("the model falsifies a clause")
			}
		})
	}
}

func TestParseDIMACSErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1 2 0\n", "line 1: a clause before the header"},
		{"p cnf 2\n", "line 1: header"},
		{"p cnf 2 1\n1 x 0\n", `line 2: "x" is not an integer`},
		{"p cnf 2 1\n1 3 0\n", "line 2: literal 3 is beyond the 2 declared"},
		{"p cnf 2 1\n1 2\n", "the last clause is not ended by 0"},
		{"p cnf 2 2\n1 2 0\n", "declares 2 clauses, the file has 1"},
		{"c nothing\n", "no header"},
		{"p cnf 1 1\np cnf 1 1\n", "line 2: a second header"},
	} {
		_, err := sat.ParseDIMACS(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.in, err, tc.want)
		}
	}
	f, err := sat.ParseDIMACS(strings.NewReader("c x\np cnf 3 2\n1 -3\n 2 0\n0\n%\n0\n"))
	if err != nil || f.NumVars != 3 || len(f.Clauses) != 2 || len(f.Clauses[0]) != 3 || len(f.Clauses[1]) != 0 {
		t.Fatalf("got %+v, %v", f, err)
	}
	if s := sat.New(); f.Load(s) || s.Solve() != sat.Unsat {
		t.Error("an empty clause must make the formula unsatisfiable")
	}
}

func FuzzParseDIMACS(f *testing.F) {
	f.Add([]byte("p cnf 3 2\n1 -2 0\n3 0\n"))
	f.Add([]byte("c c\np cnf 1 1\n-1 0\n%\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cnf, err := sat.ParseDIMACS(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if cnf.NumVars > 12 {
			return
		}
		s := sat.New()
		cnf.Load(s)
		if got, want := s.Solve(), sattest.Brute(cnf.NumVars, cnf.Clauses, nil); (got == sat.Sat) != want {
			t.Fatalf("solver %s, brute force %v", got, want)
		}
	})
}

// TestAssumptions: solving under assumptions agrees with brute force on
// the formula plus the assumptions as units; a failed set is a subset of
// the assumptions that is itself unsatisfiable with the formula; and the
// solver stays usable afterwards.
func TestAssumptions(t *testing.T) {
	failedSets := 0
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 4))
		nvars := 4 + r.IntN(8)
		cls := sattest.RandomClauses(r, nvars, nvars*2+r.IntN(nvars*2), 3)
		s := sattest.Solver(nvars, cls)
		s.ChronoAfter = chronoModes[seed%3]
		for round := range 4 {
			assume := sattest.RandomClauses(r, nvars, 1, 5)[0]
			withUnits := slices.Clone(cls)
			for _, a := range assume {
				withUnits = append(withUnits, []sat.Lit{a})
			}
			got, want := s.SolveAssuming(assume...), sattest.Brute(nvars, withUnits, nil)
			if (got == sat.Sat) != want {
				t.Fatalf("seed %d round %d: %s under %v, brute force %v", seed, round, got, assume, want)
			}
			switch {
			case got == sat.Sat:
				model := sattest.Model(s)
				if !sattest.Satisfies(withUnits, model) {
					t.Fatalf("seed %d round %d: the model breaks a clause or an assumption", seed, round)
				}
			case len(s.Failed()) > 0:
				failedSets++
				core := slices.Clone(cls)
				for _, a := range s.Failed() {
					if !slices.Contains(assume, a) {
						t.Fatalf("seed %d: failed literal %v is not an assumption of %v", seed, a, assume)
					}
					core = append(core, []sat.Lit{a})
				}
				if sattest.Brute(nvars, core, nil) {
					t.Fatalf("seed %d: the failed set %v is satisfiable with the formula", seed, s.Failed())
				}
			case sattest.Brute(nvars, cls, nil):
				t.Fatalf("seed %d: unsat without failed assumptions, yet the formula is satisfiable", seed)
			}
		}
		if got, want := s.Solve(), sattest.Brute(nvars, cls, nil); (got == sat.Sat) != want {
			t.Fatalf("seed %d: after assumptions, plain solve %s, brute force %v", seed, got, want)
		}
	}
	if failedSets < 200 {
		t.Errorf("only %d failed sets: the test does not exercise them", failedSets)
	}
}

// TestPigeonhole: n+1 pigeons do not fit n holes.
func TestPigeonhole(t *testing.T) {
	for n := 3; n <= 6; n++ {
		v := func(p, h int) sat.Var { return sat.Var(p*n + h) }
		var cls [][]sat.Lit
		for p := range n + 1 {
			var c []sat.Lit
			for h := range n {
				c = append(c, sat.Pos(v(p, h)))
			}
			cls = append(cls, c)
		}
		for h := range n {
			for p := range n + 1 {
				for q := p + 1; q <= n; q++ {
					cls = append(cls, []sat.Lit{sat.Neg(v(p, h)), sat.Neg(v(q, h))})
				}
			}
		}
		if got := sattest.Solver((n+1)*n, cls).Solve(); got != sat.Unsat {
			t.Errorf("PHP(%d,%d): %s", n+1, n, got)
		}
	}
}

// TestChronologicalAgrees: on 3-SAT instances too large for brute force,
// near the threshold, the solver backtracking chronologically at every
// chance agrees with the one that never does, its models satisfy every
// clause, and chronological backtracks do happen.
func TestChronologicalAgrees(t *testing.T) {
	var chrono int64
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 5))
		nvars := 40 + r.IntN(20)
		var cls [][]sat.Lit
		for range int(4.26 * float64(nvars)) {
			var c []sat.Lit
			for len(c) < 3 {
				c = append(c, sattest.RandomClauses(r, nvars, 1, 1)[0]...)
			}
			cls = append(cls, c)
		}
		forced, classic := sattest.Solver(nvars, cls), sattest.Solver(nvars, cls)
		forced.ChronoAfter, classic.ChronoAfter = 1, -1
		got, want := forced.Solve(), classic.Solve()
		if got != want {
			t.Fatalf("seed %d: chronological %s, classic %s", seed, got, want)
		}
		if got == sat.Sat && !sattest.Satisfies(cls, sattest.Model(forced)) {
			t.Fatalf("seed %d: the model falsifies a clause", seed)
		}
		chrono += forced.Stats().Chrono
	}
	if chrono == 0 {
		t.Fatal("no chronological backtrack happened")
	}
}

// TestConflictLimit: a solver with a conflict limit below what a refutation
// needs stops with Unknown after exactly that many conflicts and says the
// limit was reached; the same instance, solved again with the limit raised
// past it, is refuted, and one with room enough is refuted without
// reaching it.
func TestConflictLimit(t *testing.T) {
	n := 6
	v := func(p, h int) sat.Var { return sat.Var(p*n + h) }
	var cls [][]sat.Lit
	for p := range n + 1 {
		var c []sat.Lit
		for h := range n {
			c = append(c, sat.Pos(v(p, h)))
		}
		cls = append(cls, c)
	}
	for h := range n {
		for p := range n + 1 {
			for q := p + 1; q <= n; q++ {
				cls = append(cls, []sat.Lit{sat.Neg(v(p, h)), sat.Neg(v(q, h))})
			}
		}
	}
	free := sattest.Solver((n+1)*n, cls)
	if got := free.Solve(); got != sat.Unsat || free.LimitReached() {
		t.Fatalf("without a limit: %s, limit reached %v", got, free.LimitReached())
	}
	need := free.Stats().Conflicts
	if need < 20 {
		t.Fatalf("PHP(%d,%d) took only %d conflicts", n+1, n, need)
	}
	for _, limit := range []int64{1, need / 2, need - 1} {
		s := sattest.Solver((n+1)*n, cls)
		s.ConflictLimit = limit
		if got := s.Solve(); got != sat.Unknown || !s.LimitReached() || s.Stats().Conflicts != limit {
			t.Fatalf("limit %d of %d: %s after %d conflicts, limit reached %v", limit, need, got, s.Stats().Conflicts, s.LimitReached())
		}
		s.ConflictLimit = 0
		if got := s.Solve(); got != sat.Unsat {
			t.Fatalf("limit %d lifted: %s", limit, got)
		}
	}
	s := sattest.Solver((n+1)*n, cls)
	s.ConflictLimit = need + 1
	if got := s.Solve(); got != sat.Unsat || s.LimitReached() || s.Stats().Conflicts != need {
		t.Fatalf("limit %d, %d needed: %s after %d conflicts", need+1, need, got, s.Stats().Conflicts)
	}
}
