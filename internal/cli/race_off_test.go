//go:build !race

package cli

// raceDetector says whether the tests run under the race detector, which
// makes code several times slower: wall-clock bounds meant for the plain
// build do not apply.
const raceDetector = false
