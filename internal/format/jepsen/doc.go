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
// vector of micro-operations [:append k e], [:r k v] and [:w k v]. Keys
// and values are integers, strings or keywords (a keyword :x is the string
// "x"). :f, when present, is :txn; :index and :time are optional. Other
// fields (:error, :node) are ignored, and so are the nemesis's operations
// (a :process that is not an integer).
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
//     unless it is aborted.
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
// reads: an invocation and a completion for each transaction, the session
// as the :process. With instants on every transaction the events go in
// time order and carry :time; without, each transaction's invocation is
// followed at once by its completion, in file order, which Elle takes for
// the real-time order, so such a history should be checked at a level
// without real time. It refuses what Jepsen's workloads cannot express:
// deletes, scans and iterators, and sessions whose transactions overlap in
// time.
package jepsen
