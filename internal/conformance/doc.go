// Package conformance holds the test that reproduces, for the histories in
// shared/corpora, the verdicts their sources state (LABELS.tsv). It has no
// code of its own.
package conformance
