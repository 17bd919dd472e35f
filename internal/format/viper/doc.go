// Package viper reads the histories of Viper, the snapshot-isolation
// checker (Zhang et al., "Viper: A Fast Snapshot Isolation Checker",
// EuroSys 2023; github.com/Khoury-srg/Viper), as its benchmark ViperBench
// (github.com/Khoury-srg/ViperBench) writes them and Viper's JSON parser
// (src/parse/wr_range_parse.py, construct_all_txns_json) reads them, into
// isoscope's history model. Viper's other inputs are not this format: its
// list-append histories are Jepsen EDN (package jepsen reads them), and
// its EDN register histories are Jepsen's with extra fields, which Viper's
// own loader can no longer open.
//
// # Format
//
// A history is a directory (ViperBench's json/ folder; given the folder
// that holds json/, the reader goes into it) of log files, one per client
// thread, named J<thread id>.log. Viper reads every file of the directory
// whose name starts with "J" or "history.edn"; so does this reader. Each
// line of a file is one committed transaction, a JSON object:
//
//	{"value": [["r", 12, -8068482120162306138, false], ["w", 12, 77, true]]}
//
// with, when ViperBench ran with PRINT_TS, "preBeginTS", "postBeginTS",
// "preCommitTS" and "postCommitTS" (client wall-clock milliseconds), and,
// on the initial transaction, "isInitial": true and "isFinal": false.
// The operations ("mops") are arrays whose first element names them:
//
//	["r", k, v, isDead]                      read of k returned v
//	["w", k, v, succ]                        write (update, upsert) of v at k
//	["i", k, v, readV, isDead, succ, …]      insert of v at k, which read readV first
//	["d", k, v, readV, isDead, succ, …]      delete of k, which read readV first
//	["range", k1, k2, live, dead]            range query k1 <= key <= k2
//
// Keys are JSON integers (ViperBench's KEY_TYPE 1) or strings (one kind
// per history). Values are the clients' 64-bit hashes of what they wrote
// and read, as JSON integers; 0 is the hash of nothing (Viper's
// NULL_VALUE). A range's bounds are keys, or the string "nil" for no
// bound; live and dead are arrays of {"id": key, "sk": key, "val": value}
// objects, the rows the query returned that hold a value and those that
// hold a delete's tombstone. An insert and a delete may carry further
// elements (ready, the actual operation), which Viper does not read, and a
// range a sixth, the final-query flag.
//
// ViperBench deletes by overwriting the row with a tombstone: the delete's
// value v is the hash of that tombstone, and a later read of the row
// returns v with isDead true. Aborted transactions are not in the logs
// (the logger drops them), so every transaction is committed.
//
// # Modelling
//
// Viper's semantics, as its graph construction (build_graph4adyaSI.py)
// and its extraction of each transaction's external reads and writes
// (range_utils.py) define them:
//
//   - Sessions are the files, ordered by the thread id of their name
//     (then by name), labelled with the thread id (the file name when it
//     is not J<integer>.log, or when another file's name gave the same
//     thread id); a session's transactions keep their order in its file.
//     A transaction's id is "<file name>:<line>".
//   - A read is a read of its value, dead or not: a tombstone is a value
//     like any other, written by the delete that installed it.
//   - A successful write writes its value; a failed one (succ false, an
//     UPDATE that found no row) writes nothing and is left out.
//   - An insert or a delete reads readV and then, when it succeeded,
//     writes its value (a delete writes its tombstone; Viper requires
//     succ true for both, and this reader keeps the read of a failed one).
//   - A range query is a scan of k1 <= key <= k2 (isoscope's bounds are
//     half-open: hi is k2 + 1, unbounded past the largest key) that
//     returned the live and the dead rows: a tombstone is a row that is
//     present, as it is in the database.
//   - The value 0 is null (the key was absent) in a read and a range
//     result, unless a transaction writes 0 to that key.
//   - The initial transaction (isInitial, alone in its file as ViperBench
//     writes it: a range query over everything, or writes) is the initial
//     state: its rows' values, every other key absent. Without one, Viper
//     takes a read of a value no transaction wrote as a read of the data
//     loaded before the run; so does this reader: the first such value
//     read from a key is its initial value. A second, different one is a
//     read of a value nobody wrote, which isoscope reports (Viper accepts
//     it).
//   - Timestamps, when present, are each transaction's instants: begin is
//     preBeginTS and end postCommitTS, in nanoseconds.
//   - A final transaction (isFinal) is an ordinary transaction.
//   - A transaction left with no operations (an empty one, or one whose
//     writes all failed) is left out: it reads and writes nothing.
//
// Where Viper is laxer than isoscope, isoscope's verdict is the stricter:
// a read of an inconsistent value by an insert (Viper's check of internal
// reads skips inserts), a read of null from a key the initial state holds,
// or a range query that leaves out a key of the initial state are
// anomalies isoscope reports and Viper does not.
//
// The header claims nothing about unique values (the checker verifies
// uniqueness itself) and records the directory as its source. Bad input
// (malformed JSON, an unknown operation, an operation of the wrong length,
// a key or value of the wrong kind, a range row outside its range or
// twice in it, a misplaced initial transaction) is a *format.Error naming
// the file, the line and the field, e.g. "value[2][3]" for the fourth
// element of the third operation. Lines are bounded by format.Limits.
//
// The format is read only: isoscope's histories hold what it cannot
// (aborted transactions, physical deletes, string values, half-open
// ranges), so convert refuses to write it.
package viper
