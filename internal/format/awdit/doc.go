// Package awdit reads the text test histories of AWDIT (Møldrup and
// Pavlogiannis, lassemoldrup/AWDIT) into isoscope's history model.
//
// # Format
//
// One operation per line, a line of dashes ends a transaction and a line
// of equals signs ends a session:
//
//	w 0 1
//	w 1 1
//	-----
//	r 0 1
//	=====
//	r 1 1
//
// An operation is "r key value" (a read that returned value) or "w key
// value" (a write), key and value non-negative integers. Blank lines and
// spaces around a line are ignored; a separator line is any run of '-'
// (or '=') alone on its line. The end of the input ends the last
// transaction and session. Empty transactions and sessions (two separators
// in a row, a separator at the end) are skipped, as AWDIT skips them.
//
// # Modelling
//
// Every transaction is committed. Sessions are labelled 0, 1, … in file
// order, counting only non-empty ones, and the j-th transaction (from 0)
// of session s has the string id "s:j": AWDIT's own TransactionId(s, j).
//
// There is no initial transaction: the initial state is absent (no
// h.Header.Initial.Values), and a read of a value that no transaction
// wrote is a thin-air read, which AWDIT reports as such (ThinAirRead). The
// test histories write their starting values themselves: "w 0 0" in a
// first transaction or session, read later as "r 0 0". Every read of the
// corpus's AWDIT histories reads a value some transaction wrote, and no
// value is written twice to a key. The header claims nothing about unique
// values and records the file name as the source.
//
// A malformed line (an unknown operation, a missing or extra field, a key
// or value that is not a non-negative integer) is a *format.Error naming
// the line.
package awdit
