package checker

import (
	"github.com/isoscope/isoscope/internal/anomaly"
	"github.com/isoscope/isoscope/internal/history"
)

// Module is Boomslang's extension point: a pass over the abstract semantic
// graph that adds what a program embedding isoscope knows about its
// database — edges every dependency graph of the history has, such as a
// version order the database exposes, or an order its clients observed.
// Modules run after the history's own facts (session order, read
// dependencies with a single writer) and before the writer pairs are
// made, so what they order is never searched.
type Module interface {
	// Name names the module in messages.
	Name() string
	// Extend reads the ASG and adds known edges with Before, or
	// superpositions of edges with Either. An error says the history
	// contradicts what the module assumes.
	Extend(a ASG) error
}

// ASG is the abstract semantic graph a Module reads and extends: the
// history, its index (every observation with its candidate writers), the
// writers of each key, and the known graph.
type ASG interface {
	// History returns the history being checked.
	History() *history.History
	// Index returns the history's index: observations, their candidate
	// writers, which transactions took effect.
	Index() *history.Index
	// TakesPart reports whether t certainly took effect (committed, or
	// observed): the transactions a known edge may join.
	TakesPart(t history.TxnID) bool
	// Keys returns the keys that transactions taking part write or
	// delete, in key order.
	Keys() []history.KeyID
	// Writers returns, in file order, the transactions taking part whose
	// last write or delete of k is final: the key's version order is an
	// order of them.
	Writers(k history.KeyID) []history.TxnID
	// Before adds a known edge from → to of kind d (on key k, or
	// history.NoKey): every dependency graph of the history has it. A ww
	// edge between two writers of k fixes their order in k's version
	// order. Both transactions must take part.
	Before(from, to history.TxnID, d anomaly.Dep, k history.KeyID) error
	// Either adds a superposition: exactly one of the alternatives holds,
	// and every edge of the one that holds is in the dependency graph (an
	// alternative may be empty: "or none of these"). It is how a module
	// says what it knows only in part — "T1's write came before T2's or
	// after T3's" — and the solver chooses, as it chooses a read's writer.
	// Every transaction named must take part.
	Either(alts ...[]Edge) error
}

// Edge is an edge of a dependency graph: From → To of kind Dep, on Key
// (history.NoKey when the kind has none).
type Edge struct {
	From, To history.TxnID
	Dep      anomaly.Dep
	Key      history.KeyID
}
