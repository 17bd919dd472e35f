// Package reference is a brute-force oracle for isolation levels: it decides
// whether a tiny history (at most MaxTxns committed or unknown-status
// transactions, a few keys) satisfies read uncommitted, read committed,
// cursor stability, PL-2+, PL-FCV, repeatable read, snapshot isolation,
// serializability or strict serializability, the axiomatic levels
// rc-session, read atomic, causal and prefix consistency, or generalized
// SI and plain serializability (without session order), by
// enumerating, straight from the definitions, every way the history could
// have come about.
//
// It is deliberately simple rather than fast, and it shares nothing with the
// fast checkers (no history.Index, no dependency graphs, no checker code): it
// is the oracle that the differential tests compare those checkers against.
//
// The definitions it enumerates:
//
//   - Serializability and strict serializability (MTC, Wei et al.,
//     "Boosting End-to-End Database Isolation Checking via
//     Mini-Transactions", Definitions 5 and 4): a total order of the
//     committed transactions, consistent with session order (and, for
//     strict serializability, real time), whose serial execution makes every
//     read return what it returned.
//   - Snapshot isolation (MTC Definition 6, in the equivalent axiomatic form
//     of Cerone and Gotsman, strong session variant): a total commit order
//     and, per transaction, a snapshot that is a prefix of the commit order
//     ending before the transaction, that contains its session predecessors
//     and every earlier transaction writing a key it also writes, and from
//     whose final state its external reads are explained.
//   - Generalized snapshot isolation and plain serializability: the two
//     definitions above without session order.
//   - The axiomatic levels (axioms.go; Biswas and Enea, OOPSLA 2019, §2):
//     an assignment of every external observation to a writer and a
//     strict total commit order extending session order and write-read
//     in which, whenever a transaction t3 read key x from t1 and another
//     transaction t2 writes x, the level's premise on t2 and t3 puts t2
//     before t1: t3 read from t2 earlier in program order (rc-session),
//     t2 precedes t3 in its session or t3 read from t2 (read atomic), a
//     chain of those (causal), or t2 precedes in the commit order (or is)
//     a transaction of either kind (prefix).
//   - Read committed and read uncommitted (Adya's PL-2 and PL-1): an
//     assignment of each read to a write of the value it returned and a
//     version order per key such that no read observes an aborted or
//     intermediate write (G1a, G1b) and the write-read and write-write
//     dependencies are acyclic (G0, G1c); PL-1 only forbids G0 and thin-air
//     reads.
//   - Cursor stability, PL-2+, PL-FCV, and repeatable read on histories
//     with scans or iterators (adya.go): Adya's definitions over the
//     dependency graph, enumerating every total order of the effective
//     transactions (at most MaxAdyaTxns) as the version orders and every
//     assignment of observations to writers: no G1, and no lost update
//     (G-cursor), no G-single, or no cycle through an item
//     anti-dependency respectively. Without predicate reads repeatable read
//     is a serial order without session order.
//   - Lists (lists.go), at every level, in histories made only of
//     appends and list reads: a key's state is a list, empty at first;
//     an append adds its element at the end of the state its
//     transaction's position gives it; a list read returns the whole
//     list. The orders and snapshots are those above; at read committed a
//     read returns a list some earlier transaction in a total order of the
//     effective transactions installed (the version order of each key is
//     that order restricted to its appenders). At read uncommitted every
//     read is a prefix of one sequence of the key's appends (of any
//     transaction, aborted ones included), and some total order of the
//     effective transactions orders the appenders of each sequence's
//     effective elements (no G0).
//
// Every level requires internal consistency (Int): a read of a key after the
// transaction's own write of it returns that write; a list read after the
// transaction's own appends to the key returns the list it would otherwise
// see followed by those appends. Transactions of unknown
// status are enumerated both ways: the history satisfies a level iff some
// choice of which of them committed makes it satisfy the level.
package reference
