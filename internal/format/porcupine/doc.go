// Package porcupine reads the key-value logs of porcupine's test data
// (test_data/kv/*.txt): EDN lines, one event each,
//
//	{:process 0, :type :invoke, :f :append, :key "4", :value "x 0 1 y"}
//	{:process 0, :type :ok, :f :append, :key "4", :value "x 0 1 y"}
//	{:process 1, :type :invoke, :f :get, :key "4", :value nil}
//	{:process 1, :type :ok, :f :get, :key "4", :value "x 0 1 y"}
//
// of a store of string keys whose values are strings: :get returns the
// value ("" for a key never written), :put replaces it and :append
// concatenates its argument to it. :type is :invoke, :ok, :fail or :info.
//
// # Modelling
//
// Each event pairs with the next completion of the same process, the
// session; every key starts as "" (h.Header.Initial.Values). There is no
// clock: the line number is the instant, so one operation precedes another
// in real time exactly when its completion line comes before the other's
// invocation line (the log's order), and linearizability is strict
// serializability of the history. The history's header says so
// (history.Header.Implies: strict-serializable), and a check without an
// explicit level uses that level.
//
//   - a :get that completed :ok is [["r",k,v]]; one that failed or timed
//     out had no effect and is dropped;
//   - a :put is the blind write [["w",k,v]];
//   - an :append of e is a read-modify-write [["r",k,s],["w",k,s+e]] when
//     the state s it appended to is known, and [["w",k,e]] otherwise.
//
// The state an append extended is what some :get saw before its element.
// The workloads write elements that are distinct within a run ("x 0 1 y":
// client 0's second), so a value read splits into the elements written, in
// the order they were applied (a put's first), and the prefix before each
// appended element is a state that an append of that element extended.
// Each such state goes to one append of the element (runs repeat elements,
// so there may be several): one that began before a :get saw the state and
// ended after the first invocation that wrote the element before it, the
// earliest to end first, taking the states in the order reads first saw
// them. Whatever the choice, a linearization of the history read is one of
// the log's, since each read-modify-write does what the append did to the
// state it read; and in a linearizable log the choice is the append that
// made the state, unless two appends of one element overlap in time.
//
// An append that no state goes to is a blind write of a value no operation
// reads (its element, with "…" before it if some operation reads that):
// nothing read the state it left, and nothing but blind writes can follow
// it before a put in any linearization, as in the store's.
//
// A :put or :append that completed :ok is committed, :fail aborted, and
// :info or never completed of unknown outcome.
//
// Bad input (a line that is not one event map, a missing or non-string
// :key, an unknown :f or :type, a completion its process did not invoke, a
// second invocation on a busy process) is a *format.Error naming the line
// and, where there is one, the field.
package porcupine
