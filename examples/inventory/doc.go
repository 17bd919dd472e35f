// Package inventory is an application audited end to end with isoscope:
// a shop whose clerks reserve items in stock, on PostgreSQL through
// database/sql, and the recipe for auditing your own application's data
// layer the same way.
//
// A reservation is one transaction: read the item's stock, and if enough
// is available, write the stock less the quantity and add a reservation
// row. Written this way — read, compute in Go, write back — it is correct
// at SERIALIZABLE, where PostgreSQL aborts one of two conflicting
// reservations (SQLSTATE 40001) and the shop tries it again, and wrong at
// READ COMMITTED, where two clerks can read the same stock and both write
// it back less their own quantity: one reservation's decrement is lost,
// and the shop sells more than it had.
//
// # Recipe: audit your own application
//
//  1. Make a Recorder, with the rows your test starts from as its initial
//     state (isoscope.RecorderOptions.Initial); give it a Stream too
//     (a file) to keep the history for `isoscope check`.
//  2. In your repository layer, begin an audit transaction before the
//     database transaction (Recorder.Begin, in a session per worker or
//     connection), and record what each query returned or wrote: a row as
//     a key ("stock/ITEM") and a value that names its version (Tx.Read,
//     Tx.Write, Tx.Scan for a range query). Values must tell versions
//     apart, so a row that can be written twice with the same content
//     needs a column that changes at each write (here a version drawn
//     from a sequence).
//  3. End it as the database ended it: Tx.Commit when COMMIT succeeded,
//     Tx.Abort when the database answered with an error (it rolled back),
//     Tx.Unknown when the connection broke before the answer. A retried
//     transaction is a new audit transaction.
//  4. Run your concurrent load, then check the Recorder's History at the
//     level your code assumes, in a test with isoscopetest.RequireLevel:
//     a violation fails the test with the anomaly explained and an HTML
//     report.
//
// The test of this package runs the shop under concurrent load at READ
// COMMITTED and finds the lost update (reservations lost, stock
// oversold), which isoscope names as a violation of cursor stability
// (read committed without lost updates) while read committed holds; and
// runs it at SERIALIZABLE with retries, where the history is serializable
// and nothing is oversold. It uses the
// PostgreSQL at ISOSCOPE_TEST_POSTGRES (default
// postgres://postgres@127.0.0.1:5432/test), with tables of its own.
package inventory
