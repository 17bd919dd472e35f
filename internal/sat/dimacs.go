package sat

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// CNF is a formula in conjunctive normal form, as DIMACS files hold one.
type CNF struct {
	// NumVars is the number of variables the header declares.
	NumVars int
	// Clauses are the clauses in file order.
	Clauses [][]Lit
}

// maxDIMACSVars bounds the declared variable count, so a corrupt header
// cannot make the reader allocate without limit.
const maxDIMACSVars = 1 << 28

// ParseDIMACS reads a DIMACS CNF formula: comment lines starting with 'c',
// the header "p cnf VARS CLAUSES", then clauses as whitespace-separated
// non-zero integers (v for variable v, -v for its negation), each ended by
// 0; a clause may span lines. A line starting with '%' ends the input, as
// in the SATLIB files. Errors name the line and what is wrong.
func ParseDIMACS(r io.Reader) (*CNF, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	var f CNF
	header, declared, line := false, 0, 0
	var clause []Lit
	fail := func(format string, args ...any) (*CNF, error) {
		return nil, fmt.Errorf("dimacs: line %d: %s", line, fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		switch {
		case len(text) == 0 || text[0] == 'c':
			continue
		case text[0] == '%':
			goto done
		case text[0] == 'p':
			fs := bytes.Fields(text)
			if header {
				return fail("a second header")
			}
			if len(fs) != 4 || string(fs[1]) != "cnf" {
				return fail("header %q is not \"p cnf VARS CLAUSES\"", text)
			}
			v, err1 := strconv.Atoi(string(fs[2]))
			c, err2 := strconv.Atoi(string(fs[3]))
			if err1 != nil || err2 != nil || v < 0 || c < 0 || v > maxDIMACSVars {
				return fail("header %q: counts must be integers in 0..%d", text, maxDIMACSVars)
			}
			f.NumVars, declared, header = v, c, true
			continue
		case !header:
			return fail("a clause before the header \"p cnf VARS CLAUSES\"")
		}
		for tok := range bytes.FieldsSeq(text) {
			d, err := strconv.Atoi(string(tok))
			if err != nil {
				return fail("%q is not an integer literal", tok)
			}
			switch {
			case d == 0:
				f.Clauses = append(f.Clauses, clause)
				clause = nil
			case d > f.NumVars || -d > f.NumVars:
				return fail("literal %d is beyond the %d declared variables", d, f.NumVars)
			case d > 0:
				clause = append(clause, Pos(Var(d-1)))
			default:
				clause = append(clause, Neg(Var(-d-1)))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fail("%v", err)
	}
done:
	switch {
	case !header:
		return fail("no header \"p cnf VARS CLAUSES\"")
	case clause != nil:
		return fail("the last clause is not ended by 0")
	case len(f.Clauses) != declared:
		return fail("the header declares %d clauses, the file has %d", declared, len(f.Clauses))
	}
	return &f, nil
}

// Load adds the formula's variables and clauses to s. It returns false
// when the clauses are already known unsatisfiable.
func (f *CNF) Load(s *Solver) bool {
	for s.NumVars() < f.NumVars {
		s.NewVar()
	}
	ok := true
	for _, c := range f.Clauses {
		ok = s.AddClause(c...) && ok
	}
	return ok
}

// Satisfied reports whether the assignment value satisfies every clause.
func (f *CNF) Satisfied(value func(Var) bool) bool {
	for _, c := range f.Clauses {
		sat := false
		for _, l := range c {
			if value(l.Var()) == l.IsPos() {
				sat = true
				break
			}
		}
		if !sat {
			return false
		}
	}
	return true
}
