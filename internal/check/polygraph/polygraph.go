// Package polygraph decides every isolation level — serializability,
// snapshot isolation and strict serializability among them, the weak Adya
// levels and the axiomatic ones (docs/levels.md) — of general read/write
// histories — blind writes,
// duplicate values, any number of operations — by encoding the history's
// hyper-polygraph (VeriStrong, Cai et al., PVLDB 2025, §3) as SAT clauses
// plus an acyclicity theory and solving it with isoscope's own CDCL(T)
// solver (internal/sat, internal/sat/acyclic).
//
// The pipeline: Build (known graph, the writers of each key in pairs to
// order, reads with their candidate writers) → Prune (decide pairs that a
// known path already orders, to a fixpoint: VeriStrong §6.1.1) → a cycle
// search on the known graph (a cycle there is an exact counterexample) →
// Encode (pair and candidate variables; anti-dependencies as r ↔ wr ∧ ww;
// snapshot isolation on the split graph of MTC's Definition 6, every cycle
// needing a dependency edge before each anti-dependency) → Solve.
//
// When the solver refutes the formula, the counterexample is the cycle of
// its last theory conflict: a real cycle under one choice of the uncertain
// dependencies, marked as such in the result.
package polygraph

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/isoscope/isoscope/internal/check/checker"

	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/check/dsg"
	"github.com/isoscope/isoscope/internal/check/ir"
	"github.com/isoscope/isoscope/internal/graph"
	"github.com/isoscope/isoscope/internal/history"
	"github.com/isoscope/isoscope/internal/level"
	"github.com/isoscope/isoscope/internal/sat"
	"github.com/isoscope/isoscope/internal/sat/acyclic"
)

// Checker is the solver-backed checker, named "sat".
type Checker struct {
	// NoPrune switches pruning off, NoPhase the order-guided polarity
	// (topological prioritisation), NoTwoWidth the 2-width cycle clauses
	// and NoChrono the solver's chronological backtracking (for
	// measurements).
	NoPrune, NoPhase, NoTwoWidth, NoChrono bool
	// NoShrink skips the counterexample search after a refutation.
	NoShrink bool
	// NoUnsatSearch skips the unsat search (checking windows of the
	// history on their own) when the whole encoding is too large.
	NoUnsatSearch bool
	// Limits bound the check's work: the encoding's size, each solver
	// search, and the counterexample searches.
	checker.Limits
	// Modules extend the ASG before the search (checker.Module); the header's
	// version order is always applied.
	Modules []checker.Module
	// BCGraph encodes snapshot isolation on Viper's begin/commit-node
	// graph instead of the split graph (the checker named "sat-bc").
	BCGraph bool
	// Dense makes every two writers of a key a pair, as VeriStrong does,
	// instead of only those the known graph leaves unordered (for
	// measurements and differential tests).
	Dense bool
	// MemoryLimit bounds, in bytes, what the construction keeps (the
	// reads' candidate writers, the pairs of writers, known and derived
	// edges, clauses), counted as it grows: a history that needs more is
	// undecided (a *MemoryError) instead of exhausting the machine. Zero
	// sets no bound.
	MemoryLimit int64
}

// Name returns "sat", or "sat-bc" with BCGraph.
func (c Checker) Name() string {
	if c.BCGraph {
		return "sat-bc"
	}
	return "sat"
}

// Capabilities: the solver takes white-box version orders, every
// read-your-own-writes policy (the observations it checks follow the
// index's), modules and the switches of its optimisations, and it
// searches.
func (Checker) Capabilities() checker.Capabilities {
	return checker.Capabilities{VersionOrder: true, OwnReads: true, Modules: true, Search: true}
}

// Plan decides (as Decides) and returns the check of ix at l, configured
// by o: its modules, switches and limits on top of c's own (a switch set
// on c stays set; a limit o sets replaces c's), its memory bound, and
// whether it shrinks a counterexample.
func (c Checker) Plan(ix *history.Index, l level.Level, o checker.Options) (checker.Check, error) {
	if err := c.Decides(ix, l); err != nil {
		return nil, err
	}
	c = c.configured(o)
	return func(ctx context.Context) ([]anomaly.Anomaly, error) { return c.Check(ctx, ix, l) }, nil
}

// configured returns c with o applied.
func (c Checker) configured(o checker.Options) Checker {
	c.Modules = append(slices.Clone(c.Modules), o.Modules...)
	t := o.Tuning
	c.NoPrune = c.NoPrune || t.NoPrune
	c.NoPhase = c.NoPhase || t.NoPhase
	c.NoTwoWidth = c.NoTwoWidth || t.NoTwoWidth
	c.NoChrono = c.NoChrono || t.NoChrono
	c.NoUnsatSearch = c.NoUnsatSearch || t.NoUnsatSearch
	c.Dense = c.Dense || t.Dense
	c.NoShrink = c.NoShrink || o.NoShrink
	if o.MemoryLimit > 0 {
		c.MemoryLimit = o.MemoryLimit
	}
	l := o.Limits
	if l.MaxDerived != 0 {
		c.MaxDerived = l.MaxDerived
	}
	if l.Conflicts != 0 {
		c.Conflicts = l.Conflicts
	}
	if l.Work != 0 {
		c.Work = l.Work
	}
	if l.ShrinkWork != 0 {
		c.ShrinkWork = l.ShrinkWork
	}
	if l.ShrinkConflicts != 0 {
		c.ShrinkConflicts = l.ShrinkConflicts
	}
	if l.ShrinkSolverWork != 0 {
		c.ShrinkSolverWork = l.ShrinkSolverWork
	}
	return c
}

// Decides accepts every level (read uncommitted, read committed, cursor
// stability, PL-2+, PL-FCV, repeatable read, snapshot isolation,
// serializability, strict serializability; rc-session, read atomic,
// causal and prefix consistency; generalized SI and plain
// serializability) on histories of reads, writes, deletes, scans and
// iterators.
func (Checker) Decides(ix *history.Index, l level.Level) error {
	if _, ok := specOf(l, nil); !ok {
		return fmt.Errorf("it does not decide %s", l.Name)
	}
	h := ix.History()
	for i := range h.Txns {
		t := history.TxnID(i)
		if !ix.Effective(t) {
			continue
		}
		for _, op := range h.Txns[i].Ops {
			if op.Kind == history.Append || op.Kind == history.ReadList {
				return fmt.Errorf("transaction %s has %s operation; it handles reads, writes, deletes, scans and iterators", h.TxnName(t), op.Kind.Noun())
			}
		}
		if l.RealTime && !h.Txns[i].HasTime {
			return fmt.Errorf("strict serializability needs begin and end instants; transaction %s (line %d) has none", h.TxnName(t), h.Txns[i].Line)
		}
	}
	return nil
}

// Stats describes one solver check, for benchmarks.
type Stats struct {
	Txns, Reads, Pairs, PrunedPairs, Vars, Clauses, TwoWidth int
	// Edges counts the IR's edges, known and conditioned.
	Edges int
	// Derived estimates the costly anti-dependencies of the encoding (see
	// derivedEstimate), counted up to just past Limits.MaxDerived.
	Derived int
	Result  sat.Status
	// Build, Prune, Encode and Solve are the time each phase took.
	Build, Prune, Encode, Solve time.Duration
	Solver                      sat.Stats
}

// Check builds, prunes, encodes and solves.
func (c Checker) Check(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	found, _, err := c.Run(ctx, ix, l)
	return found, err
}

// Run is Check with statistics.
func (c Checker) Run(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, Stats, error) {
	h := ix.History()
	start := time.Now()
	p, err := build(ctx, ix, l, c.Dense, c.MemoryLimit, c.Modules...)
	if err != nil {
		return nil, Stats{}, err
	}
	si := p.spec.split
	st := Stats{Txns: len(h.Txns), Reads: len(p.Reads), Pairs: len(p.Pairs)}
	st.Build = time.Since(start)
	if len(p.lost) > 0 {
		return p.lost, st, nil
	}
	start = time.Now()
	if !c.NoPrune && (p.spec.anti || p.spec.cursor) {
		st.PrunedPairs, _ = p.Prune(si, 0)
	}
	if err := p.Err(); err != nil {
		return nil, st, err
	}
	found, err := p.knownCycles(ctx, ix, l)
	st.Prune = time.Since(start)
	if len(found) > 0 || err != nil {
		return found, st, err
	}
	if !p.spec.anti && !p.spec.cursor && len(p.Choices) == 0 && p.spec.infer == level.NoAxiom {
		// Without anti-dependencies (or a module's superpositions, or an
		// axiom's inferences) no search is needed (see place).
		start = time.Now()
		found = p.place()
		st.Solve = time.Since(start)
		return found, st, nil
	}
	maxDerived := maxDerived(c.Limits)
	n := p.derivedEstimate(maxDerived)
	st.Derived = n
	if err := p.Err(); err != nil {
		return nil, st, err
	}
	var tooLarge error
	switch {
	case n > maxDerived:
		tooLarge = &TooLargeError{Derived: n, Max: maxDerived}
	case p.g.limit > 0 && p.g.used+int64(n)*derivedBytes > p.g.limit:
		tooLarge = &MemoryError{Limit: p.g.limit, What: fmt.Sprintf("the %d conjunctions of anti-dependencies through undecided write orders", n)}
	}
	if tooLarge != nil {
		if !c.NoUnsatSearch {
			if a, ok := c.unsatSearch(ctx, ix, l); ok {
				return []anomaly.Anomaly{a}, st, nil
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, st, err
		}
		return nil, st, tooLarge
	}
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	start = time.Now()
	auxN, chain := 0, [][2]int32(nil)
	if l.RealTime {
		auxN, chain = dsg.RealTimeChain(h, p.Present)
	}
	checker.MeterFrom(ctx).SetPhase("encoding")
	enc, err := Encode(ctx, p, si, auxN, !c.NoTwoWidth, c.BCGraph)
	if err != nil {
		return nil, st, err
	}
	for _, ed := range chain {
		enc.FixedEdge(enc.graphNode(ed[0]), enc.graphNode(ed[1]), anomaly.RT)
	}
	enc.ForbidLostUpdates()
	low, err := lower(ctx, enc.G, ir.Options{NoPhase: c.NoPhase, Rule: p.spec.rule})
	if err != nil {
		return nil, st, err
	}
	if c.NoChrono {
		low.S.ChronoAfter = -1
	}
	low.S.ConflictLimit, low.S.WorkLimit = c.Conflicts, c.Work
	st.Vars, st.Clauses, st.TwoWidth, st.Edges = low.S.NumVars(), low.Clauses, enc.TwoWidth, enc.G.NumEdges()
	st.Encode = time.Since(start)
	start = time.Now()
	low.S.Interrupt = interrupt(ctx, low.S)
	checker.MeterFrom(ctx).Solving(low.S.NumVars(), low.Clauses)
	st.Result = low.S.Solve()
	st.Solve, st.Solver = time.Since(start), low.S.Stats()
	switch st.Result {
	case sat.Sat:
		return nil, st, nil
	case sat.Unsat:
		a, ok := enc.refutation(ctx, low, c.Limits)
		if !c.NoShrink {
			if small, ok := c.shrink(ctx, ix, l, a); ok {
				return []anomaly.Anomaly{small}, st, nil
			}
		}
		if ok {
			return []anomaly.Anomaly{a}, st, nil
		}
		if enc.TwoWidth > 0 {
			// The refutation needed no cycle from the theory: the 2-width
			// clauses held the dsg. Without them the theory must meet one.
			plain, err := Encode(ctx, p, si, auxN, false, c.BCGraph)
			if err != nil {
				return nil, st, err
			}
			for _, ed := range chain {
				plain.FixedEdge(plain.graphNode(ed[0]), plain.graphNode(ed[1]), anomaly.RT)
			}
			plain.ForbidLostUpdates()
			pl, err := lower(ctx, plain.G, ir.Options{Rule: p.spec.rule})
			if err != nil {
				return nil, st, err
			}
			pl.S.Interrupt, pl.S.ConflictLimit, pl.S.WorkLimit = low.S.Interrupt, c.Conflicts, c.Work
			if pl.S.Solve() == sat.Unsat {
				if a, ok := plain.refutation(ctx, pl, c.Limits); ok {
					return []anomaly.Anomaly{a}, st, nil
				}
			}
		}
		return []anomaly.Anomaly{{Kind: anomaly.Cycle, Phenomenon: anomaly.G2, Key: history.NoKey, BestFound: true}}, st, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	if low.S.LimitReached() {
		return nil, st, &BudgetError{Conflicts: c.Conflicts, Work: c.Work}
	}
	return nil, st, fmt.Errorf("the solver gave up without a verdict")
}

// TooLargeError says the encoding would derive more anti-dependencies than
// Limits.MaxDerived allows: the check is undecided, not failed. Past the
// bound the check is undecided, with the reason, rather than exhaust
// memory (see DefaultMaxDerived).
type TooLargeError struct {
	// Derived estimates the anti-dependencies the encoding would hold,
	// and Max is the bound it passed.
	Derived, Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the solver encoding would need %d conjunctions for anti-dependencies through undecided write orders, more than the %d it is allowed (repeated values over many concurrent writers of few keys); no window of the history violates the level on its own", e.Derived, e.Max)
}

// Is makes the error checker.ErrUndecided: the history is neither
// accepted nor refuted.
func (e *TooLargeError) Is(target error) bool { return target == checker.ErrUndecided }

// derivedEstimate counts the costly anti-dependencies Encode would derive:
// for every candidate writer of an uncertain read, each writer whose order
// with it is still open (every writer of the key in the dense
// construction) — each needs a conjunction variable and three clauses.
// It stops counting past max, or when p.g says to.
func (p *Polygraph) derivedEstimate(max int) int {
	if !p.spec.anti {
		return 0
	}
	n := 0
	for _, r := range p.Reads {
		if len(r.Cands) < 2 {
			continue // a known writer: its anti-dependencies are fixed edges
		}
		if n > max {
			break
		}
		for _, c := range r.Cands {
			if p.g.step() {
				return n
			}
			if p.pairsOf == nil {
				n += len(p.writers[r.Key])
				continue
			}
			for _, pi := range p.pairsOf[pairKey{c, 0, r.Key}] {
				if p.Pairs[pi].Order == 0 {
					n++ // an undecided order: a conjunction, its variable and clauses
				}
			}
		}
	}
	return n
}

// lower is g.Lower, returning ctx's error as soon as ctx ends: ir.Lower
// does not look at a context, and at MaxDerived conjunctions it takes
// seconds, so it runs on a goroutine of its own, left to finish in the
// background (its result unused) when ctx ends first.
func lower(ctx context.Context, g *ir.Graph, o ir.Options) (*ir.Lowered, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	done := make(chan *ir.Lowered, 1)
	go func() { done <- g.Lower(o) }()
	select {
	case low := <-done:
		return low, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Err returns why the construction, pruning or counting stopped early —
// the check's context ended (its error) or the construction passed its
// memory share (a *MemoryError) — or nil.
func (p *Polygraph) Err() error { return p.g.err }

// graphNode maps a chain node (transaction node, or -(i+1) for auxiliary
// node i) to the encoding's node numbering.
func (e *Encoding) graphNode(v int32) int32 {
	if v < 0 {
		return e.nodes + (-v - 1)
	}
	return v
}

// knownCycles searches the known graph (with the pairs pruning decided and
// the anti-dependencies they derive): a cycle there is in every dependency
// graph of the history, an exact counterexample.
func (p *Polygraph) knownCycles(ctx context.Context, ix *history.Index, l level.Level) ([]anomaly.Anomaly, error) {
	si := p.spec.split
	// Under a rule some cycles through anti-dependencies are allowed: only
	// dependency cycles (G1c) are certain violations here.
	parts := p.knownEdges(!p.spec.anti || p.spec.rule != 0)
	if err := p.Err(); err != nil {
		return nil, err
	}
	m := 0
	for _, known := range parts {
		m += len(known)
	}
	e := dsg.NewEdges(len(p.h.Txns), si, m)
	for _, known := range parts {
		for _, k := range known {
			if k.From == history.Init {
				continue
			}
			switch {
			case k.Dep.IsAnti():
				e.Anti(k.From, k.To, k.Dep, k.Key)
			case k.Dep == anomaly.WW && p.spec.prefix:
				e.Order(k.From, k.To, k.Key)
			default:
				e.Dep(k.From, k.To, k.Dep, k.Key)
			}
		}
	}
	for _, t := range p.initFirst {
		e.Dep(history.Init, t, anomaly.SO, history.NoKey)
	}
	if l.RealTime {
		e.RealTime(p.h, ix.Effective)
	}
	g := e.Finish()
	found, err := dsg.FindCycles(ctx, p.h, g.G, g.Mask, g.Nodes)
	for i := range found {
		found[i] = p.depict(found[i], func(int) bool { return true })
	}
	return found, err
}

// depict rewrites a cycle through an inferred edge (read committed, read
// atomic) as the read that missed a write (dsg.Missed): the inference's
// premise, then the anti-dependency from the reader to the writer it
// missed. holds says whether inference i holds in the choice the cycle
// was found under. A cycle without an inferred edge is left as it is.
func (p *Polygraph) depict(a anomaly.Anomaly, holds func(i int) bool) anomaly.Anomaly {
	if p.spec.infer == level.NoAxiom {
		return a
	}
	// An inference whose premise only read atomic has (session order, or
	// a read after the one it explains) names a violation read committed
	// allows; prefer it.
	pick := -1
	for _, st := range a.Cycle {
		if st.Dep != anomaly.WW {
			continue
		}
		for i, f := range p.inferred {
			if f.From != st.From || f.To != st.To || f.Key != st.Key || !holds(i) {
				continue
			}
			if pick < 0 || f.Beta < 0 || p.Reads[f.Beta].Op >= p.Reads[f.Alpha].Op {
				pick = i
			}
		}
	}
	if pick < 0 {
		return a
	}
	f := p.inferred[pick]
	ra := p.Reads[f.Alpha]
	premise := anomaly.Step{From: f.From, To: ra.R, Dep: anomaly.SO, Key: history.NoKey}
	if f.Beta >= 0 {
		rb := p.Reads[f.Beta]
		premise = anomaly.Step{From: f.From, To: ra.R, Dep: rb.wrDep(), Key: rb.Key}
	}
	m := dsg.Missed(p.h, []anomaly.Step{premise}, history.OpRef{Txn: ra.R, Op: ra.Op}, f.To, f.From, f.Key, ra.Pred)
	m.BestFound = a.BestFound
	return m
}

// refutation is the counterexample of a refuted encoding: the lost update
// or cycle behind it at cursor stability, the forbidden cycle of the
// classed theory's last conflict under a rule, the cycle of the
// acyclicity theory's otherwise.
func (e *Encoding) refutation(ctx context.Context, low *ir.Lowered, lim checker.Limits) (anomaly.Anomaly, bool) {
	switch {
	case e.p.spec.cursor:
		return cursorCounterexample(ctx, e.p, lim)
	case low.C != nil:
		return e.classedCounterexample(low.S.LastConflict)
	}
	return e.counterexample(low.S.LastConflict)
}

// cursorCounterexample explains a refutation at cursor stability. Solved
// again without the lost-update clauses, either the history has a
// dependency cycle whatever the version order (G1c, from that solver's
// conflict), or the model puts a writer between some read and its
// reader's own write: that lost update, under the model's choices. That
// search is bounded by lim's conflicts and work (none when 0), as the
// first was.
func cursorCounterexample(ctx context.Context, p *Polygraph, lim checker.Limits) (anomaly.Anomaly, bool) {
	enc, err := Encode(ctx, p, false, 0, false, false) // lost updates recorded, not forbidden
	if err != nil {
		return anomaly.Anomaly{}, false
	}
	low, err := lower(ctx, enc.G, ir.Options{})
	if err != nil {
		return anomaly.Anomaly{}, false
	}
	low.S.Interrupt = interrupt(ctx, low.S)
	low.S.ConflictLimit, low.S.WorkLimit = lim.Conflicts, lim.Work
	switch low.S.Solve() {
	case sat.Unsat:
		return enc.counterexample(low.S.LastConflict)
	case sat.Sat:
		holds := func(x cond) bool {
			return x.Const > 0 || x.Const == 0 && low.S.Value(x.Lit.Var()) == x.Lit.IsPos()
		}
		for _, lu := range enc.LostUpdates {
			if holds(lu.Conds[0]) && holds(lu.Conds[1]) && holds(lu.Conds[2]) {
				return anomaly.Anomaly{Kind: anomaly.LostUpdate, Phenomenon: anomaly.GCursor,
					Txns: []history.TxnID{lu.R, lu.Between}, Key: history.NoKey, BestFound: true,
					Cycle: []anomaly.Step{{From: lu.R, To: lu.Between, Dep: anomaly.RW, Key: lu.Key},
						{From: lu.Between, To: lu.R, Dep: anomaly.WW, Key: lu.Key}}}, true
			}
		}
	}
	return anomaly.Anomaly{}, false
}

// classedCounterexample rebuilds the forbidden cycle of a classed theory's
// conflict (or of its fixed edges alone, when the conflict is empty): the
// edges the conflict's literals negate, with every fixed edge, hold a
// forbidden closed walk; a fresh theory over them finds one, and it is cut
// down to a simple cycle.
func (e *Encoding) classedCounterexample(conflict []sat.Lit) (anomaly.Anomaly, bool) {
	present := e.G.Present(conflict)
	probe := acyclic.NewClassed(int(e.total), e.p.spec.rule)
	for _, ed := range present {
		probe.AddFixedEdge(ed.From, ed.To, ir.ClassOf(ed.Dep))
	}
	walk := probe.Violation()
	if walk == nil {
		return anomaly.Anomaly{}, false
	}
	var steps []anomaly.Step
	for _, g := range probe.Simple(walk) {
		ed := present[g]
		steps = append(steps, anomaly.Step{From: history.TxnID(ed.From - 1), To: history.TxnID(ed.To - 1), Dep: ed.Dep, Key: ed.Key})
	}
	a := dsg.StepsAnomaly(e.p.h, steps)
	a.BestFound = true
	return a, true
}

// counterexample rebuilds the cycle of a theory conflict: the edges whose
// conditions the conflict's literals negate, with every fixed edge, hold a
// cycle; the search maps it back to transactions.
func (e *Encoding) counterexample(conflict []sat.Lit) (anomaly.Anomaly, bool) {
	if len(conflict) == 0 {
		return anomaly.Anomaly{}, false
	}
	present := e.G.Present(conflict)
	b := graph.NewBuilder(int(e.total), len(present))
	for _, ed := range present {
		b.Add(ed.From, ed.To, uint8(ed.Dep), int32(ed.Key))
	}
	g := b.Build()
	nodes := func(v int32) (history.TxnID, bool) {
		if v >= e.nodes {
			return 0, false
		}
		if e.split > 0 && v >= e.split {
			v -= e.split
		}
		return history.TxnID(v - 1), true
	}
	found, _ := dsg.FindCycles(context.Background(), e.p.h, g, graph.AllLabels, nodes)
	if len(found) == 0 {
		return anomaly.Anomaly{}, false
	}
	a := found[0]
	a.BestFound = true
	truth := make(map[sat.Lit]bool, len(conflict))
	for _, l := range conflict {
		truth[l.Not()] = true
	}
	a = e.p.depict(a, func(i int) bool {
		w := e.inferredWhen[i]
		return w.Const > 0 || w.Const == 0 && truth[w.Lit]
	})
	if e.bc {
		// The begin → commit edges inside a transaction are not steps.
		steps := a.Cycle[:0]
		for _, st := range a.Cycle {
			if st.From != st.To {
				steps = append(steps, st)
			}
		}
		a.Cycle = steps
	}
	return a, true
}

// interrupt is the solver's Interrupt for a check under ctx: it stops the
// search when ctx ends, and shows the search's progress on the meter ctx
// carries, if any.
func interrupt(ctx context.Context, s *sat.Solver) func() bool {
	m := checker.MeterFrom(ctx)
	if m == nil {
		return func() bool { return ctx.Err() != nil }
	}
	return func() bool {
		st := s.Stats()
		m.Conflicts.Store(st.Conflicts)
		m.Decisions.Store(st.Decisions)
		return ctx.Err() != nil
	}
}
