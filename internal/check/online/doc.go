// Package online checks a stream of black-box transactions online, in
// batches as they arrive, at serializability (SER, with session order),
// snapshot isolation (SI) and read committed (RC): list-append histories,
// and read/write registers with unique values. Add takes a batch and
// returns the findings that became certain with it; Drain ends the
// stream and gives the final verdict, the offline checker's (package
// check) on the whole history. Arrival order must keep each session's
// order; sessions may interleave and lag behind each other arbitrarily.
//
// # Rounds
//
// The checker holds a window of transactions. When the window reaches
// four times what the last round left (4,096 at least), a round runs; its
// cost follows the window (and, under a memory bound, the keys' state),
// not the length of the stream:
//
//  1. The read-closed part of the window — the held transactions every
//     read of which names a writer that has arrived and is itself in the
//     part — is checked by the offline checker. A violation of a
//     read-closed sub-history is one of the whole history (a serial order
//     of the whole, restricted to the part, is one of the part: a read
//     still follows its writer with no writer of its key between), so its
//     findings are certain. One whose cycle runs through a version order
//     no read has shown yet (the solver's choice between unseen appends)
//     is reported all the same, as Chosen: the violation is certain,
//     the cycle one that shows it. A finding's transactions are then
//     forgotten like any others: held, they would hold every later
//     transaction that reads or follows them, and at a store that makes
//     write skews every round the window would grow without end.
//  2. List-append only: the transactions no later arrival can reach are
//     forgotten (below), their elements appended to each key's settled
//     prefix, and every held or later read is cut by it.
//
// # What is forgotten (list-append)
//
// A committed transaction T of the read-closed part is a candidate when
// every key's order places its appends (a read has shown them) and, at
// SER and SI, when its session's next fence has arrived, a read has
// shown that fence's position in the fence list, and every session's
// fences have read past it (the fence-list read of each session's latest
// fence is longer than that position). Cobra's rule is "every session
// has passed the fence twice"; here the two passes are the fence's
// position being shown and every session reading past it. The
// forgotten set F is the largest set of candidates closed under the edges
// into it from held transactions: session order (SER, SI), the writer
// of every element read, the appender of the element before each append,
// and at SER and SI the readers whose read ends just before an append
// (anti-dependencies). Then no cycle through F can be completed later:
//
//   - a later transaction X reads T's elements or follows them (edges out
//     of F) but cannot be an edge into F: the elements before T's are
//     all arrived and forgotten, T's reads are complete, and an edge
//     X →rw T (X read a state before T's append) is a read that ends
//     inside the settled prefix. At SER and SI that stale read closes a
//     cycle X →rw T →so T's next fence ⇝ X's latest fence →so X whenever
//     X's session's fences read past T's next fence — which the
//     candidate rule makes true of every session known at the round.
//     Such a read is reported when that path is certain (at arrival, or
//     at a later round through held transactions); a read of a session
//     that appears later and never reads past the fence stays pending,
//     and the verdict is then Undecided rather than wrong. At RC
//     anti-dependencies and session order are no edges: a stale read is
//     no finding, unless it ends between two appends of one forgotten
//     transaction (G1b, reported).
//   - every cycle among F's transactions was in the read-closed part just
//     checked.
//
// A read that departs from the settled prefix (neither a prefix of it
// nor an extension) is an incompatible order; duplicates, reads that
// miss their own appends and intermediate reads are judged against the
// prefix too. An append of an element already settled is refused as
// input.
//
// Only a committed fence counts as one: an aborted fence's read shows
// nothing and no read shows its element, and one of unknown outcome may
// never have taken effect. Session order runs between the transactions
// that may take effect, past the aborted ones.
//
// An aborted transaction is in no cycle; what a later arrival can still
// make of it is an aborted read (G1a). It is forgotten once no held read
// shows its elements, which its keys keep, with its id: a later read
// that shows one is reported as an aborted read on arrival.
//
// A session that first arrives after an element was settled was not
// asked to read past it: a read of it that misses the element, with no
// certain path, leaves the verdict Undecided, and the Result says so.
//
// At SER and SI, an append no read has shown (the last appends to a key
// no one reads again) may be forgotten too, as its key's ghost, when
// every held transaction that appended unseen to the key and stays
// follows it: its session's fences read past the forgotten appender's
// next fence (as those of a transaction arriving later do), or a path
// of session order, reads and appends after appends leads to it from
// the forgotten appender. A store that keeps the level then orders its
// append after the ghost; the checker records that it must, and the
// paths between the appenders forgotten together. (A rule that a key's
// unseen appends go all together or not at all would let a cold key,
// appended now and then and read by no one, hold its first appender and
// everything after it.) A later read must show
// the key's ghosts right after its settled prefix, in an order the
// recorded paths allow (else a cycle: reported); a read without one is a
// read of a state that misses an append which, by the fences or a
// recorded path, precedes it (reported once the path is certain); a ghost shown after elements
// appended since is counted and makes the verdict Undecided. At RC an
// unseen append is held until a read shows it.
//
// # Registers
//
// Read/write registers are checked online (rounds, read-closed findings)
// but not garbage-collected: a register's version order is a choice of
// the solver, and which forgotten write is the last one a later read may
// see depends on it. A history with registers is held in full, and Stats
// and the Result say so when a memory bound is set.
//
// # Memory
//
// Config.MemoryBytes bounds the checker's estimate of what it holds (the
// held transactions, the keys' settled state, what remembers the dropped
// keys), compared after each round. Past half of the bound (less what
// remembers the dropped keys), the settled state of the keys no held
// transaction touches and none of the last transactions to arrive (twice
// the held ones) touched is dropped, least recently touched first, down
// to a quarter: a later
// transaction that touches a dropped key is not judged on it, and the
// verdict is then Undecided (Stats.DroppedKeys counts them; integer
// keys are remembered exactly, in a compressed bitmap; other keys in a
// filter that takes an eighth of the bound, 1–16 MiB, and a string key
// it mistakes for a dropped one is treated as one). SetBound lowers the
// bound below MemoryBytes, or raises it back, between batches: a service
// holds its process's live heap so (the estimate counts what the checker
// keeps, not what Go keeps beside it). Held transactions are never
// dropped: when they alone pass the bound, Stats.Warning and the
// Result's Caveat say what keeps them held (no fences, a session that
// runs none, registers, unseen appends at RC).
package online
