// Package runner runs a workload plan against a database with many
// concurrent sessions and records what the clients saw: envelope tracing
// (Boomslang's term), each transaction with its operations and their
// results in program order, its status — committed, aborted (the database
// said so), or unknown (the connection broke or the run was interrupted
// while its COMMIT was in flight) — and begin and end instants taken just
// before the first request and just after the last response from one
// monotonic clock (a wall-clock base plus the monotonic time elapsed, in
// nanoseconds). Where the database tells the timestamps it gave a
// transaction (db.Timestamper: Badger, whose oracle isoscope runs), a
// committed transaction also carries its start_ts and commit_ts.
//
// Every session holds one connection and runs its plan's transactions in
// order. A transaction the database aborts is retried, up to a limit, as
// a new transaction with new values: MTC's unique-values rule holds
// across retries. Every request waits a bounded time for its answer
// (Config.StmtTimeout, half as long again): a database that stops
// answering costs the transaction in flight — aborted, or unknown if its
// COMMIT was sent, as is a COMMIT that failed without the server's answer
// (db.Answerer) — and the connection. A session whose connection breaks
// reconnects, at once and then with exponential back-off and jitter, and
// goes on under a new session label (its last transaction may still
// commit on the old connection after the new one's first began); the
// summary lists the outages. One that cannot get an answer again within
// Config.ReconnectFor stops the run (a *LostError), which ends as an
// interrupted one does, with a complete history.
//
// One recorder goroutine receives the sessions' transactions in the order
// they finished, numbers them 1, 2, … in that order, and streams them to
// the output in the isoscope history format (internal/format/native) as
// they come, flushing whenever it catches up, so that an interrupted run
// leaves a complete, valid history of everything that happened. Why
// transactions aborted is not part of the history format; the summary
// counts the reasons, and the result's outcomes keep, for every
// transaction (with tracing off too), its instants, its status and the
// class of the error that ended it (ClassifyAbort: serialization failure,
// deadlock, lock timeout, connection lost, …): plain data of
// internal/txnend, which the command line hands to the run plots. The
// summary also counts the reads of values that none of the run's
// transactions wrote (Foreign): the table starts empty, so such a value
// came from outside the run. The runner records; it neither checks nor
// renders.
package runner
