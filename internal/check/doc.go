// Package check decides whether a history satisfies an isolation level:
// it is the driver around the algorithms. Run indexes the history, runs
// the checks every level shares (precheck), then the planned check of the
// chosen algorithm, and says on a violation which weaker levels still
// hold; it also checks InnoDB's repeatable read (the innodb-rr model, by
// rewriting the history) and strict serializability of a history without
// instants (at serializability).
//
// The algorithms implement the contract of package checker, each in a
// sub-package: chronos (SI and SER by the database's timestamps), lwt
// (linearizability of compare-and-set registers), mt (mini-transactions),
// listappend (Elle's list-append histories), dsg (the known dependency
// graph: RC and RU), saturate (the axiomatic weak levels rc-session, read
// atomic and causal on unique values), linear (linearizability of single-operation register
// histories, by a memoised search) and polygraph (the SAT checker, "sat"
// and "sat-bc": every level, every operation). Checkers lists them fastest first: with
// "auto", the first whose capabilities admit the history and the options
// and whose Plan accepts the history at the level decides. aion is the
// online checker (package serve runs it); reference is the brute-force
// oracle the differential tests hold the others to.
package check
