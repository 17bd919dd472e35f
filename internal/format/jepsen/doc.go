// Package jepsen reads and writes Jepsen histories of transactions, the
// input of Elle: list-append (appends of unique elements to lists, reads of
// whole lists) and rw-register (writes and reads of registers).
//
// # Format
//
// A history is a sequence of operation maps, in EDN one after another
// (usually one a line) or as one vector of maps, or in elle-cli's JSON form
// (the same maps with string keys and values, as a JSON array or one
// object a line):
//
//	{:index 2, :type :invoke, :process 0, :time 3291485317, :f :txn, :value [[:append 255 8] [:r 253 nil]]}
//	{:index 3, :type :ok, :process 0, :time 3767733708, :f :txn, :value [[:append 255 8] [:r 253 [1 3 4]]]}
//
// :type is :invoke, :ok, :fail or :info; :value is the transaction, a
// vector of micro-operations [:append k e], [:r k v] and [:w k v]. :f is
// any keyword, or absent: as Elle does, the reader ignores it, so that
// :f :read and :f :write with micro-operations are read-only and
// write-only transactions (a :value that is no transaction, :f :add 1
// say, is refused on its line). :index and :time are optional. Other
// fields (:error, :node) are ignored.
//
// Keys, values and list elements are any EDN values but maps and sets,
// compared as EDN compares them (Values): 6 and "6" differ, [:anti 1]
// is a key; a keyword :x is the string "x", and a history that uses both
// :x and "x" in one role is refused (as is a string that spells a
// vector's text).
//
// An operation whose :process is a name, not a number (the nemesis's:
// :process :nemesis, :f :start, :kill, …, anywhere in the history, first
// too), is a fault of the history (Faults): each invocation and the next
// completion of the same :process and :f make one fault, from the one to
// the other, on the history's clock; one never completed lasts to the
// end.
//
// A jepsen.independent history (many independent sets of keys tested at
// once) has values [key txn]: every operation's, or none. Its
// transactions are grouped by key into the history's parts
// (history.History.Parts), each checked as a history of its own; the
// history's key of a key k of the transaction on independent key K is
// the string "[K k]" (their EDN texts).
//
// # Modelling
//
// Each :invoke pairs with the next completion of the same :process, which
// is the session (labelled by the process number). An operation map without
// :process belongs to one anonymous process, labelled 0; a history mixes
// the two only by mistake, and that is an error. A completion that no
// invocation opened (Elle's tests write histories of completions alone) is
// a transaction of its own with no instants.
//
//   - :ok is committed, and its micro-operations are the completion's,
//     with the values read;
//   - :fail is aborted and :info of unknown outcome; their reads, whose
//     results the client never saw, are dropped, and their writes and
//     appends kept (an :info transaction may have taken effect);
//   - an invocation that never completes is of unknown outcome too;
//   - a transaction left with no operations (an :info read-only
//     transaction, say) had no effect that anyone saw and is dropped,
//     unless it is aborted; the history counts them
//     (history.History.Skipped, kind SkippedNoEffect).
//
// A history with client operations but no transaction left is bad input:
// nothing would be checked.
//
// A history with any append or any read of a list is a list-append history:
// its reads are list reads, and [:r k nil] reads the empty list. Otherwise
// its reads are register reads, and nil reads an absent key. Nothing is
// initially present.
//
// Instants: when the operations carry :time, a transaction begins at its
// invocation's time and ends at its completion's; without :time anywhere,
// the position of each operation in the history stands in for the time
// (Jepsen records a history in real-time order), so that real-time order is
// kept either way. A history in which some operations carry :time and
// others do not is an error. The id of a transaction is the :index of its
// invocation (of its completion when it has none) when every operation has
// a distinct :index, and its 1-based position in the history otherwise.
//
// Bad input (an unbalanced bracket, an operation that is not a map, a
// :type that is none of the four, a micro-operation that is not [f k v], a
// second invocation on a busy process, a completion whose :f differs from
// its invocation's) is a *format.Error naming the line and, where there is
// one, the field.
//
// # Writing
//
// Write writes a history as Jepsen EDN, one operation a line, that Elle
// reads, and never one whose verdict at any level differs from the
// history's when Read reads it back:
//
//   - with instants on every transaction, an invocation and a completion
//     for each, in time order, with :time (at one instant invocations
//     first, so that transactions that only touch stay concurrent);
//   - with no instants (or some committed transaction without them: then
//     strict serializability, the one level that uses them, cannot be
//     checked on the history either), completions alone, in file order,
//     without :time: Read gives them no instants, and Elle, which orders
//     an operation after those that completed before its invocation, sees
//     no real-time order. Write does not invent one;
//   - a non-empty initial state as a first completion, marked
//     :isoscope/initial true, that writes each key's initial value (and
//     with :time, completes before anything else begins): Read takes it
//     back as the initial state. Elle reads an ordinary transaction,
//     first in real time when there is :time; without, Elle may order its
//     writes after others' and miss an anomaly that needs the initial
//     state first;
//   - a transaction of unknown outcome as :info, its reads marked
//     :isoscope/reads true when it has any: Read keeps them (they count
//     when the transaction is found to have taken effect), Elle ignores
//     them as it ignores every :info operation's reads;
//   - an aborted transaction as :fail (its reads, which no level judges,
//     are dropped).
//
// It refuses, naming the transaction, operation or key, what the format
// cannot record: a history of independent parts; deletes, scans and iterators; a history that mixes
// register and list operations; a write of nil; a committed transaction
// without operations (readers drop it); an initial state in a list-append
// history; instants on the committed transactions but not on some aborted
// or unknown one; sessions whose transactions overlap in time (a process
// runs one operation at a time); the database's timestamps and a
// white-box version order (checkers decide by them). Locking-read
// attributes, which no checker reads, are dropped.
package jepsen
