// Package history is isoscope's model of what clients saw: transactions with
// their operations and results, sessions, real-time instants and database
// timestamps, as the history format (docs/history-format.md in shared/)
// defines them. It also holds the one-line notation that tests use, and the
// Index that resolves reads to writes for every checker.
//
// The package is pure: it reads no files (format readers live in
// internal/format) and decides no isolation level.
package history
