// Package format holds what every history format shares: Detect, which
// tells a format from the first bytes of its input, and Error, the error
// every format reader returns for bad input, naming the file, the line and
// the field.
//
// Each format lives in a sub-package with a Read function (and a Write
// function where useful); native is isoscope's own JSON Lines format,
// described in shared/docs/history-format.md.
package format
