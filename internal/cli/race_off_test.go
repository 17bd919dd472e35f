//go:build !race

package cli

// raceSlowdown scales the tests' wall-clock bounds: the race detector
// makes code several times slower.
const raceSlowdown = 1
