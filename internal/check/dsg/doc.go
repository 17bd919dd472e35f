// Package dsg is the direct serialization graph: its construction, its
// cycles as counterexamples, and the checker that needs nothing more.
//
// Build makes the dependency graph that a history with unique
// values fixes by itself (MTC Algorithm 1, BuildDependency, in the optimised
// form of §IV-C without the transitive closure of ww): wr edges from each
// read to the one write of its value; ww edges from the version a
// transaction read to the transaction's own write of that key
// (read-modify-write); rw edges from every other reader of a version to the
// transaction that overwrote it that way; so edges between consecutive
// transactions of a session; and rt edges encoded in O(n log n) through a
// chain of auxiliary time nodes instead of n² pairs.
//
// For snapshot isolation the graph can be built split: every transaction
// has a second node that only anti-dependency edges leave, so that a cycle
// of the split graph is exactly a cycle of (SO ∪ WR ∪ WW) ; RW? (MTC
// Definition 6), in linear size.
//
// FindCycles turns the strongly connected components of a dependency
// graph into counterexamples: for each component that holds a cycle, one
// short concrete cycle, chosen to name the most specific phenomenon (G0
// before G1c before G-single before G2, as Elle does), mapped back from
// graph nodes to transactions and classified by its shape.
//
// Graphs may hold auxiliary nodes (real-time chains) and split nodes (the
// snapshot-isolation encoding); a Nodes function maps graph nodes back to
// transactions.
//
// The known-graph checker (Checker, named "dsg") decides read committed (Adya PL-2) and read uncommitted
// (PL-1) on histories with unique values by a cycle search on the part of
// the direct serialization graph that the history fixes.
//
// With unique values every read names its writer, so the wr edges are
// known. A ww edge W → T is known where T read W's version of a key and
// then wrote the key: any version order that put T first would close the
// cycle W -wr→ T -ww→ W, which is G1c. Every other pair of writers can be
// ordered along a topological order of the known edges, which adds no
// cycle. So a history (with the shared checks passed) satisfies PL-2
// exactly when the known wr ∪ ww graph is acyclic, and PL-1 always: it
// proscribes only G0, and a version order taken from any one total order of
// the transactions has no write cycle.
package dsg
