// Package sat is a CDCL SAT solver with a theory hook (CDCL(T)): two
// watched literals, first-UIP learning with clause minimisation, VSIDS,
// phase saving, Luby restarts and learned-clause deletion. A Theory is told
// of every assigned literal in trail order and may answer with a conflict
// clause; it is told when the solver backtracks. VeriStrong (Cai et al.,
// PVLDB 2025, §5) builds its checker on such a solver with an acyclicity
// theory (package acyclic).
package sat

import "math"

// Var is a variable, 0-based.
type Var int32

// Lit is a literal: 2v for v, 2v+1 for ¬v.
type Lit int32

// Pos and Neg return the literals of v.
func Pos(v Var) Lit { return Lit(2 * v) }

// Neg returns ¬v.
func Neg(v Var) Lit { return Lit(2*v + 1) }

// Var returns the literal's variable.
func (l Lit) Var() Var { return Var(l >> 1) }

// Not returns the negation.
func (l Lit) Not() Lit { return l ^ 1 }

// IsPos reports whether l is the positive literal.
func (l Lit) IsPos() bool { return l&1 == 0 }

// Status is the answer of Solve.
type Status uint8

// The answers.
const (
	Unknown Status = iota
	Sat
	Unsat
)

// String names the status.
func (s Status) String() string { return [...]string{"unknown", "sat", "unsat"}[s] }

// Theory is told of assignments and backtracks; it may refute the current
// assignment with a conflict clause whose literals are all false.
//
// Assignments are identified by their position on the solver's trail, not
// by decision level: with chronological backtracking a literal can be
// implied at a level below the current one, and a backtrack keeps such
// literals and tells the theory of them again.
type Theory interface {
	// Assign is told that l became true, at position pos of the trail; it
	// returns a conflict clause or nil.
	Assign(l Lit, pos int) []Lit
	// Backtrack is told that every assignment at position pos or later is
	// undone.
	Backtrack(pos int)
	// Phase may choose the polarity of a decision on v.
	Phase(v Var) (positive, ok bool)
}

// Worker is implemented by theories that count their own work (for
// Solver.WorkLimit), in units that do not depend on the machine's speed.
type Worker interface {
	Work() int64
}

// Stats counts the solver's work.
type Stats struct {
	Decisions, Conflicts, Propagations, Restarts, Learned, TheoryConflicts int64
	// Chrono counts the conflicts after which the solver backtracked
	// chronologically.
	Chrono int64
	// Work is the solver's work as WorkLimit counts it (Solver.Work).
	Work int64
}

type clause struct {
	lits    []Lit
	learned bool
	deleted bool
	act     float64
}

// Solver is a CDCL(T) solver.
type Solver struct {
	clauses  []clause
	watches  [][]int32 // per literal: clauses watching it (it is lits[0] or lits[1])
	assign   []int8    // per var: 0 unassigned, 1 true, -1 false
	level    []int32
	reason   []int32 // clause index, or -1
	trail    []Lit
	trailLim []int
	qhead    int
	thead    int // next trail position the theory has not seen
	theory   Theory
	act      []float64
	inc      float64
	heap     varHeap
	phase    []bool
	seen     []bool
	unsat    bool
	// Interrupt is polled now and then; returning true stops Solve with
	// Unknown.
	Interrupt func() bool
	// ConflictLimit, when positive, bounds the conflicts (Stats.Conflicts,
	// counted over the solver's life) after which Solve stops with
	// Unknown. Unlike Interrupt it is a count of work, so where a search
	// stops does not depend on the machine's speed or load.
	ConflictLimit int64
	// WorkLimit, when positive, bounds the solver's work — its
	// propagations plus the theory's own count (Worker) — after which
	// Solve stops with Unknown: a bound, like ConflictLimit, that does not
	// depend on the machine's speed, for searches whose cost lies between
	// conflicts (a theory's searches for cycles).
	WorkLimit int64
	// LastConflict is the theory's last conflict clause.
	LastConflict []Lit
	stats        Stats
	claInc       float64
	learnedCount int
	assumptions  []Lit
	failed       []Lit
	kept         []Lit // scratch for backtrack
	// ChronoAfter is how many decision levels a backjump may undo before
	// the solver backtracks chronologically instead: one level, keeping
	// the assignments below it and asserting the learned literal at its
	// own, lower level (Nadel and Ryvchin, SAT 2018). Zero means
	// DefaultChronoAfter; negative switches chronological backtracking off
	// (for measurements).
	ChronoAfter int
}

// DefaultChronoAfter is ChronoAfter's default. Undoing thousands of levels
// to re-decide the same unrelated variables — the acyclicity theory's
// order-guided decisions are most of them — costs more than the search a
// backjump saves.
const DefaultChronoAfter = 100

// New returns an empty solver.
func New() *Solver {
	s := &Solver{inc: 1, claInc: 1}
	s.heap.act = &s.act
	return s
}

// SetTheory installs the theory.
func (s *Solver) SetTheory(t Theory) { s.theory = t }

// NewVar adds a variable.
func (s *Solver) NewVar() Var {
	v := Var(len(s.assign))
	s.assign = append(s.assign, 0)
	s.level = append(s.level, 0)
	s.reason = append(s.reason, -1)
	s.act = append(s.act, 0)
	s.phase = append(s.phase, false)
	s.seen = append(s.seen, false)
	s.watches = append(s.watches, nil, nil)
	s.heap.insert(v)
	return v
}

// NumVars returns the number of variables.
func (s *Solver) NumVars() int { return len(s.assign) }

// Stats returns the work counters.
func (s *Solver) Stats() Stats {
	st := s.stats
	st.Work = s.Work()
	return st
}

func (s *Solver) value(l Lit) int8 {
	v := s.assign[l.Var()]
	if l.IsPos() {
		return v
	}
	return -v
}

// Value returns v's value in the model after Sat.
func (s *Solver) Value(v Var) bool { return s.assign[v] > 0 }

// DecisionLevel returns the current decision level.
func (s *Solver) DecisionLevel() int { return len(s.trailLim) }

// AddClause adds a clause at level 0. It returns false once the formula is
// known unsatisfiable.
func (s *Solver) AddClause(lits ...Lit) bool {
	if s.unsat {
		return false
	}
	s.backtrack(0)
	out := make([]Lit, 0, len(lits))
	for _, l := range lits {
		switch s.value(l) {
		case 1:
			return true // satisfied at level 0
		case -1:
			continue
		}
		dup, taut := false, false
		for _, o := range out {
			dup = dup || o == l
			taut = taut || o == l.Not()
		}
		if taut {
			return true
		}
		if !dup {
			out = append(out, l)
		}
	}
	switch len(out) {
	case 0:
		s.unsat = true
		return false
	case 1:
		s.enqueue(out[0], -1)
		if s.propagate() >= 0 {
			s.unsat = true
			return false
		}
		return true
	}
	s.attach(out, false)
	return true
}

func (s *Solver) attach(lits []Lit, learned bool) int32 {
	ci := int32(len(s.clauses))
	s.clauses = append(s.clauses, clause{lits: lits, learned: learned})
	s.watches[lits[0]] = append(s.watches[lits[0]], ci)
	s.watches[lits[1]] = append(s.watches[lits[1]], ci)
	return ci
}

func (s *Solver) enqueue(l Lit, reason int32) {
	s.enqueueAt(l, reason, int32(len(s.trailLim)))
}

// enqueueAt assigns l at decision level level, which may be below the
// current one (chronological backtracking).
func (s *Solver) enqueueAt(l Lit, reason int32, level int32) {
	v := l.Var()
	if l.IsPos() {
		s.assign[v] = 1
	} else {
		s.assign[v] = -1
	}
	s.level[v] = level
	s.reason[v] = reason
	s.trail = append(s.trail, l)
}

// propagate runs unit propagation; it returns a conflicting clause or -1.
// Watches are on literals that must not be false: when l becomes true, the
// clauses watching ¬l are visited.
func (s *Solver) propagate() int32 {
	for s.qhead < len(s.trail) {
		p := s.trail[s.qhead]
		s.qhead++
		s.stats.Propagations++
		falseLit := p.Not()
		ws := s.watches[falseLit]
		j := 0
		for i := 0; i < len(ws); i++ {
			ci := ws[i]
			c := &s.clauses[ci]
			if c.deleted {
				continue
			}
			lits := c.lits
			if lits[0] == falseLit {
				lits[0], lits[1] = lits[1], lits[0]
			}
			if s.value(lits[0]) == 1 {
				ws[j] = ci
				j++
				continue
			}
			moved := false
			lv := s.level[falseLit.Var()] // the level the clause is unit at
			for k := 2; k < len(lits); k++ {
				if s.value(lits[k]) != -1 {
					lits[1], lits[k] = lits[k], lits[1]
					s.watches[lits[1]] = append(s.watches[lits[1]], ci)
					moved = true
					break
				}
				lv = max(lv, s.level[lits[k].Var()])
			}
			if moved {
				continue
			}
			ws[j] = ci
			j++
			if s.value(lits[0]) == -1 {
				copy(ws[j:], ws[i+1:])
				j += len(ws) - i - 1
				s.watches[falseLit] = ws[:j]
				s.qhead = len(s.trail)
				return ci
			}
			s.enqueueAt(lits[0], ci, lv)
		}
		s.watches[falseLit] = ws[:j]
	}
	return -1
}

// backtrack undoes every assignment above decision level level. Literals
// implied at or below it but placed later on the trail (chronological
// backtracking) stay, moved down, and are propagated and told to the
// theory again.
func (s *Solver) backtrack(level int) {
	if len(s.trailLim) <= level {
		return
	}
	lim := s.trailLim[level]
	kept := s.kept[:0]
	for i := lim; i < len(s.trail); i++ {
		l := s.trail[i]
		v := l.Var()
		if int(s.level[v]) <= level {
			kept = append(kept, l)
			continue
		}
		s.phase[v] = s.assign[v] > 0
		s.assign[v] = 0
		s.reason[v] = -1
		s.heap.insert(v)
	}
	s.trail = append(s.trail[:lim], kept...)
	s.kept = kept[:0]
	s.trailLim = s.trailLim[:level]
	s.qhead = lim
	if s.thead > lim {
		s.thead = lim
	}
	if s.theory != nil {
		s.theory.Backtrack(lim)
	}
}

func (s *Solver) bumpVar(v Var) {
	s.act[v] += s.inc
	if s.act[v] > 1e100 {
		for i := range s.act {
			s.act[i] *= 1e-100
		}
		s.inc *= 1e-100
	}
	s.heap.update(v)
}

func luby(y float64, x int) float64 {
	size, seq := 1, 0
	for size < x+1 {
		seq++
		size = 2*size + 1
	}
	for size-1 != x {
		size = (size - 1) >> 1
		seq--
		x %= size
	}
	return math.Pow(y, float64(seq))
}
