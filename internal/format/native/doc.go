// Package native reads and writes isoscope's own history format: JSON
// Lines, one transaction per line, after an optional header line, plain or
// gzip-compressed (docs/history-format.md is the contract).
//
// Read loads a whole history and checks everything the format calls bad
// input, reporting it as a *format.Error that names the line and the field;
// Reader hands out transactions one at a time for streaming consumers;
// Write writes a history back, and Read(Write(h)) gives h again, but for
// one thing: in a history with appends or list reads, Read takes a read
// of null of a key that nothing uses as a register for a read of the empty
// list (lists.go). Strings must be Unicode text: invalid UTF-8 and lone
// UTF-16 surrogate escapes ("\ud800") are bad input, not U+FFFD, which
// would make distinct keys one.
//
// The reader is built for speed: a small hand-made JSON scanner that
// reads each line in place, interns keys and session labels, and allocates
// each transaction's operations once, so that it reads millions of
// transactions per second.
package native
