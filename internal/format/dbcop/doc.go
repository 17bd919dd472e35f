// Package dbcop reads and writes dbcop's binary history files
// (history.bincode), the format of dbcop (Biswas and Enea, "On the
// complexity of checking transactional consistency") that many checkers'
// artifacts share.
//
// # Format
//
// Rust bincode 1.x of dbcop's History struct: little-endian integers, u64
// lengths, a bool is one byte (0 or 1), a string is its u64 length and
// UTF-8 bytes. In order:
//
//	id n_node n_variable n_transaction n_event   u64 each (generator parameters)
//	info start end                               strings (start and end are dates)
//	n_sessions                                   u64, then each session:
//	  n_txns                                     u64, then each transaction:
//	    n_events                                 u64, then each event:
//	      write:bool key:u64 value:u64 success:bool
//	    txn_success:bool
//
// A read event reads the value of its key; value 0 is the initial value
// (dbcop's workloads write unique non-zero values).
//
// # Modelling
//
// Sessions are labelled 1, 2, … in file order (dbcop numbers them from 1;
// 0 is its initial transaction). dbcop gives transactions no ids: the id of
// the j-th transaction (from 0) of session s is the string "s:j", dbcop's
// own (session, transaction) pair. A transaction whose txn_success is
// false is aborted; a failed event (success false) did not take effect and
// is dropped, in committed and aborted transactions alike. Keys and values
// are integers (u64 values at or above 2^63 wrap to negative integers, and
// Write writes negative integers back the same way). The initial state
// writes 0 to every key of the history (h.Header.Initial.Values), as
// dbcop's own initial transaction does. The header records the file name
// and dbcop's info string as the source and claims nothing about unique
// values.
//
// Bad input (a truncated file, a bool that is neither 0 nor 1, a string
// that is not UTF-8, a length larger than the rest of the file, bytes after
// the history) is a *format.Error whose Field names the part (for example
// "session 2, transaction 0, event 3") and whose message gives the byte
// offset.
//
// Write writes a history of committed and aborted transactions made only
// of reads and writes of integer keys and values, with no null reads and
// no initial values other than 0; it refuses (with a clear error naming
// the transaction and operation) what dbcop cannot express, so that the
// file it writes has the history's verdict at every level: a write of 0
// (dbcop's initial value), a read of 0 from a key whose initial value is
// not 0, begin and end instants (strict serializability is checked by
// them), the database's timestamps and a white-box version order. A key
// initially absent becomes initially 0, which no read can then tell apart.
// Locking-read attributes, which no checker reads, are dropped.
package dbcop
