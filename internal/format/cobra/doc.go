// Package cobra reads Cobra's binary client logs (DBCobra/CobraLogs,
// CobraVerifier) into isoscope's history model.
//
// # Format
//
// A history is a directory with one file T<n>.log per client session
// (n a decimal number; other files are ignored). Each file is a sequence
// of records, a one-byte tag followed by big-endian unsigned 64-bit
// integers:
//
//	'S' txnId                           start of a transaction
//	'W' writeId key value               write
//	'R' writerTxnId writeId key value   read; names the write it observed
//	'C' txnId                           commit of the current transaction
//
// The key and value fields are hashes chosen by the Cobra client; writeId
// is unique across the whole history. Special ids: 0xbebeebee is the
// initial transaction and its write (a read of a key that existed before
// the workload started), 0xdeadbeef a read that found nothing (null), and
// the write ids 0x23332333 and 0x66666666 mark the reads Cobra's garbage
// collection issues.
//
// # Modelling
//
// Sessions are labelled with the integer n of their file name and ordered
// by it; a session's transactions keep their order in its file.
// Transaction ids are the txnId of the 'S' record, as integers (64-bit
// values at or above 2^63 wrap to negative integers, as in Cobra's own Java
// and C++ readers); a transaction id may appear only once in a directory.
// A transaction whose 'S' is followed by its 'C' committed; one that is
// followed by another 'S', or by the end of the file, did not commit and is
// aborted. Keys are the key hashes, as integers (wrapped the same way).
//
// Cobra's reads name their writer exactly, whereas isoscope's model is
// value-based, so the value of an operation is the identity of the write:
//
//   - A 'W' record writes the integer writeId (the client's value hash is
//     dropped). Write ids are unique, so values are unique per key; the
//     operations of the six corpus histories have unique values per key.
//   - Unless the write id is shared: when more than one write uses the
//     same writeId (VeriStrong's logs give every write the id 0xabddefee,
//     and its reads name writer and write 0xabddefee), the id does not
//     identify the write, and the value hash is what the read returned.
//     Such a write writes, and an 'R' record naming a shared id reads,
//     the string "W<writeId>:V<value hash>" (decimal): a read matches the
//     writes of its key with the same id and hash, as VeriStrong's own
//     reader matches them, and names no writer transaction to check.
//   - An 'R' record reads the integer writeId it names. When that write is
//     not in the logs at all, no transaction wrote the value: a thin-air
//     read, which is what reading from a transaction missing from the logs
//     is (the cock-blog corpus history has 8 such reads).
//   - An 'R' record whose writerTxnId is not the transaction that wrote
//     writeId reads the string "T<writerTxnId>:W<writeId>", a value no
//     transaction wrote: the version it names does not exist.
//   - A read of the initial write (writeId 0xbebeebee; the real logs name
//     writer 0xbebeebee too, with value hash 0) reads the integer
//     0xbebeebee (3200183278), and the initial state
//     (h.Header.Initial.Values) holds that value for every key read that
//     way, so those reads resolve to the initial transaction. Other keys
//     are absent initially.
//   - A read of nothing (writeId 0xdeadbeef) reads null. The keys it reads
//     are absent initially unless another read observed their initial
//     write; then the null read is an anomaly.
//   - Garbage-collection reads (writeId 0x23332333 or 0x66666666) are not
//     reads of the workload: they are dropped.
//
// The header claims nothing about unique values (the checker verifies
// uniqueness itself), and records the directory as its source.
//
// Bad input (an unknown tag, a truncated record, an operation outside a
// transaction, a 'C' that does not match its 'S', a transaction id used
// twice, a write with a special write id) is a *format.Error naming the
// file; its message gives the byte offset of the record.
package cobra
