package sat

import "slices"

// Solve decides the clauses together with the theory.
func (s *Solver) Solve() Status { return s.SolveAssuming() }

// SolveAssuming decides the clauses and the theory under the assumptions:
// literals taken as true for this call only (MiniSat's incremental
// interface). Unsat with a non-empty Failed means the formula is
// unsatisfiable under the assumptions alone; the solver stays usable, and
// what it learned stays valid. Unsat with an empty Failed means the formula
// itself is unsatisfiable.
func (s *Solver) SolveAssuming(assumptions ...Lit) Status {
	s.assumptions = append(s.assumptions[:0], assumptions...)
	s.failed = s.failed[:0]
	defer func() { s.assumptions = s.assumptions[:0] }()
	if s.unsat {
		return Unsat
	}
	if c, ok := s.theory.(interface{ Contradicted() bool }); ok && c.Contradicted() {
		s.unsat = true
		return Unsat
	}
	s.backtrack(0)
	for restarts := 0; ; restarts++ {
		st := s.search(int64(luby(2, restarts) * 100))
		if st != Unknown {
			return st
		}
		if s.overLimit() || s.Interrupt != nil && s.Interrupt() {
			s.backtrack(0)
			return Unknown
		}
		s.stats.Restarts++
	}
}

// overLimit reports whether the solver has met ConflictLimit or
// WorkLimit.
func (s *Solver) overLimit() bool {
	return s.ConflictLimit > 0 && s.stats.Conflicts >= s.ConflictLimit ||
		s.WorkLimit > 0 && s.Work() >= s.WorkLimit
}

// Work is the solver's work so far, as WorkLimit counts it: propagations,
// plus the theory's own count when it keeps one (Worker).
func (s *Solver) Work() int64 {
	w := s.stats.Propagations
	if t, ok := s.theory.(Worker); ok {
		w += t.Work()
	}
	return w
}

// LimitReached reports whether the last Solve returned Unknown because
// the solver had met ConflictLimit or WorkLimit.
func (s *Solver) LimitReached() bool { return s.overLimit() }

// search runs until a verdict or until limit conflicts (then Unknown).
func (s *Solver) search(limit int64) Status {
	var conflicts int64
	for {
		var confl []Lit
		if ci := s.propagate(); ci >= 0 {
			confl = s.clauses[ci].lits
		} else {
			confl = s.theoryPropagate()
		}
		if confl != nil {
			s.stats.Conflicts++
			conflicts++
			if !s.resolve(confl) {
				s.unsat = true
				return Unsat
			}
			if s.overLimit() {
				return Unknown
			}
			if conflicts%16 == 0 && s.Interrupt != nil && s.Interrupt() {
				return Unknown
			}
			continue
		}
		if conflicts >= limit {
			s.backtrack(s.reusableLevel())
			return Unknown
		}
		if s.learnedCount > 20000+len(s.assign)/2+int(s.stats.Conflicts/4) {
			s.reduce()
		}
		if a, st := s.nextAssumption(); st != Unknown {
			return st
		} else if a >= 0 {
			s.trailLim = append(s.trailLim, len(s.trail))
			s.enqueue(a, -1)
			continue
		}
		v, ok := s.pick()
		if !ok {
			return Sat
		}
		s.stats.Decisions++
		if s.stats.Decisions%4096 == 0 && s.Interrupt != nil && s.Interrupt() {
			return Unknown
		}
		if s.WorkLimit > 0 && s.Work() >= s.WorkLimit {
			return Unknown
		}
		s.trailLim = append(s.trailLim, len(s.trail))
		pos := s.phase[v]
		if s.theory != nil {
			if p, ok := s.theory.Phase(v); ok {
				pos = p
			}
		}
		if pos {
			s.enqueue(Pos(v), -1)
		} else {
			s.enqueue(Neg(v), -1)
		}
	}
}

// theoryPropagate tells the theory of the literals it has not seen; it
// returns the theory's conflict clause or nil.
func (s *Solver) theoryPropagate() []Lit {
	if s.theory == nil {
		return nil
	}
	for s.thead < len(s.trail) {
		l := s.trail[s.thead]
		s.thead++
		if c := s.theory.Assign(l, s.thead-1); c != nil {
			s.stats.TheoryConflicts++
			s.LastConflict = append(s.LastConflict[:0], c...)
			return append([]Lit(nil), c...)
		}
	}
	return nil
}

// resolve handles a conflict clause (all literals false): it learns a
// clause, backjumps and asserts. It returns false when the conflict holds
// at level 0.
func (s *Solver) resolve(confl []Lit) bool {
	max := 0
	for _, l := range confl {
		if lv := int(s.level[l.Var()]); lv > max {
			max = lv
		}
	}
	if max == 0 {
		return false
	}
	if max < s.DecisionLevel() {
		s.backtrack(max) // a theory conflict found late
	}
	atTop := 0
	for _, l := range confl {
		if int(s.level[l.Var()]) == max {
			atTop++
		}
	}
	var learnt []Lit
	if atTop == 1 {
		learnt = slices.Clone(confl)
		for i, l := range learnt {
			if int(s.level[l.Var()]) == max {
				learnt[0], learnt[i] = learnt[i], learnt[0]
			}
		}
		for _, l := range learnt {
			s.bumpVar(l.Var())
		}
	} else {
		learnt = s.analyze(confl)
	}
	bt := 0
	for i := 1; i < len(learnt); i++ {
		if lv := int(s.level[learnt[i].Var()]); lv > bt {
			bt = lv
			learnt[1], learnt[i] = learnt[i], learnt[1]
		}
	}
	s.inc /= 0.95
	target, after := bt, s.ChronoAfter
	if after == 0 {
		after = DefaultChronoAfter
	}
	if after > 0 && s.DecisionLevel()-bt > after && s.DecisionLevel()-1 > len(s.assumptions) {
		target = s.DecisionLevel() - 1
		s.stats.Chrono++
	}
	s.backtrack(target)
	if len(learnt) == 1 {
		s.enqueueAt(learnt[0], -1, 0) // a fact
		return true
	}
	ci := s.attach(learnt, true)
	s.clauses[ci].act = s.claInc
	s.claInc /= 0.999
	s.learnedCount++
	s.stats.Learned++
	s.enqueueAt(learnt[0], ci, int32(bt))
	return true
}

// analyze derives the first-UIP clause of a conflict whose literals are all
// false, at least two of them at the current level; the asserting literal
// comes first.
func (s *Solver) analyze(confl []Lit) []Lit {
	d := int32(s.DecisionLevel())
	learnt := []Lit{0}
	pathC := 0
	var p Lit = -1
	idx := len(s.trail) - 1
	lits := confl
	for {
		for _, q := range lits {
			if q == p {
				continue
			}
			v := q.Var()
			if s.seen[v] || s.level[v] == 0 {
				continue
			}
			s.seen[v] = true
			s.bumpVar(v)
			if s.level[v] == d {
				pathC++
			} else {
				learnt = append(learnt, q)
			}
		}
		// Only literals of the conflict's level count: with chronological
		// backtracking, lower ones can sit among them on the trail.
		for v := s.trail[idx].Var(); !s.seen[v] || s.level[v] != d; v = s.trail[idx].Var() {
			idx--
		}
		p = s.trail[idx]
		idx--
		s.seen[p.Var()] = false
		pathC--
		if pathC == 0 {
			break
		}
		r := s.reason[p.Var()]
		lits = s.clauses[r].lits
		if r >= 0 && s.clauses[r].learned {
			s.clauses[r].act += s.claInc
		}
	}
	learnt[0] = p.Not()
	// Minimise: drop a literal whose reason's other literals are all in
	// the clause (or fixed at level 0).
	out := make([]Lit, 1, len(learnt))
	out[0] = learnt[0]
	for _, l := range learnt[1:] {
		r := s.reason[l.Var()]
		if r < 0 || !s.redundant(r) {
			out = append(out, l)
		}
	}
	for _, l := range learnt[1:] {
		s.seen[l.Var()] = false
	}
	return out
}

func (s *Solver) redundant(r int32) bool {
	for _, q := range s.clauses[r].lits[1:] {
		if !s.seen[q.Var()] && s.level[q.Var()] > 0 {
			return false
		}
	}
	return true
}

// reusableLevel is where a restart backtracks to (van der Tak, Ramos and
// Heule, "Reusing the assignment trail in CDCL solvers", JSAT 2011): the
// decisions more active than the variable a restart would decide first
// would be made again, in the same order, so their levels stay.
func (s *Solver) reusableLevel() int {
	next, ok := s.pick()
	if !ok {
		return 0
	}
	s.heap.insert(next)
	lvl := len(s.assumptions)
	for ; lvl < len(s.trailLim) && s.trailLim[lvl] < len(s.trail); lvl++ {
		if s.act[s.trail[s.trailLim[lvl]].Var()] < s.act[next] {
			break
		}
	}
	return min(lvl, len(s.trailLim))
}

// pick returns the unassigned variable of highest activity.
func (s *Solver) pick() (Var, bool) {
	for s.heap.len() > 0 {
		v := s.heap.pop()
		if s.assign[v] == 0 {
			return v, true
		}
	}
	return 0, false
}

// reduce deletes the less active half of the learned clauses that are not
// the reason of an assignment.
func (s *Solver) reduce() {
	var cand []int32
	for i := range s.clauses {
		c := &s.clauses[i]
		if !c.learned || c.deleted || len(c.lits) <= 2 {
			continue
		}
		v := c.lits[0].Var()
		if s.reason[v] == int32(i) && s.value(c.lits[0]) == 1 {
			continue // locked
		}
		cand = append(cand, int32(i))
	}
	slices.SortFunc(cand, func(a, b int32) int {
		switch {
		case s.clauses[a].act < s.clauses[b].act:
			return -1
		case s.clauses[a].act > s.clauses[b].act:
			return 1
		}
		return 0
	})
	for _, ci := range cand[:len(cand)/2] {
		s.clauses[ci].deleted = true
		s.clauses[ci].lits = s.clauses[ci].lits[:2] // keep watches valid; skipped as deleted
		s.learnedCount--
	}
}

// varHeap is a max-heap of variables by activity.
type varHeap struct {
	act  *[]float64
	heap []Var
	pos  []int32 // -1: not in the heap
}

func (h *varHeap) len() int { return len(h.heap) }

func (h *varHeap) less(a, b Var) bool { return (*h.act)[a] > (*h.act)[b] }

func (h *varHeap) insert(v Var) {
	for int(v) >= len(h.pos) {
		h.pos = append(h.pos, -1)
	}
	if h.pos[v] >= 0 {
		return
	}
	h.pos[v] = int32(len(h.heap))
	h.heap = append(h.heap, v)
	h.up(int(h.pos[v]))
}

func (h *varHeap) update(v Var) {
	if int(v) < len(h.pos) && h.pos[v] >= 0 {
		h.up(int(h.pos[v]))
	}
}

func (h *varHeap) pop() Var {
	v := h.heap[0]
	last := h.heap[len(h.heap)-1]
	h.heap = h.heap[:len(h.heap)-1]
	h.pos[v] = -1
	if len(h.heap) > 0 {
		h.heap[0] = last
		h.pos[last] = 0
		h.down(0)
	}
	return v
}

func (h *varHeap) up(i int) {
	v := h.heap[i]
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(v, h.heap[p]) {
			break
		}
		h.heap[i] = h.heap[p]
		h.pos[h.heap[i]] = int32(i)
		i = p
	}
	h.heap[i] = v
	h.pos[v] = int32(i)
}

func (h *varHeap) down(i int) {
	v := h.heap[i]
	for {
		c := 2*i + 1
		if c >= len(h.heap) {
			break
		}
		if c+1 < len(h.heap) && h.less(h.heap[c+1], h.heap[c]) {
			c++
		}
		if !h.less(h.heap[c], v) {
			break
		}
		h.heap[i] = h.heap[c]
		h.pos[h.heap[i]] = int32(i)
		i = c
	}
	h.heap[i] = v
	h.pos[v] = int32(i)
}

// nextAssumption opens a decision level for each assumption in turn: it
// returns the next one to assert (or -1 when all hold), and Unsat when one
// is already false, after collecting the assumptions that force that.
// Assumption i sits at decision level i+1; one already true gets an empty
// level, so the levels stay aligned.
func (s *Solver) nextAssumption() (Lit, Status) {
	for s.DecisionLevel() < len(s.assumptions) {
		p := s.assumptions[s.DecisionLevel()]
		switch s.value(p) {
		case 1:
			s.trailLim = append(s.trailLim, len(s.trail))
		case -1:
			s.analyzeFinal(p)
			return -1, Unsat
		default:
			return p, Unknown
		}
	}
	return -1, Unknown
}

// analyzeFinal collects in failed the assumptions that imply ¬p (p is a
// false assumption): walking the trail back, a literal with a reason
// clause passes the mark to the clause's other literals, and a marked
// literal without one above level 0 is an assumption.
func (s *Solver) analyzeFinal(p Lit) {
	s.failed = append(s.failed[:0], p)
	if s.level[p.Var()] == 0 {
		return
	}
	s.seen[p.Var()] = true
	for i := len(s.trail) - 1; i >= s.trailLim[0]; i-- {
		v := s.trail[i].Var()
		if !s.seen[v] {
			continue
		}
		s.seen[v] = false
		r := s.reason[v]
		if r < 0 {
			s.failed = append(s.failed, s.trail[i])
			continue
		}
		for _, q := range s.clauses[r].lits[1:] {
			if s.level[q.Var()] > 0 {
				s.seen[q.Var()] = true
			}
		}
	}
	s.backtrack(0)
}

// Failed returns, after SolveAssuming answered Unsat, a subset of the
// assumptions that is unsatisfiable with the formula (empty when the
// formula alone is unsatisfiable). It is valid until the next call.
func (s *Solver) Failed() []Lit { return s.failed }
