// Package gen produces synthetic histories by simulating a database, so
// that their verdict is known by construction.
//
// Generate's workload is MTC's: every transaction is a mini-transaction (MTC
// Definition 8) — one or two reads and at most two writes over one or two
// keys, every write preceded by a read of its key, of the shapes `run`
// plans too (workload.MTShapes, drawn by workload.DrawMT) — and every
// write puts a fresh value (a per-key counter) at its key. Keys are
// chosen with a workload.Distribution.
//
// Two databases are simulated. Serial runs one transaction at a time, in a
// random interleaving of the sessions, with disjoint and increasing
// real-time intervals: its histories are strictly serializable. Snapshot
// isolation runs one transaction per session concurrently: each reads the
// committed state at its start and commits with first-committer-wins,
// losers being recorded as aborted and retried; its histories satisfy
// snapshot isolation and exhibit write skews of their own.
//
// On request, Generate plants small groups of extra transactions that
// exhibit one named anomaly each (MTC's Figure 5, plus a real-time
// violation) on keys and in sessions nobody else uses, and reports where it
// put them.
//
// GenerateGeneral simulates a serial database running Cobra-style reads
// and blind writes. GenerateRange simulates Boomslang's benchmarks
// (RandomBench, RandomRange, RandomRMWRange, BlindW: the names, and the
// mixes of the first two, are internal/workload's) over integer keys,
// with deletes (physical or tombstones), range scans, iterators and
// repeated values, on a serial or a snapshot-isolation database, and can
// corrupt a share of the observations so that tests get violating
// histories.
package gen
