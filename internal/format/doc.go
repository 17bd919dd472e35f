// Package format holds what every history format shares: Error, the error
// every format reader returns for bad input, naming the file, the line and
// the field, and the bounds on what a reader reads.
//
// Each format lives in a sub-package with a Read function, a Sniff that
// tells whether the first bytes look like it (and a Write function where
// useful); native is isoscope's own JSON Lines format, described in
// docs/history-format.md. Package registry lists them: it alone
// detects a history's format, and opens, reads and creates history files.
//
// Reading is bounded (Limits): a line of a line-oriented format may be up
// to DefaultMaxLine (64 MiB) long, a format read as one document
// (timekiller, dbcop) up to DefaultMaxDocument (256 MiB), and a gzip
// stream may expand to DefaultMaxGzipRatio (200) times its compressed
// size once past GzipFloor (64 MiB). An input past a limit is bad input:
// an *Error naming the line where it has one, under which errors.As finds
// the *LimitError. ContextReader stops a read at a deadline. Torn is the
// warning a reader gives when it reads a history whose last line the
// recorder did not finish.
package format
