// Package saturate decides the axiomatic weak levels — read committed with
// session order (rc-session), read atomic and causal consistency — on
// histories of reads and writes with unique values, in near-linear time,
// by saturating the commit order (Biswas and Enea, "On the Complexity of
// Checking Transactional Consistency", OOPSLA 2019, §3; the bounds of
// AWDIT, Møldrup and Pavlogiannis, PLDI 2025).
//
// With unique values every read names its writer, so session order (so)
// and write-read (wr) are known. A history satisfies one of these levels
// iff the union of so, wr and the commit-order edges the level's axiom
// infers is acyclic: each axiom's premise mentions only so, wr and program
// order, never the commit order, so the inferred edges are fixed and any
// topological order of the union is a commit order that satisfies the
// axiom (and any commit order that satisfies it contains them). For a read
// of x by t3 from t1 and another writer t2 of x, the axiom puts t2 before
// t1 when:
//
//   - read committed: t3 read from t2 earlier in program order. Reads
//     are walked in program order with, per key t3 reads later, the
//     transactions read so far that write it; a read of x from t1 takes
//     an edge from each of them, and then t1 alone stands for them all
//     (the edges already put them before t1). Which keys of a source t3
//     reads is found by walking the smaller of its writes and t3's reads:
//     O(n^{3/2} log n) in the worst case, near-linear in practice;
//   - read atomic: t3 read from t2 at all, or t2 precedes t3 in its
//     session — of those, the last writer of x in the session suffices
//     (the earlier ones precede it in session order). Same bound;
//   - causal: t2 reaches t3 by so and wr. Vector clocks over the
//     sessions, computed in a topological order of so ∪ wr, give each
//     transaction its causal past; per session only the last writer of x
//     in it (found by binary search among that session's writers of x)
//     needs an edge, and none when it already reaches t1: O(n·k log n)
//     for k sessions. A vector clock is freed once its transaction's
//     readers and session successor have taken it in.
//
// The initial state is a node before every transaction an inference may
// put before it, so that such an inference closes a cycle too. A cycle is
// reported once per strongly connected component: a cycle of so and wr
// alone as it is, otherwise through one inferred edge, depicted as the
// read that missed a write (dsg.Missed): the premise (a path of so and wr
// from t2 to t3) and the anti-dependency t3 →rw t2.
package saturate
