package polygraph

import (
	"context"
	"fmt"

	"github.com/isoscope/isoscope/internal/check/checker"
)

// guard keeps the solver's set-up within its context and its memory
// share. Its long loops call step (or grow, for what they keep) on every
// iteration: the context is looked at every guardEvery calls, so an
// interrupted or timed-out check stops within milliseconds whatever phase
// it is in, and what the construction allocates is counted against the
// limit, so that a history that needs more answers undecided instead of
// growing without bound. The first error sticks: once a loop has stopped,
// every later step stops too, and err says why.
type guard struct {
	ctx   context.Context
	limit int64 // bytes the construction may keep; 0: no limit
	used  int64 // bytes counted so far
	n     uint32
	err   error
}

// guardEvery is how many steps pass between two looks at the context: a
// step is a few nanoseconds to a few microseconds of work, a look at the
// context a lock.
const guardEvery = 1024

// newGuard returns a guard over ctx with a limit of limit bytes (0: none).
func newGuard(ctx context.Context, limit int64) *guard {
	if ctx == nil {
		ctx = context.Background()
	}
	return &guard{ctx: ctx, limit: limit}
}

// step reports whether the loop calling it must stop: the context ended or
// the limit was passed (then err says which).
func (g *guard) step() bool {
	if g.err != nil {
		return true
	}
	g.n++
	if g.n%guardEvery != 1 { // the first step looks, then every guardEvery-th
		return false
	}
	if err := g.ctx.Err(); err != nil {
		g.err = err
		return true
	}
	return false
}

// check looks at the context now.
func (g *guard) check() error {
	if g.err == nil {
		g.err = g.ctx.Err()
	}
	return g.err
}

// grow counts bytes kept by what for the structure named (pairs,
// candidates, edges) and reports, as step does, whether the loop must
// stop: past the limit, err is a *MemoryError.
func (g *guard) grow(bytes int64, what string) bool {
	g.used += bytes
	if g.limit > 0 && g.used > g.limit && g.err == nil {
		g.err = &MemoryError{Limit: g.limit, What: what}
		return true
	}
	return g.step()
}

// MemoryError says the solver's construction would keep more memory than
// its share of the check's bound (Checker.MemoryLimit): the check is
// undecided, not failed.
type MemoryError struct {
	// Limit is the share in bytes; What is what was being built when the
	// count passed it.
	Limit int64
	What  string
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("the solver's construction needs more than %d MB (its share of the memory bound) for %s; raise --memory-mb, or check a smaller part of the history", (e.Limit+1<<20-1)>>20, e.What)
}

// Is makes the error checker.ErrUndecided: the history is neither
// accepted nor refuted.
func (e *MemoryError) Is(target error) bool { return target == checker.ErrUndecided }

// Bytes each kept item is counted for: a pair (its entry in Pairs, in the
// pair map and twice in pairsOf), a candidate writer of a read (counted
// by capacity), a read, an edge of the known graph, an edge of the IR
// graph (with the theory's copy of it once lowered), a variable and a
// clause of the encoding, and a derived anti-dependency's conjunction
// with its variable and clauses. A pair keeps about 60 bytes live; it is
// counted at about twice that for the garbage its growing tables leave
// behind until the next collection. Measured on a 6,000-transaction
// blind-write history in 100 sessions: 4.4 M pairs and 4.0 M candidates
// keep 278 MB live, allocate 830 MB in all, and are counted as 491 MB. A
// derived anti-dependency keeps about 420 bytes once encoded and lowered
// into the solver (on 300 such transactions, 1.1 M of them: 180 MB live
// after Encode, 275 MB more after Lower, 2.2 GB allocated in all). An IR
// edge keeps about 56 bytes once lowered and solved (24 in the IR, 12 in
// the theory's edge list, 8 in its adjacency lists, the rest its literal's
// list and the solver's trail), counted at 80: on the 100,000-transaction
// general history of docs/benchmarks.md at snapshot isolation, 4.2 M
// edges, 326 k variables and 220 k clauses add 310 MB to the live heap
// between the known graph's cycle search and the end of the search, and
// are counted as 413 MB.
const (
	pairBytes    = 112
	candBytes    = 4
	readBytes    = 48
	edgeBytes    = 16
	irEdgeBytes  = 80
	varBytes     = 160
	clauseBytes  = 96
	derivedBytes = 768
)
