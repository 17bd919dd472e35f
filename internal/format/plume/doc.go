// Package plume reads the text histories of PolySI and Plume (also used by
// IsoVista and AWDIT) into isoscope's history model.
//
// # Format
//
// One operation per line:
//
//	r(key,value,session,txn)   a read of key that returned value
//	w(key,value,session,txn)   a write of value to key
//
// Key, value and session are non-negative integers, txn an integer; no
// spaces inside the parentheses (blank lines and spaces around a line are
// allowed). A transaction id belongs to one session and is unique in the
// file; a transaction's operations are its lines in file order, and its
// place in its session is that of its first line. An implicit initial
// transaction writes 0 to every key. In Plume's histories a txn of -1
// marks a write by an aborted transaction (a read with txn -1 means
// nothing; Plume ignores it).
//
// # Modelling
//
// Session labels and transaction ids are the integers of the file.
// Transactions appear in the order of their first line, which keeps each
// session's order. Every transaction is committed, except the aborted
// writes: the writes with txn -1 of session s form one aborted transaction
// of that session, with the string id "-1@s", placed in the session where
// its first such line is. Reads with txn -1 are dropped, as Plume does.
//
// The initial state (h.Header.Initial.Values) holds 0 for every key of the
// file, the implicit initial transaction. Some files (IsoVista's bug
// histories) carry an explicit initial transaction instead: transaction 0
// of session 0, made only of writes, one per key, writing every key of the
// file, and the only transaction of session 0. Such a transaction must be
// ordered before every other one (pg_ser_bug.txt is serializable only if
// that rule is ignored), so it becomes the initial state: its writes are
// the initial values (dgraph_si.txt's writes 1, not 0) and it is dropped
// from the transactions, and session 0 with it.
//
// The header claims nothing about unique values and records the file name
// as the source.
//
// A malformed line, a number out of range, a transaction id that appears
// in two sessions or a txn below -1 is a *format.Error naming the line.
package plume
